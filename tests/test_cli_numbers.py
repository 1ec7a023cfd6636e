"""Every numeric flag of every command, found in the argparse parsers themselves: each takes its type
and its help from its row of `fanfuse.limits.LIMITS`, and a value out of range, not finite, huge or
not a number is refused with one line naming the flag and what it accepts (exit 2), before any
work. A flag added with a plain `type=int` or `type=float` fails the first test."""

from __future__ import annotations

import argparse
import math
from collections.abc import Iterator

import pytest
from fanfuse.cli import COMMANDS, build_parser, main
from fanfuse.cli._common import NumberFlag, NumberListFlag, name_list
from fanfuse.cli.serve import listen_address
from fanfuse.cli.tune import name_list as tune_names
from fanfuse.limits import LIMITS, Limit

# The types of flags that take words, not numbers.
WORD_TYPES = (name_list, tune_names, listen_address)


def command_actions() -> Iterator[tuple[str, argparse.Action]]:
    for command in COMMANDS:
        parser = build_parser(command)
        commands = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
        for action in commands.choices[command]._actions:
            if action.option_strings:
                yield command, action


NUMERIC = [
    (command, action.option_strings[-1], action.type)
    for command, action in command_actions()
    if isinstance(action.type, NumberFlag | NumberListFlag)
]


def test_every_flag_with_a_value_is_a_word_or_a_number_of_the_table() -> None:
    for command, action in command_actions():
        if action.nargs == 0 or action.choices is not None:
            continue  # a switch, or a choice of names
        flag = f"{command} {'/'.join(action.option_strings)}"
        if isinstance(action.type, NumberFlag | NumberListFlag):
            assert action.type.limit in LIMITS.values(), flag
            assert action.help is not None and action.help.endswith(f"[{action.type.accepted}]"), flag
        else:
            assert action.type is None or action.type in WORD_TYPES, f"{flag}: type {action.type!r}"
            numeric_default = isinstance(action.default, int | float) and not isinstance(action.default, bool)
            assert not numeric_default, f"{flag} has a numeric default but no type from fanfuse.limits"
    assert len(NUMERIC) >= 30  # every command's numbers: none is lost from the enumeration


def just_outside(limit: Limit) -> list[str]:
    """The nearest values the row refuses at each bound, as text."""
    out = []
    for bound, is_open, direction in ((limit.low, limit.low_open, -1), (limit.high, limit.high_open, 1)):
        if bound is None:
            continue
        if limit.kind is int:
            out.append(str(int(bound) + direction))
        else:
            out.append(repr(float(bound) if is_open else math.nextafter(bound, direction * math.inf)))
    return out


def bad_values(limit: Limit) -> list[str]:
    values = [*just_outside(limit), "nan", "inf", "-inf", "1e400", "-1e400", "x", "", "9" * 5000]
    if limit.kind is int:
        values += ["1.5", "1e3"]
    if limit.high is not None:
        values.append("9" * 40)  # huge, yet an int Python reads
    return values


CASES = [
    pytest.param(command, flag, value, id=f"{command} {flag}={value[:12]}")
    for command, flag, kind in NUMERIC
    for bad in bad_values(kind.limit)
    for value in ([bad, f"1,{bad}"] if isinstance(kind, NumberListFlag) else [bad])
]


@pytest.mark.parametrize(("command", "flag", "value"), CASES)
def test_a_bad_number_exits_2_naming_the_flag(
    command: str, flag: str, value: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as stop:
        main([command, f"{flag}={value}"])
    assert stop.value.code == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.startswith(f"fanfuse {command}: error: argument {flag}: "), captured.err
    assert captured.err.count("\n") == 1
    kind = next(k for c, f, k in NUMERIC if (c, f) == (command, flag))
    assert kind.accepted in captured.err


@pytest.mark.parametrize(("command", "flag", "kind"), NUMERIC, ids=[f"{c} {f}" for c, f, _ in NUMERIC])
def test_the_bounds_themselves_are_taken(command: str, flag: str, kind: NumberFlag | NumberListFlag) -> None:
    limit = kind.limit
    for bound, is_open in ((limit.low, limit.low_open), (limit.high, limit.high_open)):
        if bound is not None and not is_open:
            text = str(int(bound)) if limit.kind is int else repr(float(bound))
            parsed = kind(text)
            assert parsed == ([bound] if isinstance(kind, NumberListFlag) else bound)
