"""Every metric equals its oracle to 1e-12 per query, on generated runs with graded qrels and ties and
on the real MT-RAG runs: pytrec_eval where trec_eval defines the measure (the run as given, ties and
all), ranx elsewhere (the run without ties, in trec_eval's order)."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import fanfuse
import pytest
from hypothesis import given
from hypothesis import strategies as st
from metric_oracles import (
    QrelsDict,
    RunDict,
    assert_equal_per_query,
    fanfuse_values,
    pytrec_eval_values,
    ranx_metrics,
    ranx_rbp_at,
    ranx_values,
)
from rrf_strategies import examples

# Ids whose byte order tests the docid-descending tie-break: shared prefixes, case, a non-ASCII id.
POOL = ["a", "b", "d1", "d10", "d11", "d2", "D1", "x-1", "x_1", "é"]
JUDGED_ONLY = ["j1", "j2", "j3"]
# Few distinct scores, all exact in single precision (trec_eval reads scores as floats), so ties abound.
SCORES = [0.0, 0.25, 0.5, 1.0, 2.0, 3.0]
# -1 marks a pooled document left unjudged (trec_eval's reading; see docs/metrics.md).
GRADES = [-1, 0, 0, 1, 1, 2, 3]


@st.composite
def judged_runs(draw: st.DrawFn) -> tuple[RunDict, QrelsDict]:
    qids = [f"q{i}" for i in range(draw(st.integers(1, 4)))]
    run_qids = draw(st.lists(st.sampled_from(qids), min_size=1, unique=True))
    run = {
        q: draw(st.dictionaries(st.sampled_from(POOL), st.sampled_from(SCORES), min_size=1)) for q in run_qids
    }
    judged_qids = draw(st.lists(st.sampled_from(qids), min_size=1, unique=True))
    grades = st.dictionaries(st.sampled_from(POOL + JUDGED_ONLY), st.sampled_from(GRADES), min_size=1)
    return run, {q: draw(grades) for q in judged_qids}


@examples(0.004)  # share of the Hypothesis profile (CI=true: 100 of 25k; each calls an oracle)
@given(judged_runs(), st.sampled_from([1, 2, 3, 5, 10]), st.sampled_from([1, 2]))
def test_trec_eval_measures_equal_pytrec_eval(case: tuple[RunDict, QrelsDict], cut: int, level: int) -> None:
    run, qrels = case
    expected = pytrec_eval_values(run, qrels, cut, level)
    assert_equal_per_query(fanfuse_values(run, qrels, list(expected)), expected, "pytrec_eval")


def test_a_query_judged_only_unjudged_after_a_graded_one_equals_pytrec_eval() -> None:
    """The oracle's nDCG of a query whose only judgments are -1 does not depend on (or hang after) the
    query it evaluated before."""
    graded = ({"q0": {"a": 1.0, "b": 0.5}}, {"q0": {"a": 3, "b": 2, "c": 1}})
    only_unjudged = ({"q0": {"a": 0.0}}, {"q0": {"a": -1}})
    for run, qrels in (graded, only_unjudged, graded, only_unjudged):
        expected = pytrec_eval_values(run, qrels, 1, 1)
        assert_equal_per_query(fanfuse_values(run, qrels, list(expected)), expected, "pytrec_eval")


@examples(0.004)  # share of the Hypothesis profile (CI=true: 100 of 25k; each calls an oracle)
@given(judged_runs(), st.sampled_from([1, 2, 3, 5, 10]), st.sampled_from([1, 2]))
def test_ranx_metrics_equal_ranx_on_the_run_without_ties(
    case: tuple[RunDict, QrelsDict], cut: int, level: int
) -> None:
    run, qrels = case
    metrics = ranx_metrics(cut, level)
    expected = ranx_values(run, qrels, metrics)
    suffix = "" if level == 1 else f"-l{level}"
    expected[f"rbp.8@{cut}{suffix}"] = ranx_rbp_at(run, qrels, f"rbp.8{suffix}", cut)
    # fanfuse reads the tied run as ranx reads the tie-free one.
    assert_equal_per_query(fanfuse_values(run, qrels, list(expected)), expected, "ranx")


def test_bpref_follows_trec_eval_where_ranx_differs(tmp_path: Path) -> None:
    # q1: no document judged non-relevant (trec_eval: 1 per relevant document; ranx: NaN).
    # q2: a negative grade marks a pooled, unjudged document: skipped (ranx counts it non-relevant).
    run = {"q1": {"a": 2.0, "x": 1.0}, "q2": {"n": 3.0, "a": 2.0, "b": 1.0}}
    qrels = {"q1": {"a": 1}, "q2": {"n": -1, "a": 1, "b": 0}}
    ours = fanfuse_values(run, qrels, ["bpref"])["bpref"]
    assert ours == {"q1": 1.0, "q2": 1.0}
    expected = pytrec_eval_values(run, qrels, 5, 1)["bpref"]
    assert ours == expected


def judgments(path: Path) -> QrelsDict:
    qrels: QrelsDict = {}
    with path.open() as f:
        for row in list(csv.reader(f, delimiter="\t"))[1:]:
            qrels.setdefault(row[0], {})[row[1]] = int(row[2])
    return qrels


def read_mtrag_run(path: Path) -> RunDict:
    run: RunDict = {}
    for line in path.read_text().splitlines():
        record = json.loads(line)
        if record["contexts"]:
            run[record["task_id"]] = {c["document_id"]: c["score"] for c in record["contexts"]}
    return run


def test_every_metric_on_the_real_runs(mtrag_dir: Path) -> None:
    for domain in ("clapnq", "cloud"):
        qrels = judgments(mtrag_dir / "qrels" / domain / "dev.tsv")
        for path in sorted((mtrag_dir / "runs").glob(f"*_{domain}_*.jsonl")):
            run = read_mtrag_run(path)
            expected = pytrec_eval_values(run, qrels, 10, 1) | pytrec_eval_values(run, qrels, 5, 1)
            expected |= ranx_values(run, qrels, list(dict.fromkeys(ranx_metrics(5, 1) + ranx_metrics(10, 1))))
            ours = fanfuse_values(run, qrels, list(expected))
            assert_equal_per_query(ours, expected, f"oracles on {path.name}")


def test_every_metric_on_a_real_fused_run(mtrag_dir: Path, tmp_path: Path) -> None:
    runs = [str(mtrag_dir / "runs_trec" / f"elser_clapnq_{s}.trec") for s in ("lastturn", "rewrite")]
    out = tmp_path / "fused.trec"
    fanfuse.fuse_files(runs, str(out), top_k=10)
    run: RunDict = {}
    for line in out.read_text().splitlines():
        qid, _, docid, _, score, _ = line.split()
        run.setdefault(qid, {})[docid] = float(score)
    qrels = judgments(mtrag_dir / "qrels" / "clapnq" / "dev.tsv")
    expected = pytrec_eval_values(run, qrels, 10, 1) | ranx_values(run, qrels, ranx_metrics(10, 1))
    assert_equal_per_query(fanfuse_values(run, qrels, list(expected)), expected, "oracles on the fused run")


def test_real_scores_never_tie_only_in_single_precision(mtrag_dir: Path) -> None:
    """trec_eval compares scores as single-precision floats, fanfuse (like ranx) as doubles: they read
    the same order as long as no two scores of a query differ only beyond single precision. Holds for
    the MT-RAG runs and their fusions, so the equalities above cover those runs' numbers."""
    np = pytest.importorskip("numpy")
    runs = [fanfuse.read_run(str(p)) for p in sorted((mtrag_dir / "runs_trec").glob("*.trec"))]
    by_source = {r.name.rsplit("_", 1)[0]: [] for r in runs}
    for run in runs:
        by_source[run.name.rsplit("_", 1)[0]].append(run)
    fused = [fanfuse.fuse_runs(group, method=m) for group in by_source.values() for m in ("rrf", "combsum")]
    for run in runs + fused:
        qids, _, _, scores = run.columns()
        by_query: dict[str, list[float]] = {}
        for qid, score in zip(qids, scores, strict=True):
            by_query.setdefault(qid, []).append(score)
        for qid, values in by_query.items():
            doubles = np.unique(np.array(values))
            assert len(np.unique(doubles.astype(np.float32))) == len(doubles), (run.name, qid)
