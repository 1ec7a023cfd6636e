"""Training reads each run's hits of the judged queries: a run that holds none of them would train
an all-zero table, and every document it ranks would fuse to nothing, silently. Every way to train
refuses it naming the run: `train_fusion` for every trained method, `fanfuse fuse --train-runs`,
and `tune` (for every method: a run of no judged query tunes nothing), which also refuses, before
its first fold, a run whose judged queries all fall in one fold (a trained method is fitted without
each fold in turn)."""

from __future__ import annotations

from pathlib import Path

import fanfuse
import pytest
from fanfuse._core import TRAINED_METHODS
from fanfuse.cli import main
from fanfuse.errors import TooFewQueries
from fanfuse.tune import tune


def run_of(name: str, qids: list[str]) -> fanfuse.Run:
    rows = [(q, f"d{i}", float(5 - i)) for q in qids for i in range(5)]
    qid, docid, score = (list(column) for column in zip(*rows, strict=True))
    return fanfuse.Run.from_columns(qid, docid, score, name=name)


def qrels_of(tmp_path: Path, qids: list[str]) -> fanfuse.Qrels:
    path = tmp_path / "qrels.txt"
    path.write_text("".join(f"{q} 0 d{i % 3} 1\n" for i, q in enumerate(qids)))
    return fanfuse.read_qrels(str(path))


JUDGED = [f"q{i}" for i in range(10)]


@pytest.mark.parametrize("method", TRAINED_METHODS)
def test_train_fusion_refuses_a_run_of_no_judged_query(method: str, tmp_path: Path) -> None:
    qrels = qrels_of(tmp_path, JUDGED)
    judged, other = run_of("judged.trec", JUDGED), run_of("other.trec", ["x1", "x2"])
    with pytest.raises(fanfuse.FusionError, match=r"^other\.trec: none of its queries is in the qrels \(10"):
        fanfuse.train_fusion([judged, other], qrels, method=method)
    assert fanfuse.train_fusion([judged, judged], qrels, method=method).runs == 2


def test_the_fuse_command_refuses_training_runs_of_other_queries(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for name in ("a.trec", "b.trec"):
        run_of(name, ["x1", "x2"]).write(str(tmp_path / name))
    qrels_of(tmp_path, JUDGED)
    runs = [str(tmp_path / "a.trec"), str(tmp_path / "b.trec")]
    out = tmp_path / "fused.trec"
    argv = ["fuse", *runs, "-o", str(out), "--method", "probfuse"]
    assert main([*argv, "--train-runs", *runs, "--train-qrels", str(tmp_path / "qrels.txt")]) == 2
    err = capsys.readouterr().err
    assert "a.trec: none of its queries is in the qrels" in err and len(err.splitlines()) == 1, err
    assert not out.exists()


@pytest.mark.parametrize("method", ["rrf", "probfuse"])
def test_tune_refuses_a_run_of_no_judged_query(method: str, tmp_path: Path) -> None:
    qrels = qrels_of(tmp_path, JUDGED)
    runs = [run_of("judged.trec", JUDGED), run_of("other.trec", ["x1", "x2"])]
    with pytest.raises(TooFewQueries, match=r"^other\.trec: none of its queries is in the qrels"):
        tune(runs, qrels, method=method)


def test_tune_refuses_a_run_whose_judged_queries_fall_in_one_fold(tmp_path: Path) -> None:
    qrels = qrels_of(tmp_path, JUDGED)
    runs = [run_of("judged.trec", JUDGED), run_of("one.trec", ["q3"])]
    with pytest.raises(TooFewQueries, match=r"^one\.trec: its judged queries all fall in one fold"):
        tune(runs, qrels, method="probfuse", folds=2)
    assert tune(runs, qrels, method="rrf", folds=2).queries == 10  # fused, not trained: nothing to refuse
