"""A metric named twice (the same name, another case, or trec_eval's name for it) would be counted
twice in the family a multiple-comparison correction adjusts (`map@10,MAP@10` would halve a
Holm-corrected significance). The core's metric parser refuses it, so every entry point that takes metrics
does: `evaluate`, `compare`, and `fanfuse eval --metrics` on either engine."""

from __future__ import annotations

from pathlib import Path

import fanfuse
import pytest
from command_inputs import write_inputs
from fanfuse.cli import main
from fanfuse.errors import InvalidSetting

TWICE = {
    "the same name": (["map@10", "P@5", "map@10"], '"map@10" twice'),
    "another case": (["map@10", "MAP@10"], '"map@10" and "MAP@10", one metric'),
    "trec_eval's name": (["ndcg_cut_10", "ndcg@10"], '"ndcg_cut_10" and "ndcg@10", one metric'),
}


@pytest.fixture()
def files(tmp_path: Path) -> Path:
    return write_inputs(tmp_path)


@pytest.mark.parametrize("case", TWICE)
def test_evaluate_and_compare_refuse_a_metric_named_twice(case: str, files: Path) -> None:
    metrics, said = TWICE[case]
    run, qrels = fanfuse.read_run(str(files / "a.trec")), fanfuse.read_qrels(str(files / "qrels.txt"))
    with pytest.raises(InvalidSetting, match=f"^metrics names {said}: give each metric once$"):
        fanfuse.evaluate(run, qrels, metrics=metrics)
    with pytest.raises(InvalidSetting, match=f"^metrics names {said}"):
        fanfuse.compare([run, run], qrels, metrics)


@pytest.mark.parametrize("engine", ["process", "dask"])
@pytest.mark.parametrize("case", TWICE)
def test_the_eval_command_refuses_a_metric_named_twice(
    case: str, engine: str, files: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    if engine == "dask":
        pytest.importorskip("dask.distributed")
    metrics, said = TWICE[case]
    runs = [str(files / "a.trec"), str(files / "b.trec")]
    argv = ["eval", *runs, "--qrels", str(files / "qrels.txt"), "--metrics", ",".join(metrics)]
    assert main([*argv, "--engine", engine]) == 2
    assert capsys.readouterr().err == f"fanfuse eval: error: --metrics names {said}: give each metric once\n"
