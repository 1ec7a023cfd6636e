"""A refusal of the library or the core about a value a command passed on names the flag the user
gave it with, through one mechanism (`fanfuse.cli._common.named_by_flags`, which every command runs
under): enumerated over every flag of every command's parser, for both ways an error names its value
(the message's first word, a ``FusionError``'s ``option``)."""

from __future__ import annotations

import argparse
from collections.abc import Iterator
from pathlib import Path

import pytest
from fanfuse import FusionError
from fanfuse.cli import build_parser, command_parsers, main
from fanfuse.cli._common import flags_by_name, named_by_flags
from fanfuse.errors import OutOfRange


def _parsers() -> dict[str, argparse.ArgumentParser]:
    return command_parsers(build_parser(None))


def _flags() -> Iterator[tuple[str, str, str]]:
    for command, parser in _parsers().items():
        for name, flag in flags_by_name(parser).items():
            yield command, name, flag


FLAGS = sorted(_flags())


def test_every_command_has_named_flags() -> None:
    named = {command for command, _, _ in FLAGS}
    assert named == set(_parsers()), set(_parsers()) - named


@pytest.mark.parametrize(("command", "name", "flag"), FLAGS)
def test_a_refusal_starting_with_a_value_name_names_its_flag(command: str, name: str, flag: str) -> None:
    with pytest.raises(OutOfRange) as refused, named_by_flags(_parsers()[command]):
        raise OutOfRange(f"{name} must be an int from 1 to 4 (got 9)")
    assert str(refused.value) == f"{flag} must be an int from 1 to 4 (got 9)"


@pytest.mark.parametrize(("command", "name", "flag"), FLAGS)
def test_a_fusion_error_naming_its_option_names_its_flag(command: str, name: str, flag: str) -> None:
    error = FusionError("this method cannot go with it")
    error.option = name
    with pytest.raises(FusionError) as refused, named_by_flags(_parsers()[command]):
        raise error
    assert str(refused.value) == f"{flag}: this method cannot go with it"


def test_a_refusal_about_no_flag_is_left_as_it_is() -> None:
    with pytest.raises(OutOfRange, match=r"^no_such_value must be"), named_by_flags(_parsers()["fuse"]):
        raise OutOfRange("no_such_value must be 1")


def test_the_cores_refusal_of_an_option_names_its_flag_end_to_end(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A combination only the core judges (`FusionOptions`): the option it names is shown as its flag."""
    run = tmp_path / "a.trec"
    run.write_text("q1 Q0 d1 1 2.0 a\n", encoding="utf-8")
    out = tmp_path / "out.trec"
    assert main(["fuse", str(run), str(run), "--method", "isr", "--weights", "1,2", "-o", str(out)]) == 2
    refusal = "fanfuse fuse: error: --weights: --method 'isr' has no per-list weights; drop --weights"
    assert refusal in capsys.readouterr().err
    assert not out.exists()
