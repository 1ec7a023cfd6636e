"""A level given twice to a tuning search (`tune(ks=[60, 60])`, `fanfuse tune --ks 60,60`) is refused
naming both places: searched twice, it was counted as two levels, and a search over one configuration
passed for a search. Every level option of `fanfuse.tune.space.OPTIONS`, through the library and the
command, each with the method whose parameter it searches."""

from __future__ import annotations

import fanfuse
import pytest
from fanfuse import FusionError
from fanfuse.cli import main
from fanfuse.tune.space import OPTIONS
from test_tune_arguments import CASES, Inputs

KEYWORDS = [option.keyword for option in OPTIONS]
# Repeated levels of the command's flags, each with a method that has the parameter.
FLAGS = [
    ("--ks", "60,60", "rrf"),
    ("--weight-levels", "1,2,1", "rrf"),
    ("--norms", "min-max,min-max", "combsum"),
]


@pytest.fixture(scope="module")
def inputs(small_runs: dict[str, str]) -> Inputs:
    runs = [fanfuse.read_run(small_runs["run0"]), fanfuse.read_run(small_runs["run1"])]
    return Inputs(runs, fanfuse.read_qrels(small_runs["qrels"]))


def test_every_option_has_a_call() -> None:
    assert {f"fanfuse.tune.tune:{keyword}" for keyword in KEYWORDS} <= set(CASES)


@pytest.mark.parametrize("keyword", KEYWORDS)
def test_a_repeated_level_is_refused(inputs: Inputs, keyword: str) -> None:
    case = CASES[f"fanfuse.tune.tune:{keyword}"]
    (level,) = case.good(inputs)
    refusal = rf"^{keyword}\[1\] repeats {keyword}\[0\] \({level!r}\): give each level once"
    with pytest.raises(FusionError, match=refusal):
        case.call(inputs, [level, level])


@pytest.mark.parametrize(("flag", "levels", "method"), FLAGS)
def test_the_command_refuses_a_repeated_level(
    small_runs: dict[str, str], capsys: pytest.CaptureFixture[str], flag: str, levels: str, method: str
) -> None:
    runs = [small_runs["run0"], small_runs["run1"]]
    assert main(["tune", *runs, "--qrels", small_runs["qrels"], "--method", method, flag, levels]) == 2
    assert "repeats" in capsys.readouterr().err
