"""Metrics equal pytrec_eval's (trec_eval's measures), on the real MT-RAG runs, on a fused generated run
and on crafted ties."""

from __future__ import annotations

import csv
import json
import random
import re
from pathlib import Path

import fanfuse
import pytest
from generated_runs import generated_qrels, generated_runs, write_beir_qrels, write_trec

pytrec_eval = pytest.importorskip("pytrec_eval")

OURS_TO_TREC = {
    "recall@5": "recall_5",
    "recall@10": "recall_10",
    "ndcg@5": "ndcg_cut_5",
    "ndcg@10": "ndcg_cut_10",
    "precision@5": "P_5",
    "mrr": "recip_rank",
    "map": "map",
    "ndcg": "ndcg",
}


def oracle(run: dict[str, dict[str, float]], qrels: dict[str, dict[str, int]]) -> dict[str, dict[str, float]]:
    measures = {m for m in OURS_TO_TREC.values() if "_" not in m or m.startswith(("P_", "recip"))}
    measures |= {"recall", "ndcg_cut"}
    result: dict[str, dict[str, float]] = pytrec_eval.RelevanceEvaluator(qrels, measures).evaluate(run)
    return result


def assert_same(run: fanfuse.Run, qrels: fanfuse.Qrels, run_dict: dict, qrels_dict: dict) -> None:
    expected = oracle(run_dict, qrels_dict)
    qids, values = fanfuse.evaluate(run, qrels, metrics=list(OURS_TO_TREC))
    assert sorted(qids) == sorted(expected), "evaluated queries differ from pytrec_eval's"
    for ours, theirs in OURS_TO_TREC.items():
        for qid, value in zip(qids, values[ours], strict=False):
            assert value == pytest.approx(expected[qid][theirs], abs=1e-12, rel=0), (ours, qid)


def read_beir_qrels(path: Path) -> dict[str, dict[str, int]]:
    qrels: dict[str, dict[str, int]] = {}
    with path.open() as f:
        for row in list(csv.reader(f, delimiter="\t"))[1:]:
            qrels.setdefault(row[0], {})[row[1]] = int(row[2])
    return qrels


def trec_run_dict(path: Path) -> dict[str, dict[str, float]]:
    run: dict[str, dict[str, float]] = {}
    for line in path.read_text().splitlines():
        qid, _, docid, _, score, _ = line.split()
        run.setdefault(qid, {})[docid] = float(score)
    return run


def test_every_real_run_matches_pytrec_eval(mtrag_dir: Path) -> None:
    for domain in ("clapnq", "cloud"):
        qrels_path = mtrag_dir / "qrels" / domain / "dev.tsv"
        qrels, qrels_dict = fanfuse.read_qrels(str(qrels_path)), read_beir_qrels(qrels_path)
        for path in sorted((mtrag_dir / "runs").glob(f"*_{domain}_*.jsonl")):
            run_dict = {}
            for line in path.read_text().splitlines():
                record = json.loads(line)
                run_dict[record["task_id"]] = {c["document_id"]: c["score"] for c in record["contexts"]}
            assert_same(fanfuse.read_run(str(path)), qrels, run_dict, qrels_dict)


def test_fused_run_is_evaluated_on_its_written_scores(mtrag_dir: Path, tmp_path: Path) -> None:
    runs = [
        str(mtrag_dir / "runs_trec" / f"bge_cloud_{s}.trec") for s in ("lastturn", "rewrite", "questions")
    ]
    out = tmp_path / "fused.trec"
    fanfuse.fuse_files(runs, str(out))
    qrels_path = mtrag_dir / "qrels" / "cloud" / "dev.tsv"
    assert_same(
        fanfuse.read_run(str(out)),
        fanfuse.read_qrels(str(qrels_path)),
        trec_run_dict(out),
        read_beir_qrels(qrels_path),
    )


def test_fused_generated_run_is_evaluated_on_its_written_scores(tmp_path: Path) -> None:
    rng = random.Random(8)
    runs = generated_runs(rng, runs=3, queries=40)
    paths = [write_trec(tmp_path / f"r{r}.trec", run, rng, interleaved=True) for r, run in enumerate(runs)]
    out = tmp_path / "fused.trec"
    fanfuse.fuse_files(paths, str(out))
    written = trec_run_dict(out)
    # Equal RRF scores, which pytrec_eval orders by docid, not by the rank column the kernel wrote.
    assert any(len(set(scores.values())) < len(scores) for scores in written.values())
    qrels_path = Path(write_beir_qrels(tmp_path / "dev.tsv", generated_qrels(rng, runs)))
    assert_same(
        fanfuse.read_run(str(out)), fanfuse.read_qrels(str(qrels_path)), written, read_beir_qrels(qrels_path)
    )


