"""`--engine`, `--scheduler` and `--partitions` of the run-file commands: where the work runs. The
default engine is this process (the Rust core alone); `dask` imports the optional Dask extra only
when asked for."""

from __future__ import annotations

import argparse
from typing import Any

from fanfuse._core import TRAINED_METHODS
from fanfuse.cli._common import number_option
from fanfuse.errors import InvalidSetting, MissingExtra

ENGINES = ("process", "dask")


def add_engine_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--engine",
        default="process",
        choices=ENGINES,
        help="process (default: this process, streaming) or dask: shuffle the runs on qid and work "
        "partition by partition on a Dask scheduler (needs fanfuse[dask]; docs/distributed.md)",
    )
    parser.add_argument(
        "--scheduler",
        metavar="ADDRESS",
        help="with --engine dask: address of a Dask scheduler, e.g. tcp://10.0.0.1:8786 (default: "
        "this process's threads)",
    )
    number_option(
        parser,
        "--partitions",
        "partitions",
        "with --engine dask: partitions of the shuffle on qid (default: one per 64 MB input block; at "
        "most one per query)",
    )


def dask_commands(args: argparse.Namespace) -> Any:
    """The module that runs the command on Dask; a missing extra is a one-line error that names it."""
    try:
        from fanfuse.dask import command
    except ImportError as error:
        raise MissingExtra(f"--engine dask: {error}", extra="dask") from None
    return command


def check_engine_options(args: argparse.Namespace) -> None:
    """Before any work: the Dask engine fuses no trained method nor model (``fanfuse.cli.idle_flags`` refuses
    ``--scheduler`` and ``--partitions`` without it)."""
    if args.engine == "dask" and getattr(args, "method", None) in TRAINED_METHODS:
        raise InvalidSetting(
            f"trained fusion (--method {args.method}) runs in one process: drop --engine dask"
        )
    if args.engine == "dask" and getattr(args, "model", None):
        raise InvalidSetting("trained fusion (--model) runs in one process: drop --engine dask")
