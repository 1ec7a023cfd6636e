"""The `fanfuse` command. Each subcommand lives in its own module with `register(subparsers)`."""

from __future__ import annotations

import argparse
import importlib
import os
import sys
import warnings
from collections.abc import Sequence
from typing import Any, NoReturn, TextIO, TypeVar

# Subcommand modules, in the order `fanfuse --help` lists them. Only the module of the command being
# run is imported (the retrieval commands import NumPy and Tantivy, which `fuse`/`eval`/`tune` never need).
COMMANDS = {
    "demo": "fanfuse.cli.demo",
    "index": "fanfuse.cli.index",
    "search": "fanfuse.cli.search",
    "serve": "fanfuse.cli.serve",
    "fuse": "fanfuse.cli.fuse",
    "eval": "fanfuse.cli.evaluate",
    "tune": "fanfuse.cli.tune",
}


class _PrintVersion(argparse.Action):
    """`--version`, which looks the version up only when asked (that import costs ~0.15 s)."""

    def __call__(self, parser: argparse.ArgumentParser, *_: Any) -> None:
        from fanfuse import __version__

        parser.exit(message=f"fanfuse {__version__}\n")


_ActionT = TypeVar("_ActionT", bound=argparse.Action)


class _GivenOnce(argparse.Action):
    """Placed before an action that keeps one value: a second value for its destination is refused
    (argparse keeps the last one silently: `--phi 0.5 --phi 0.6` would run with 0.6, and `--dense
    --no-dense` without the index's vectors)."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, *args: Any) -> None:
        option = args[1] if len(args) > 1 and args[1] else self.metavar or self.dest
        given: dict[str, str] = getattr(parser, "given", {})
        if self.dest in given:
            before = given[self.dest]
            said = "given twice" if before == option else f"{before} was given too"
            raise argparse.ArgumentError(self, f"{said}: give one value")
        given[self.dest] = str(option)
        super().__call__(parser, namespace, *args)


# The actions that keep one value, each with the check placed before it.
_ONCE: dict[type[argparse.Action], type[argparse.Action]] = {
    kind: type(f"Once{kind.__name__}", (_GivenOnce, kind), {})
    for kind in (
        argparse._StoreAction,
        argparse._StoreConstAction,
        argparse._StoreTrueAction,
        argparse._StoreFalseAction,
        argparse.BooleanOptionalAction,
    )
}


class _Parser(argparse.ArgumentParser):
    """Usage errors as one line, `fanfuse CMD: error: ...`, and exit 2, like every other bad input
    (`--help` prints the usage); an option that keeps one value given twice is one of them.
    Subcommand parsers are built from the same class."""

    given: dict[str, str]

    def _add_action(self, action: _ActionT) -> _ActionT:
        once = _ONCE.get(type(action))
        if once is not None:
            action.__class__ = once  # type: ignore[assignment]  # a subclass of its own class
        return super()._add_action(action)

    def parse_known_args(self, *args: Any, **kwargs: Any) -> Any:
        self.given = {}  # destination -> the option that gave it, in this parse
        return super().parse_known_args(*args, **kwargs)

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message}\n")


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The parser of every subcommand, or of `only` (a name from COMMANDS)."""
    parser = _Parser(prog="fanfuse", description="Multi-query retrieval and rank fusion.")
    parser.add_argument("--version", action=_PrintVersion, nargs=0, help="show the version and exit")
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    from fanfuse.cli.flags import add_renamed

    for name, module in COMMANDS.items():
        if only is None or name == only:
            importlib.import_module(module).register(subparsers)
            add_renamed(subparsers.choices[name], name)
            # A flag is its whole name: an abbreviation would give each flag many (`--k` read as
            # tune's `--ks`, where fuse refuses it as renamed), and a new flag could change what one means.
            subparsers.choices[name].allow_abbrev = False
    return parser


def command_parsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    """The subcommand parsers of `build_parser()`, by command name."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the console script; returns the process exit code."""
    argv = list(sys.argv[1:] if argv is None else argv)
    # The command is the first word that is not an option (the top level has no option with a value).
    command = next((word for word in argv if not word.startswith("-")), None)
    from fanfuse.cli.terminal import terminal_safe_output

    prog = f"fanfuse {command}" if command in COMMANDS else "fanfuse"

    def one_line(
        message: Warning | str,
        category: type[Warning],
        filename: str,
        lineno: int,
        file: TextIO | None = None,
        line: str | None = None,
    ) -> None:
        print(f"{prog}: warning: {message}", file=sys.stderr)

    with terminal_safe_output(), warnings.catch_warnings():
        # A warning of the library (an environment variable it cannot read) is a line like the
        # command's own, not Python's two lines naming a source file.
        warnings.showwarning = one_line
        from fanfuse.environment import misspelt_lines

        # Before parsing, so that a command refused at once has said it too.
        for line in misspelt_lines(os.environ):
            print(f"{prog}: warning: {line}", file=sys.stderr)
        parser = build_parser(command if command in COMMANDS else None)
        # The command's parser names the words it does not take (argparse's own names only `fanfuse`).
        args, unknown = parser.parse_known_args(argv)
        if unknown:
            from fanfuse.cli.flags import unrecognized

            command_parser = command_parsers(parser)[args.command]
            command_parser.error(unrecognized(command_parser, unknown))
        from fanfuse.cli._common import named_by_flags, run_command
        from fanfuse.cli.idle_flags import refuse_idle_flags
        from fanfuse.cli.paths import check_command_paths
        from fanfuse.cli.utf8 import check_utf8_arguments

        def checked_run() -> int:
            command_parser = command_parsers(parser)[args.command]
            # The command's own words: those after its name (the top level takes no option with a value).
            check_utf8_arguments(command_parser, args)
            refuse_idle_flags(args.command, command_parser, argv[argv.index(args.command) + 1 :], args)
            check_command_paths(command_parser, args)
            with named_by_flags(command_parser, args):
                code: int = args.run(args)
            return code

        return run_command(args.command, checked_run)


if __name__ == "__main__":
    sys.exit(main())
