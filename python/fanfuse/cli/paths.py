"""The files and directories a command reads and writes, declared with its options: `add_input`,
`add_output` and `add_output_directory` mark the argparse action, and `check_command_paths` refuses,
before the command runs, an input that cannot be read as what it is for (missing, a directory given
for a file, a file for a directory: `InputError` naming the option, the path and what it takes), an
output that is one of its inputs or another of its outputs (however spelled: a symbolic or hard link,
`./x`), or an output directory that holds an input (`fanfuse.output_guard.check_paths`, which raises
`InvalidOutput`). A command that prints its result declares standard output (`add_stdout`): it is
then one of the command's outputs, so that `>> INPUT` is refused as `-o INPUT` is. A new option
declared this way cannot miss the checks, and the tests enumerate the marked options of every parser.
`HeldOutputs` publishes a command's other outputs only with its main one."""

from __future__ import annotations

import argparse
from collections.abc import Iterable
from contextlib import ExitStack
from types import TracebackType
from typing import Any, Literal, get_args

from fanfuse._core import RANK_SOURCES
from fanfuse.errors import InputError, InvalidOutput
from fanfuse.limits import check_choice
from fanfuse.output_guard import OutputFile, check_paths
from fanfuse.paths import unreadable

INPUT, OUTPUT, OUTPUT_DIRECTORY = "input", "output", "output directory"
# An input `-`, which only --history reads as standard input: a file may name it.
DASH_INPUT = (
    "this option does not read '-' as standard input ('-' names standard output, as in -o -); to read "
    "standard input, give /dev/stdin"
)
ROLES = (INPUT, OUTPUT, OUTPUT_DIRECTORY)
# What an input option reads, for the tests that build one of each: a run, qrels, a JSONL corpus,
# a saved model, an index directory, a conversation (`--history`).
Kind = Literal["run", "qrels", "corpus", "model", "index", "history"]
KINDS: tuple[Kind, ...] = get_args(Kind)
# What an input of each kind takes, as the refusal of an unreadable one says it.
TAKES: dict[str, str] = {
    "run": "a run file (TREC 6-column, MT-RAG JSONL or Parquet)",
    "qrels": "a qrels file (TREC, BEIR TSV or Parquet)",
    "corpus": "a JSONL file of documents, plain or .gz",
    "model": "a model file saved by `fanfuse fuse --save-model`",
    "index": "an index directory made by `fanfuse index`",
    "history": "a JSONL file of turns, or - for standard input",
}
# ranx writes Parquet runs under both names.
PARQUET_SUFFIXES = (".parquet", ".parq")
# What a file's name says it holds, by its suffix (in any case). An output option writes what its
# name says, or refuses the name before any work (`check_named`), as `fuse -o run.parquet` writes
# Parquet: a file named `run.trec.gz` that holds plain text fools the next reader.
COMPRESSED = {".gz": "gzip", ".bz2": "bzip2", ".xz": "xz", ".zst": "zstd", ".zip": "zip"}
NAMED_FORMATS: dict[str, str] = {
    **COMPRESSED,
    **dict.fromkeys(PARQUET_SUFFIXES, "Parquet"),
    ".png": "PNG",
    ".pdf": "PDF",
    ".svg": "SVG",
    ".jpg": "JPEG",
    ".jpeg": "JPEG",
    ".json": "JSON",
    ".md": "Markdown",
    ".tex": "LaTeX",
    ".csv": "CSV",
}
_ROLE = "fanfuse_path_role"
_KIND = "fanfuse_path_kind"
_STDOUT = "fanfuse_stdout_unless"
# How messages name standard output among a command's outputs.
STDOUT = "standard output"


def named_format(path: str) -> str | None:
    """The format a file's name says it holds (NAMED_FORMATS), or None."""
    name = path.lower()
    return next((said for suffix, said in NAMED_FORMATS.items() if name.endswith(suffix)), None)


def names_parquet(output: str) -> bool:
    """Whether an output's name asks for Parquet: it ends in one of PARQUET_SUFFIXES, in any case."""
    return named_format(output) == "Parquet"


def check_named(option: str, path: str, accepted: Iterable[str], writes: str) -> None:
    """Refuses the output `path` of `option` whose name says a format (NAMED_FORMATS) other than those
    `accepted` there; `writes` says what the option writes, and how a name chooses it."""
    said = named_format(path)
    if said is None or said in accepted:
        return
    mend = "write it under another name"
    if said in COMPRESSED.values():
        mend = "fanfuse writes no compressed file: write it under a name without the suffix and compress that"
    raise InvalidOutput(f"{option} {path!r}: the name says {said}, but {option} writes {writes}; {mend}")


def _add(container: Any, flags: tuple[str, ...], role: str, kind: str, **kwargs: Any) -> argparse.Action:
    action: argparse.Action = container.add_argument(*flags, **kwargs)
    setattr(action, _ROLE, role)
    setattr(action, _KIND, kind)
    return action


def add_input(container: Any, *flags: str, kind: Kind, **kwargs: Any) -> argparse.Action:
    """An option (or positional) naming files the command reads; `kind` is one of KINDS."""
    return _add(container, flags, INPUT, check_choice("kind", kind, KINDS), **kwargs)


