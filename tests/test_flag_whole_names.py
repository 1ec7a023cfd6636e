"""A flag is its whole name on every command: an abbreviation is refused (exit 2, naming the flag
meant), never read as the flag it starts (``tune --k`` as ``--ks``, which fuse refuses as renamed);
and tune refuses fuse's one-value flag of each parameter it searches, naming its list of levels.
Enumerated from the parsers."""

from __future__ import annotations

import argparse

import pytest
from fanfuse.cli import main
from fanfuse.cli.flags import Renamed
from fanfuse.cli.idle_flags import level_flag
from fanfuse.cli.tune import ONE_VALUE_FLAGS
from fanfuse.tune.space import OPTIONS
from test_cli_flags import commands


def abbreviations() -> list[tuple[str, str, str]]:
    """(command, flag, its name less its last letter) for every long flag where that is no flag."""
    cases = []
    for command, parser in commands().items():
        flags = {f for action in parser._actions for f in action.option_strings}
        for action in parser._actions:
            if isinstance(action, Renamed):
                continue
            for flag in action.option_strings:
                short = flag[:-1]
                if flag.startswith("--") and len(short) > 3 and short not in flags:
                    cases.append((command, flag, short))
    return cases


def read_as(parser: argparse.ArgumentParser, word: str) -> list[argparse.Action | None]:
    """The actions argparse reads `word` as (None: no flag of the parser); its private reader, whose
    answer is one tuple before Python 3.12 and a list of them since."""
    found = parser._parse_optional(word)
    assert found is not None, word  # an option, not a positional
    return [match[0] for match in (found if isinstance(found, list) else [found])]


def test_the_abbreviations_are_enumerated() -> None:
    assert {command for command, _, _ in abbreviations()} == set(commands())
    assert ("fuse", "--top-k", "--top-") in abbreviations()


@pytest.mark.parametrize(("command", "flag", "short"), abbreviations())
def test_an_abbreviated_flag_is_read_as_no_flag(command: str, flag: str, short: str) -> None:
    assert read_as(commands()[command], short) == [None]


def test_an_abbreviation_on_the_command_line_is_refused_naming_the_flag(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit) as stop:
        main(["tune", "a.run", "b.run", "--qrels", "q.txt", "--k", "5"])
    assert stop.value.code == 2
    assert "unrecognized arguments: --k 5; --k: did you mean --ks?" in capsys.readouterr().err


@pytest.mark.parametrize("option", OPTIONS, ids=lambda option: option.keyword)
def test_tune_refuses_fuses_one_value_flag_naming_its_levels(
    option: object, capsys: pytest.CaptureFixture[str]
) -> None:
    single = ONE_VALUE_FLAGS.get(option.parameter, f"--{option.parameter}")  # type: ignore[attr-defined]
    fuse_flags = {f for action in commands()["fuse"]._actions for f in action.option_strings}
    assert single in fuse_flags
    with pytest.raises(SystemExit) as stop:  # a usage error, as a renamed flag is
        main(["tune", "a.run", "b.run", "--qrels", "q.txt", single, "5"])
    assert stop.value.code == 2
    levels = level_flag(option.keyword)  # type: ignore[attr-defined]
    assert capsys.readouterr().err.endswith(
        f"error: {single} sets one value in fuse; tune searches a list of levels: use {levels}\n"
    )
