"""A metric whose score leaves the float range is refused, naming the metric, the query and the grade,
never averaged into a NaN or infinite mean (which `--json` cannot hold and a significance test
cannot read). Only the exponential gain 2^grade - 1 can leave it: every metric of the core's
`METRICS` is evaluated on a grade of 1024, each by every entry point that evaluates (the library's
functions, `eval` on both engines, `tune`), and is either a finite number or that refusal."""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import fanfuse
import fanfuse.tables
import pytest
from fanfuse._core import METRICS
from fanfuse.cli import main

RUN = "".join(f"q{q} Q0 d{i} {i + 1} {10 - i} r\n" for q in range(4) for i in range(3))
QRELS = "".join(f"q{q} 0 d0 1024\nq{q} 0 d1 1\n" for q in range(4))
# The grade of 1024 on a document the run does not retrieve: the ideal ranking alone overflows.
UNRETRIEVED = "".join(f"q{q} 0 elsewhere 1024\nq{q} 0 d1 1\n" for q in range(4))
EXPONENTIAL = {name for name in METRICS if name.endswith("_burges")}
# rbp is named with its persistence.
NAMES = [f"{name}.9" if name == "rbp" else name for name in METRICS]


@pytest.fixture
def files(tmp_path: Path) -> tuple[str, str]:
    (tmp_path / "r.trec").write_text(RUN)
    (tmp_path / "q.txt").write_text(QRELS)
    return str(tmp_path / "r.trec"), str(tmp_path / "q.txt")


def tune_call(run: str, qrels: str, metric: str) -> Any:
    from fanfuse.tune import tune

    runs = [fanfuse.read_run(run), fanfuse.read_run(run)]
    return tune(runs, fanfuse.read_qrels(qrels), method="rrf", metric=metric, folds=2)


ENTRIES: dict[str, Callable[[str, str, str], Any]] = {
    "evaluate": lambda run, qrels, metric: fanfuse.evaluate(
        fanfuse.read_run(run), fanfuse.read_qrels(qrels), metrics=[metric]
    ),
    "evaluate_table": lambda run, qrels, metric: fanfuse.tables.evaluate_table(
        fanfuse.tables.to_arrow(fanfuse.read_run(run)), fanfuse.read_qrels(qrels), [metric]
    ),
    "compare": lambda run, qrels, metric: fanfuse.compare([run, run], qrels, [metric]),
    "tune": tune_call,
}


def test_the_exponential_gains_are_known() -> None:
    assert {"dcg_burges", "ndcg_burges"} == EXPONENTIAL


@pytest.mark.parametrize("metric", NAMES)
@pytest.mark.parametrize("entry", ENTRIES)
def test_every_metric_is_a_number_or_refused_by_every_function(
    files: tuple[str, str], entry: str, metric: str
) -> None:
    run, qrels = files
    if metric not in EXPONENTIAL:
        result = ENTRIES[entry](run, qrels, metric)
        if entry == "evaluate":
            assert all(math.isfinite(v) for values in result[1].values() for v in values)
        return
    with pytest.raises(
        fanfuse.FusionError,
        match=rf'^{metric} of query "q0" is (inf|NaN): its gains 2\^grade - 1 \(the largest grade is 1024\)',
    ):
        ENTRIES[entry](run, qrels, metric)


COMMANDS = [
    ["eval", "{run}", "{run}", "--qrels", "{qrels}", "--json"],
    ["eval", "{run}", "--qrels", "{qrels}", "--engine", "dask"],
    ["tune", "{run}", "{run}", "--qrels", "{qrels}", "--folds", "2"],
]


@pytest.mark.parametrize("metric", sorted(EXPONENTIAL))
@pytest.mark.parametrize("argv", COMMANDS, ids=[" ".join(c[:1] + c[-2:]) for c in COMMANDS])
def test_every_command_refuses_it_in_one_line(
    files: tuple[str, str], argv: list[str], metric: str, capsys: pytest.CaptureFixture[str]
) -> None:
    if "dask" in argv:
        pytest.importorskip("dask")
    run, qrels = files
    flag = "--metric" if argv[0] == "tune" else "--metrics"
    words = [w.format(run=run, qrels=qrels) for w in argv] + [flag, metric]
    assert main(words) == 2
    captured = capsys.readouterr()
    err = captured.err.strip().splitlines()
    assert len(err) == 1 and f'{metric} of query "q0" is ' in err[0], err
    assert captured.out == ""


@pytest.mark.parametrize("entry", ENTRIES)
def test_an_ideal_ranking_beyond_the_float_range_is_refused_not_scored_0(tmp_path: Path, entry: str) -> None:
    """The run's own gains are finite here; ndcg_burges divides them by an infinite ideal, which
    would give 0 for a query whose judgments cannot be scored at all. dcg_burges has no ideal."""
    (tmp_path / "r.trec").write_text(RUN)
    (tmp_path / "q.txt").write_text(UNRETRIEVED)
    run, qrels = str(tmp_path / "r.trec"), str(tmp_path / "q.txt")
    with pytest.raises(fanfuse.FusionError, match=r'^ndcg_burges of query "q0" is NaN'):
        ENTRIES[entry](run, qrels, "ndcg_burges")
    assert ENTRIES[entry](run, qrels, "dcg_burges") is not None
