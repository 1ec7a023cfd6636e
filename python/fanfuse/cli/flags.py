"""One flag name per concept across the commands: the table of the flags that more than one command
takes, what each means, and the old spellings that were renamed.

`tests/test_cli_flags.py` reads the parsers and this table: a flag taken by several commands must be
listed here, and must have the same destination, value type and choices in each; a destination has
one flag name in every command; a renamed spelling exits 2 naming its new one. docs/cli.md lists the
same table for users.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import Any

from fanfuse._renamed import REMOVED_SEARCH_OPTIONS
from fanfuse.cli._common import number_option
from fanfuse.errors import OutOfRange
from fanfuse.limits import LIMITS, closest_names

# The flags of more than one command, and the one thing each means everywhere.
SHARED: dict[str, str] = {
    "--dense": "use the dense (vector) retriever next to BM25",
    "--no-dense": "BM25 only",
    "--engine": "where run files are fused or evaluated: this process or a Dask cluster",
    "--expander": "where query variants come from",
    "--help": "show the command's help",
    "-h": "show the command's help",
    "--index": "the index directory of `fanfuse index`",
    "--instructions": "domain guidance added to the prompt of --expander llm",
    "--json": "print JSON instead of text",
    "--llm-base-url": "API root of --expander llm",
    "--llm-model": "the chat model of --expander llm",
    "--llm-timeout": "the deadline of one call of --expander llm",
    "--max-tokens": "the longest answer of --expander llm",
    "--method": "the fusion method",
    "--norm": "score normalisation of the score methods",
    "--output": "the file written (atomically)",
    "-o": "the file written (atomically)",
    "--partitions": "Dask partitions of --engine dask",
    "--qrels": "the relevance judgments",
    "--rank-from": "where the ranks of an input run come from",
    "--rrf-k": "RRF's constant k",
    "--scheduler": "the Dask scheduler of --engine dask",
    "--seed": "the seed of what is drawn at random",
    "--strategy": "what --expander llm asks for",
    "--temperature": "sampling temperature of --expander llm",
    "--top-k": "hits kept per query (0 keeps all)",
    "--max-variants": "the most query variants per search, the question included",
}

# The flags of `--expander llm` (search, serve), by the dest each fills.
LLM_FLAGS = {
    "llm_base_url": "--llm-base-url",
    "llm_model": "--llm-model",
    "strategy": "--strategy",
    "instructions": "--instructions",
    "temperature": "--temperature",
    "max_tokens": "--max-tokens",
    "llm_timeout": "--llm-timeout",
}

# Old spellings, per command: each exits 2 naming the new flag. A renamed flag keeps no second
# meaning: a script still passing it learns the new name at once, where an alias that kept working
# would keep the old, ambiguous word alive (`--format` was a run format in fuse and a report format
# in eval; `--model` a trained model in fuse and a chat model in search; `variants` is a list of
# query variants in Python, so their most per search is `--max-variants`).
RENAMED: dict[str, dict[str, str]] = {
    "fuse": {"--k": "--rrf-k", "--format": "--run-format"},
    "search": {"--model": "--llm-model", "--variants": "--max-variants"},
    "serve": {"--model": "--llm-model"},
    "demo": {"--variants": "--max-variants"},
}


# Flags that are gone, per command: each exits 2 saying why (none of them ever changed a search).
REMOVED: dict[str, dict[str, str]] = {
    "search": {f"--{name}": why for name, why in REMOVED_SEARCH_OPTIONS.items()},
}


class Renamed(argparse.Action):
    """A hidden old spelling: using it is a usage error naming the new flag, or saying why the flag is
    gone (exit 2)."""

    def __init__(
        self,
        option_strings: Sequence[str],
        dest: str,
        new: str = "",
        why: str = "",
        said: str = "",
        **options: Any,
    ) -> None:
        super().__init__(option_strings, dest=argparse.SUPPRESS, nargs="?", help=argparse.SUPPRESS)
        self.new = new
        self.why = why
        self.said = said

    def __call__(self, parser: argparse.ArgumentParser, *_: Any) -> None:
        flag = self.option_strings[0]
        if self.said:
            parser.error(f"{flag} {self.said}")
        parser.error(
            f"{flag} is renamed to {self.new}; use {self.new}"
            if self.new
            else f"{flag} is removed: {self.why}"
        )


def add_renamed(parser: argparse.ArgumentParser, command: str) -> None:
    """Adds the old spellings of `command`'s renamed and removed flags."""
    for old, new in RENAMED.get(command, {}).items():
        parser.add_argument(old, action=Renamed, new=new)
    for gone, why in REMOVED.get(command, {}).items():
        parser.add_argument(gone, action=Renamed, why=why)


def unrecognized(parser: argparse.ArgumentParser, words: Sequence[str]) -> str:
    """The usage error of `parser` for the words it does not take: the flags of its own that are
    closest to each unknown flag, and where its options are listed (old spellings are not offered:
    they are refused too)."""
    flags = [flag for a in parser._actions if not isinstance(a, Renamed) for flag in a.option_strings]
    hints = []
    for word in words:
        name = word.split("=", 1)[0]
        close = closest_names(name, flags) if name.startswith("--") else []
        if close:
            hints.append(f"{name}: did you mean {' or '.join(close)}?")
    return "; ".join([f"unrecognized arguments: {' '.join(words)}", *hints]) + (
        f" (`{parser.prog} --help` lists its options)"
    )


# The hits a search may return: `--top-k 0` of a search command (keep all, as in `fanfuse fuse`) asks
# for that many.
MAX_HITS = int(LIMITS["top_k"].high or 0)


def add_search_top_k(parser: argparse.ArgumentParser, what: str, default: int) -> None:
    """`--top-k` of the search commands: the same flag as `fanfuse fuse`'s (0 keeps all)."""
    number_option(
        parser,
        "--top-k",
        "fused_top_k",
        f"{what} (default {default}; at most {MAX_HITS})",
        note=f" (0 keeps all, up to {MAX_HITS})",
        default=default,
    )


def search_top_k(given: int) -> int:
    """The hits a search returns for `--top-k given`."""
    top_k = given or MAX_HITS
    if top_k > MAX_HITS:
        raise OutOfRange(f"--top-k must be an int from 0 to {MAX_HITS}, 0 keeping all (got {top_k})")
    return top_k
