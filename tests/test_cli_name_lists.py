"""Every flag that takes comma-separated names (`--metrics ndcg@10,map`, `--norms min-max,zmuv`),
found in the argparse parsers of every command, refuses an empty name (`ndcg@10,,map`, a comma at
either end, a name of spaces) with one line naming the flag and the empty name's position, exit 2,
before any work; names with spaces around them are read without."""

from __future__ import annotations

import argparse
import re

import pytest
from fanfuse.cli import build_parser, main
from test_cli_numbers import command_actions


def reads_names(kind: object) -> bool:
    """Whether an argparse type reads `a,b` as the names a and b."""
    if not callable(kind):
        return False
    try:
        return bool(kind("a,b") == ["a", "b"])
    except (argparse.ArgumentTypeError, TypeError, ValueError):
        return False


NAME_FLAGS = [
    (command, action.option_strings[-1]) for command, action in command_actions() if reads_names(action.type)
]


def test_the_name_flags_are_found() -> None:
    # eval's metrics and tune's norms at least: none is lost from the enumeration.
    assert {("eval", "--metrics"), ("tune", "--norms")} <= set(NAME_FLAGS)


@pytest.mark.parametrize(
    ("given", "position", "count"),
    [("a,,b", 2, 3), (",a", 1, 2), ("a,", 2, 2), ("a, ,b", 2, 3), ("a,b,,", 3, 4)],
)
@pytest.mark.parametrize(("command", "flag"), NAME_FLAGS, ids=[f"{c} {f}" for c, f in NAME_FLAGS])
def test_an_empty_name_exits_2_naming_the_flag_and_its_position(
    command: str, flag: str, given: str, position: int, count: int, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as stop:
        main([command, f"{flag}={given}"])
    assert stop.value.code == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.count("\n") == 1
    expected = f"fanfuse {command}: error: argument {flag}: expected comma-separated names"
    assert captured.err.startswith(expected), captured.err
    assert f"name {position} of {count} is empty" in captured.err, captured.err
    assert repr(given) in captured.err


@pytest.mark.parametrize(("command", "flag"), NAME_FLAGS, ids=[f"{c} {f}" for c, f in NAME_FLAGS])
def test_names_are_read_without_the_spaces_around_them(command: str, flag: str) -> None:
    parser = build_parser(command)
    commands = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    action = next(a for a in commands.choices[command]._actions if flag in a.option_strings)
    assert action.type is not None and callable(action.type)
    assert action.type(" a , b ") == ["a", "b"]
    with pytest.raises(argparse.ArgumentTypeError, match=re.escape("name 2 of 3 is empty")):
        action.type("a,,b")
