"""An option that keeps one value, given twice, is refused naming it (argparse keeps the last value
silently: `--phi 0.5 --phi 0.6` would run with 0.6). Every option of every command's parser is given twice
(with a value its type and choices accept); the options that take more than one on purpose
(append, count) and those that only print (help, version) or refuse (old spellings) are the only
ones left out, and which they are is asserted."""

from __future__ import annotations

import argparse
import contextlib
import io
from collections.abc import Iterator

import pytest
from fanfuse.cli import build_parser, command_parsers
from fanfuse.cli.flags import Renamed

# Values tried in turn until the option's type accepts one (its first choice, when it has choices).
CANDIDATES = ["1", "0.5", "a", "0", "2", "a.trec"]
NOT_ONCE = (argparse._HelpAction, argparse._AppendAction, argparse._CountAction, Renamed)


def parse_error(parser: argparse.ArgumentParser, argv: list[str]) -> str:
    """What the parser says of `argv` on stderr when it exits ("" when it does not)."""
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.suppress(SystemExit):
        parser.parse_args(argv)
    return err.getvalue()


def given_once(parser: argparse.ArgumentParser, action: argparse.Action) -> list[str]:
    """The option with a value it accepts, as argv."""
    option = action.option_strings[0]
    if action.nargs == 0:
        return [option]
    values = [str(c) for c in action.choices] if action.choices else CANDIDATES
    for value in values:
        if f"argument {'/'.join(action.option_strings)}" not in parse_error(parser, [option, value]):
            return [option, value]
    raise AssertionError(f"{option}: add a value its type accepts to CANDIDATES")


def options() -> Iterator[tuple[str, argparse.ArgumentParser, argparse.Action]]:
    for command, parser in command_parsers(build_parser()).items():
        for action in parser._actions:
            if action.option_strings and not isinstance(action, NOT_ONCE):
                yield command, parser, action


OPTIONS = list(options())


def test_the_options_that_take_several_values_are_search_s_turns_and_filters() -> None:
    several = {
        f"{command} {action.option_strings[0]}"
        for command, parser in command_parsers(build_parser()).items()
        for action in parser._actions
        if isinstance(action, (argparse._AppendAction, argparse._CountAction))
    }
    assert several == {"search --turn", "search --filter"}


@pytest.mark.parametrize(
    "command, parser, action", OPTIONS, ids=[f"{c} {a.option_strings[0]}" for c, _, a in OPTIONS]
)
def test_an_option_given_twice_is_refused(
    command: str, parser: argparse.ArgumentParser, action: argparse.Action
) -> None:
    once = given_once(parser, action)
    said = parse_error(parser, [*once, *once])
    names = "/".join(action.option_strings)
    assert said == f"fanfuse {command}: error: argument {names}: given twice: give one value\n", said


def test_the_two_spellings_of_a_switch_together_are_refused() -> None:
    parser = command_parsers(build_parser("search"))["search"]
    said = parse_error(parser, ["q", "--index", "i", "--dense", "--no-dense"])
    assert said.endswith("argument --dense/--no-dense: --dense was given too: give one value\n"), said
