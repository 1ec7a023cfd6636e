"""The `fanfuse` command. Each subcommand lives in its own module with `register(subparsers)`."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from fanfuse.cli import demo, evaluate, fuse, index, search, tune

# Subcommand modules, in the order `fanfuse --help` lists them.
COMMANDS = [demo, index, search, fuse, evaluate, tune]


def build_parser() -> argparse.ArgumentParser:
    from fanfuse import __version__

    parser = argparse.ArgumentParser(prog="fanfuse", description="Multi-query retrieval and rank fusion.")
    parser.add_argument("--version", action="version", version=f"fanfuse {__version__}")
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for command in COMMANDS:
        command.register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the console script; returns the process exit code."""
    args = build_parser().parse_args(argv)
    code: int = args.run(args)
    return code


if __name__ == "__main__":
    sys.exit(main())
