"""A comma list where one metric name goes (``tune --metric ndcg@5,map``, a habit of ``eval
--metrics``) is refused as a list, never read as a strange cut-off (``@5,map``): every entry point
that takes metric names goes through the core's one parser, and each is tried here."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import fanfuse
import pytest
from fanfuse.cli import main
from fanfuse.tune import tune

LISTED = "ndcg@5,map"
SAID = "one metric name goes here, not a comma-separated list"


def two_runs() -> list[fanfuse.Run]:
    qids = [q for q in "1234" for _ in range(3)]
    runs = [
        fanfuse.Run.from_columns(qids, ["a", "b", "c"] * 4, [3.0, 2.0, 1.0] * 4, name="x"),
        fanfuse.Run.from_columns(qids, ["c", "a", "b"] * 4, [3.0, 2.0, 1.0] * 4, name="y"),
    ]
    return runs


CALLS: dict[str, Callable[[list[fanfuse.Run], Any], object]] = {
    "metric_depth": lambda runs, qrels: fanfuse.metric_depth(LISTED),
    "evaluate": lambda runs, qrels: fanfuse.evaluate(runs[0], qrels, metrics=[LISTED]),
    "compare": lambda runs, qrels: fanfuse.compare(runs, qrels, [LISTED]),
    "tune": lambda runs, qrels: tune(runs, qrels, metric=LISTED, folds=2),
}


@pytest.fixture
def judged(tmp_path: Path) -> tuple[list[fanfuse.Run], fanfuse.Qrels, Path]:
    path = tmp_path / "qrels.txt"
    path.write_text("".join(f"{q} 0 a 1\n" for q in "1234"))
    return two_runs(), fanfuse.read_qrels(str(path)), path


@pytest.mark.parametrize("entry", sorted(CALLS))
def test_every_function_refuses_a_list_as_a_list(entry: str, judged: tuple[Any, Any, Path]) -> None:
    runs, qrels, _ = judged
    with pytest.raises(fanfuse.InvalidSetting, match=SAID):
        CALLS[entry](runs, qrels)


def test_tune_on_the_command_line_refuses_it_and_eval_splits_its_own(
    judged: tuple[Any, Any, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    runs, _, qrels = judged
    paths = []
    for run in runs:
        paths.append(str(tmp_path / f"{run.name}.trec"))
        run.write(paths[-1])
    assert main(["tune", *paths, "--qrels", str(qrels), "--folds", "2", "--metric", LISTED]) == 2
    assert f"--metric '{LISTED}': {SAID}" in capsys.readouterr().err
    assert main(["eval", *paths, "--qrels", str(qrels), "--metrics", LISTED]) == 0
    assert "ndcg@5" in capsys.readouterr().out
