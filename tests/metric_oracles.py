"""The oracles of the metric tests, on runs and qrels held as dicts: pytrec_eval where trec_eval defines
the measure, ranx elsewhere. docs/metrics.md says where they disagree and which convention fanfuse
follows; the helpers here feed each oracle the
input on which it computes fanfuse's convention (ranx gets the run without ties, in trec_eval's order)."""

from __future__ import annotations

import tempfile
import warnings
from pathlib import Path

import fanfuse
import pytest

RunDict = dict[str, dict[str, float]]
QrelsDict = dict[str, dict[str, int]]
Values = dict[str, dict[str, float]]  # metric -> qid -> value

# fanfuse's ranx spelling of each trec_eval measure ("K": the cut-off); the trec_eval spelling
# (fanfuse._core.TREC_EVAL_METRICS) is pytrec_eval's own measure name.
RANX_SPELLING = {
    "P_K": "precision@K",
    "recall_K": "recall@K",
    "success_K": "hit_rate@K",
    "map_cut_K": "map@K",
    "ndcg_cut_K": "ndcg@K",
    "recip_rank": "mrr",
    "Rprec": "r-precision",
    "set_P": "precision",
    "set_recall": "recall",
    "set_F": "f1",
    "map": "map",
    "ndcg": "ndcg",
    "bpref": "bpref",
}
# trec_eval's nDCG reads grades as gains whatever the relevance level; fanfuse's -lN removes the
# gain of grades below N (ranx's rule), so these get qrels with those grades set to 0 instead.
GAIN_MEASURES = ("ndcg", "ndcg_cut_K")


def trec_order(docs: dict[str, float]) -> list[str]:
    """trec_eval's reading order: score descending, equal scores by docid descending (byte order)."""
    by_docid = sorted(docs, key=lambda d: d.encode(), reverse=True)
    return sorted(by_docid, key=lambda d: -docs[d])


def tie_free(run: RunDict, depth: int | None = None) -> RunDict:
    """The run rescored n, n-1, ..., 1 in trec_eval's order (cut to `depth`), so no oracle can reorder it."""
    out = {}
    for qid, docs in run.items():
        order = trec_order(docs)[:depth]
        out[qid] = {d: float(len(order) - i) for i, d in enumerate(order)}
    return out


def fanfuse_values(run: RunDict, qrels: QrelsDict, metrics: list[str]) -> Values:
    qids, docids, scores = [], [], []
    for qid, docs in run.items():
        for docid, score in docs.items():
            qids.append(qid)
            docids.append(docid)
            scores.append(score)
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "qrels.txt"
        path.write_text("".join(f"{q} 0 {d} {g}\n" for q, docs in qrels.items() for d, g in docs.items()))
        judged = fanfuse.read_qrels(str(path))
    ours = fanfuse.Run.from_columns(qids, docids, scores)
    found: Values = {}
    for metric in metrics:  # one call each: trec_eval's name and ours for one metric are refused together
        evaluated, values = fanfuse.evaluate(ours, judged, metrics=[metric])
        found[metric] = dict(zip(evaluated, values[metric], strict=True))
    return found


def below_level_to_zero(qrels: QrelsDict, level: int) -> QrelsDict:
    return {q: {d: 0 if 0 <= g < level else g for d, g in docs.items()} for q, docs in qrels.items()}


# A document no run retrieves: judged non-relevant, it changes no gain measure.
UNRETRIEVED = "unretrieved-doc"


def with_a_judged_level(qrels: QrelsDict) -> QrelsDict:
    """The qrels with one non-relevant judgment added to each query whose judgments are all negative.

    trec_eval counts a query's relevance levels only when it has a judgment >= 0; otherwise its nDCG
    reads the count left by the query evaluated before, over a freed buffer, and can loop for hours
    (pytrec_eval shares that state across evaluators). A judged level 0 gives it a count of its own
    and the same nDCG, since a level-0 document adds no gain to the run or to the ideal ranking."""
    return {
        q: docs if any(g >= 0 for g in docs.values()) else {**docs, UNRETRIEVED: 0}
        for q, docs in qrels.items()
    }


def pytrec_eval_values(run: RunDict, qrels: QrelsDict, cut: int, level: int) -> Values:
    """Every trec_eval measure under fanfuse's trec_eval spelling, and the same values under its ranx one."""
    pytrec_eval = pytest.importorskip("pytrec_eval")
    suffix = "" if level == 1 else f"-l{level}"
    out: Values = {}
    for trec in RANX_SPELLING:
        measure = trec.replace("K", str(cut))
        judged = with_a_judged_level(below_level_to_zero(qrels, level)) if trec in GAIN_MEASURES else qrels
        result = pytrec_eval.RelevanceEvaluator(judged, {measure}, relevance_level=level).evaluate(run)
        values = {qid: measures[measure] for qid, measures in result.items()}
        out[measure + suffix] = values
        out[RANX_SPELLING[trec].replace("K", str(cut)) + suffix] = values
    return out


def ranx_metrics(cut: int, level: int, persistences: tuple[str, ...] = ("8", "95")) -> list[str]:
    """ranx's metrics that ranx computes as fanfuse does (not bpref: docs/metrics.md), uncut and at `cut`."""
    names = [n for n in fanfuse._core.METRICS if n not in ("bpref", "rbp")]
    suffix = "" if level == 1 else f"-l{level}"
    cuts = [*names, *(f"{n}@{cut}" for n in names if n != "r-precision")]
    return [m + suffix for m in cuts + [f"rbp.{p}" for p in persistences]]


def ranx_values(run: RunDict, qrels: QrelsDict, metrics: list[str]) -> Values:
    """ranx on the tie-free run, over the queries of both (ranx wants the same queries in both)."""
    ranx = pytest.importorskip("ranx")
    shared = sorted(set(run) & set(qrels))
    if not shared:
        return {m: {} for m in metrics}
    # ranx compiles its numba code again for every new width of the id strings (seconds each): give
    # it ids of one width. The run is tie-free, so the ids' order no longer matters.
    alias: dict[str, str] = {}
    fixed = lambda name: alias.setdefault(name, f"{len(alias):012d}")  # noqa: E731
    tied_free = tie_free({q: run[q] for q in shared})
    ranx_run = ranx.Run({fixed(q): {fixed(d): s for d, s in tied_free[q].items()} for q in shared})
    ranx_qrels = ranx.Qrels({fixed(q): {fixed(d): g for d, g in qrels[q].items()} for q in shared})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # numba's warnings about its own parallel loops
        ranx.evaluate(ranx_qrels, ranx_run, metrics, return_mean=False)
    return {m: {q: float(ranx_run.scores[m][alias[q]]) for q in shared} for m in metrics}


def ranx_rbp_at(run: RunDict, qrels: QrelsDict, metric: str, cut: int) -> dict[str, float]:
    """`metric` (an rbp) cut at k, which ranx lacks: ranx's value on the run's first k documents."""
    return ranx_values(tie_free(run, depth=cut), qrels, [metric])[metric]


def assert_equal_per_query(ours: Values, theirs: Values, oracle: str) -> None:
    for metric, expected in theirs.items():
        assert set(ours[metric]) == set(expected), f"{metric}: evaluated queries differ from {oracle}'s"
        for qid, value in expected.items():
            assert ours[metric][qid] == pytest.approx(value, abs=1e-12, rel=0), (oracle, metric, qid)