def test_ties_are_ordered_by_docid_descending_like_trec_eval(tmp_path: Path) -> None:
    # Four documents share one score; only "b" is relevant. trec_eval sorts ties by docid descending,
    # so "b" sits at rank 3 (d, c, b, a): recip_rank 1/3 pins the convention.
    run = tmp_path / "run.trec"
    run.write_text("".join(f"q Q0 {d} {i + 1} 1.0 t\n" for i, d in enumerate("abcd")))
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("q 0 b 1\nq 0 z 2\n")
    ours = fanfuse.evaluate(
        fanfuse.read_run(str(run)), fanfuse.read_qrels(str(qrels)), metrics=["mrr", "ndcg@5"]
    )
    theirs = oracle({"q": dict.fromkeys("abcd", 1.0)}, {"q": {"b": 1, "z": 2}})["q"]
    assert ours[1]["mrr"] == [pytest.approx(1 / 3, abs=1e-15)]
    assert theirs["recip_rank"] == pytest.approx(1 / 3, abs=1e-15)
    assert ours[1]["ndcg@5"][0] == pytest.approx(theirs["ndcg_cut_5"], abs=1e-12)


def test_graded_judgments_weigh_ndcg(tmp_path: Path) -> None:
    run = tmp_path / "run.trec"
    run.write_text("q Q0 a 1 3 t\nq Q0 b 2 2 t\nq Q0 c 3 1 t\n")
    qrels = tmp_path / "qrels.tsv"
    qrels.write_text("query-id\tcorpus-id\tscore\nq\ta\t1\nq\tc\t3\nq\tb\t-1\n")
    _qids, values = fanfuse.evaluate(
        fanfuse.read_run(str(run)), fanfuse.read_qrels(str(qrels)), metrics=["ndcg@5"]
    )
    theirs = oracle({"q": {"a": 3.0, "b": 2.0, "c": 1.0}}, {"q": {"a": 1, "c": 3, "b": -1}})["q"]
    assert values["ndcg@5"][0] == pytest.approx(theirs["ndcg_cut_5"], abs=1e-12)
    assert values["ndcg@5"][0] < 0.8  # the grade-3 document at rank 3 costs a lot


def test_unknown_metric_names_what_is_accepted(tmp_path: Path) -> None:
    run = tmp_path / "run.trec"
    run.write_text("q Q0 a 1 3 t\n")
    qrels = tmp_path / "q.txt"
    qrels.write_text("q 0 a 1\n")
    with pytest.raises(fanfuse.InvalidSetting, match="metric 'err@5': unknown name; accepted: NAME"):
        fanfuse.evaluate(fanfuse.read_run(str(run)), fanfuse.read_qrels(str(qrels)), metrics=["err@5"])


@pytest.mark.parametrize(
    ("metric", "why"),
    [
        ("rbp.0", "rbp's persistence must be above 0 and below 1"),
        ("rbp.99999999999999999", "rbp's persistence must be above 0 and below 1"),
        ("ndcg@10-l-1", "the relevance level after -l must be an integer >= 0"),
    ],
)
def test_a_metric_no_value_can_come_of_is_refused_naming_its_part(
    tmp_path: Path, metric: str, why: str
) -> None:
    """A persistence of 0 (precision at 1) or one a float rounds to 1 (every value 0), and a level
    that is no integer (once reported as a bad cut-off), each refused naming what is wrong."""
    run = tmp_path / "run.trec"
    run.write_text("q Q0 a 1 3 t\n")
    qrels = tmp_path / "q.txt"
    qrels.write_text("q 0 a 1\n")
    with pytest.raises(fanfuse.InvalidSetting, match=f"metric '{re.escape(metric)}': {re.escape(why)}"):
        fanfuse.evaluate(fanfuse.read_run(str(run)), fanfuse.read_qrels(str(qrels)), metrics=[metric])