def add_output(container: Any, *flags: str, **kwargs: Any) -> argparse.Action:
    """An option naming a file the command writes (through the core's output guard)."""
    return _add(container, flags, OUTPUT, "file", **kwargs)


def add_output_directory(container: Any, *flags: str, **kwargs: Any) -> argparse.Action:
    """An option naming a directory the command replaces or fills."""
    return _add(container, flags, OUTPUT_DIRECTORY, "directory", **kwargs)


def add_stdout(parser: argparse.ArgumentParser, *, unless: str | None = None) -> None:
    """The command prints its result to standard output (unless the option of dest `unless` is given,
    as `eval -o FILE` writes the report there instead)."""
    setattr(parser, _STDOUT, unless or "")


def writes_stdout(parser: argparse.ArgumentParser, args: argparse.Namespace) -> bool:
    """Whether the parsed command prints its result to standard output (see `add_stdout`)."""
    unless = getattr(parser, _STDOUT, None)
    return unless is not None and (not unless or getattr(args, unless, None) is None)


def add_runs(parser: argparse.ArgumentParser, help: str) -> argparse.Action:
    """The run files a run-file command reads, positional, and how their ranks are read
    (``--rank-from``): declared together, so that every command reading runs takes both."""
    parser.add_argument(
        "--rank-from",
        default="score",
        choices=RANK_SOURCES,
        help="rank of an input hit: score (default; descending, ties by docid descending, as trec_eval "
        "reads a run), the rank column, or the file order",
    )
    return add_input(parser, "runs", kind="run", nargs="+", metavar="RUN", help=help)


def add_qrels(parser: argparse.ArgumentParser) -> argparse.Action:
    """The qrels a run-file command evaluates with."""
    return add_input(
        parser,
        "--qrels",
        kind="qrels",
        required=True,
        help="TREC qrels, BEIR TSV qrels or Parquet (qid, docid, relevance)",
    )


def add_index(parser: argparse.ArgumentParser) -> argparse.Action:
    """The index directory a retrieval command searches."""
    return add_input(
        parser,
        "--index",
        kind="index",
        required=True,
        metavar="DIR",
        help="index directory (`fanfuse index`)",
    )


def path_actions(parser: argparse.ArgumentParser) -> list[tuple[argparse.Action, str, str]]:
    """The marked actions of a command's parser: (action, role, kind)."""
    return [
        (action, getattr(action, _ROLE), getattr(action, _KIND))
        for action in parser._actions
        if hasattr(action, _ROLE)
    ]


def option_name(action: argparse.Action) -> str:
    """How messages name an option: its long flag, or a positional's metavar."""
    if action.option_strings:
        return max(action.option_strings, key=len)
    return str(action.metavar or action.dest.upper())


def check_command_paths(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """Raises InputError for an input that cannot be read, InvalidOutput when the parsed paths of a
    command overlap (see the module documentation)."""
    named: dict[str, list[tuple[str, str]]] = {role: [] for role in ROLES}
    for action, role, kind in path_actions(parser):
        value = getattr(args, action.dest, None)
        values = value if isinstance(value, list) else [] if value is None else [value]
        named[role].extend((option_name(action), str(path)) for path in values)
        if role == INPUT:
            for path in values:
                _check_input(option_name(action), kind, str(path))
    inputs = named[INPUT]
    if writes_stdout(parser, args):
        # `-` is the core's name of standard output, checked as `-o -` is: a file it was redirected to
        # (`>> a.trec`) must be no input and no other output. An input `-` reads standard input,
        # which the core would take for standard output by its name.
        named[OUTPUT].append((STDOUT, "-"))
        inputs = [(option, path) for option, path in inputs if path != "-"]
    check_paths(outputs=named[OUTPUT], output_directories=named[OUTPUT_DIRECTORY], inputs=inputs)


def _check_input(option: str, kind: str, path: str) -> None:
    if kind == "history" and path == "-":
        return
    if path == "-" and kind != "index":
        raise InputError(f"{option} '-': {DASH_INPUT}")
    problem = unreadable(path, folder=kind == "index")
    if problem is not None:
        raise InputError(f"{option} {path!r}: {problem}; give {TAKES[kind]}")


class HeldOutputs:
    """``with HeldOutputs() as held:`` the outputs a command writes beside its main one (a saved
    model, a plot): each is written to its temporary through the output guard as soon as its content
    is known (``held.write(path, data)``, so a path that cannot be written fails the command before
    its long part), and all are published when the block ends without an exception, after the main
    output that the block writes: a command that fails or is interrupted at any step leaves every
    output as it was."""

    def __init__(self) -> None:
        self._stack = ExitStack()

    def write(self, path: str, data: bytes) -> None:
        stream = self._stack.enter_context(OutputFile(path))
        stream.write(data)
        stream.flush()

    def __enter__(self) -> HeldOutputs:
        self._stack.__enter__()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        # The guard's outputs publish or discard themselves; none swallows the exception.
        self._stack.__exit__(exc_type, exc, traceback)
