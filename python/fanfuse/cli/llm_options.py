"""The expander flags of `fanfuse search` and `fanfuse serve`, one definition for both: `--expander`
and the settings of `--expander llm` (`LLMExpander`). The key never is a flag (a command line is
visible to every user of the machine): it comes from FANFUSE_LLM_API_KEY or OPENAI_API_KEY."""

from __future__ import annotations

import argparse
from typing import Any

from fanfuse.cli._common import number_option
from fanfuse.cli.flags import LLM_FLAGS
from fanfuse.errors import InputError
from fanfuse.multiquery import LLMExpander
from fanfuse.multiquery.expand.llm_prompts import STRATEGIES

EXPANDERS = ("heuristic", "llm", "none")
_ARGUMENT = {"llm_base_url": "base_url", "llm_model": "model", "llm_timeout": "timeout"}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--expander",
        choices=EXPANDERS,
        help="where variants come from: word rewrites (default), a chat model, or none (single query; "
        "default when FANFUSE_QUERY_EXPANSION is off)",
    )
    parser.add_argument(
        "--llm-base-url",
        metavar="URL",
        help="OpenAI-compatible API root for --expander llm (default FANFUSE_LLM_BASE_URL, else "
        "OpenAI's); the key comes from FANFUSE_LLM_API_KEY or OPENAI_API_KEY",
    )
    parser.add_argument("--llm-model", metavar="M", help="chat model name for --expander llm")
    parser.add_argument(
        "--strategy",
        choices=list(STRATEGIES),
        help="what --expander llm asks for (default paraphrase); condense rewrites the question from "
        "the conversation, hyde writes an answer passage for the dense side",
    )
    parser.add_argument(
        "--instructions",
        metavar="TEXT",
        help='domain guidance added to the prompt of --expander llm, e.g. "Queries are about Kubernetes"',
    )
    number_option(
        parser,
        "--temperature",
        "temperature",
        "sampling temperature of --expander llm (default 0.3)",
        metavar="T",
    )
    number_option(
        parser,
        "--max-tokens",
        "max_tokens",
        "the longest answer of --expander llm, in tokens (default: the server's)",
        metavar="N",
    )
    number_option(
        parser,
        "--llm-timeout",
        "timeout",
        "the deadline of one call of --expander llm, from connecting to the last byte (default 8)",
        metavar="SECONDS",
    )


def make_expander(args: argparse.Namespace) -> LLMExpander | None:
    """The LLM expander for `--expander llm`; None keeps the default (or no expansion at all). Its
    flags without `--expander llm` were refused by ``fanfuse.cli.idle_flags``."""
    if args.expander != "llm":
        return None
    given = {name: getattr(args, name) for name in LLM_FLAGS if getattr(args, name) is not None}
    options: dict[str, Any] = {_ARGUMENT.get(name, name): value for name, value in given.items()}
    try:
        return LLMExpander(**options)
    except InputError as error:
        raise type(error)(_named_by_flag(str(error))) from None


def expansion_switch(expander: str | None) -> bool | None:
    """``--expander none`` turns expansion off, another ``--expander`` on; without the flag the
    environment decides (``FANFUSE_QUERY_EXPANSION``, default on)."""
    return None if expander is None else expander != "none"


def _named_by_flag(message: str) -> str:
    """The library's message about an argument, about the flag that set it instead."""
    if message.startswith("LLMExpander needs a model"):
        return "--expander llm needs a model: add --llm-model M or set FANFUSE_LLM_MODEL"
    for name, flag in LLM_FLAGS.items():
        argument = _ARGUMENT.get(name, name)
        if message.startswith(f"{argument} "):
            return flag + message[len(argument) :]
    return message
