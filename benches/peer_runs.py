"""Whole runs: fusing TREC run files (fanfuse, ranx, trectools) and evaluating a run (fanfuse,
pytrec_eval, ranx), each timed from the files or dicts it is given to its result in memory.

Fusion reads `RUNS` TREC files of `DOCS` hits per query (scores strictly descending, lists overlapping
as query variants' do) and fuses them by RRF, k = 60, keeping 100 hits a query: fanfuse `read_run` +
`fuse_runs`; ranx `Run.from_file` + `fuse`; trectools `TrecRun` + `fusion.reciprocal_rank_fusion`.
Equal fused scores come in another order in each engine; `runs_agree` allows that.
Evaluation: the run and qrels of `bench_eval.generate`, five measures every tool defines alike.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import fanfuse
from scale_fuse import generate

KEEP = 100
# trec_eval name -> fanfuse name -> ranx name.
MEASURES = {
    "P_10": ("precision@10", "precision@10"),
    "recall_10": ("recall@10", "recall@10"),
    "map": ("map", "map"),
    "recip_rank": ("mrr", "mrr"),
    "ndcg_cut_10": ("ndcg@10", "ndcg@10"),
}


def write_runs(directory: Path, queries: int) -> list[str]:
    """scale_fuse.py's run files: RUNS runs over a shared pool, scores strictly descending."""
    return generate(directory, queries)


def fusers(paths: list[str]) -> dict[str, Callable[[], dict[str, list[str]]]]:
    """Each engine's read + fuse of `paths`, returning {qid: ids best first}."""

    def ours() -> dict[str, list[str]]:
        return {q: list(hits)[:KEEP] for q, hits in fanfuse_scores(paths, KEEP).items()}

    def ranx() -> dict[str, list[str]]:
        from ranx import Run, fuse

        fused = fuse([Run.from_file(p, kind="trec") for p in paths], method="rrf", params={"k": 60})
        return {q: sorted(d, key=d.__getitem__, reverse=True)[:KEEP] for q, d in fused.to_dict().items()}

    def trectools() -> dict[str, list[str]]:
        from trectools import TrecRun, fusion

        fused = fusion.reciprocal_rank_fusion([TrecRun(p) for p in paths], k=60, max_docs=KEEP).run_data
        return {str(q): list(group["docid"]) for q, group in fused.groupby("query", sort=False)}

    return {"fanfuse": ours, "ranx": ranx, "trectools": trectools}


def fanfuse_scores(paths: list[str], keep: int | None = None) -> dict[str, dict[str, float]]:
    """fanfuse's fused run of `paths` as {qid: {id: score}} in rank order (`keep`: per query)."""
    qids, ids, _, scores = fanfuse.fuse_runs([fanfuse.read_run(p) for p in paths], top_k=keep).columns()
    out: dict[str, dict[str, float]] = {}
    for qid, doc, score in zip(qids, ids, scores, strict=True):
        out.setdefault(qid, {})[doc] = score
    return out


def runs_agree(paths: list[str], fused: dict[str, list[str]]) -> bool:
    """Whether every query's ids are fanfuse's top KEEP, equal scores in any order (trectools puts
    them by ascending docid, fanfuse's runs by descending docid, ranx as its dict has them)."""
    scores = fanfuse_scores(paths)
    if fused.keys() != scores.keys():
        return False
    for qid, ids in fused.items():
        expected = list(scores[qid].values())[:KEEP]
        found = [scores[qid].get(doc, -1.0) for doc in ids]
        if len(found) != len(expected):
            return False
        if any(abs(a - b) > 1e-12 * b for a, b in zip(found, expected, strict=True)):
            return False
    return True


def warm_ranx() -> None:
    """numba compiles ranx's kernels on first use: outside the timing."""
    from ranx import Qrels, Run, evaluate, fuse

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fuse([Run({"q": {"a": 2.0, "b": 1.0}}), Run({"q": {"b": 2.0, "c": 1.0}})], method="rrf")
        evaluate(Qrels({"q": {"a": 1}}), Run({"q": {"a": 2.0, "b": 1.0}}), [m[1] for m in MEASURES.values()])


def evaluators(
    run: dict[str, dict[str, float]], qrels: dict[str, dict[str, int]], tmp: Path
) -> dict[str, Any]:
    """Each tool's evaluation of `run`, returning {trec_eval measure: mean}."""
    from bench_eval import tie_free

    path = tmp / "qrels.txt"
    path.write_text("".join(f"{q} 0 {d} {g}\n" for q, docs in qrels.items() for d, g in docs.items()))
    rows = ((q, d, s) for q, docs in run.items() for d, s in docs.items())
    columns = [list(c) for c in zip(*rows, strict=True)]
    ours_run, ours_qrels = fanfuse.Run.from_columns(*columns), fanfuse.read_qrels(str(path))

    def ours() -> dict[str, float]:
        names = [fanfuse_name for fanfuse_name, _ in MEASURES.values()]
        qids, values = fanfuse.evaluate(ours_run, ours_qrels, metrics=names)
        return {trec: sum(values[f]) / len(qids) for trec, (f, _) in MEASURES.items()}

    import pytrec_eval

    # Every tool's inputs are built before its timing starts: fanfuse's Run and Qrels above,
    # pytrec_eval's evaluator (it indexes the qrels) here, ranx's Qrels and Run below.
    evaluator = pytrec_eval.RelevanceEvaluator(qrels, set(MEASURES))

    def pytrec() -> dict[str, float]:
        result = evaluator.evaluate(run)
        return {m: sum(r[m] for r in result.values()) / len(result) for m in MEASURES}

    from ranx import Qrels, Run

    # ranx breaks score ties its own way: it gets the run rescored in trec_eval's order.
    ranx_qrels, ranx_run = Qrels(qrels), Run(tie_free(run))

    def ranx() -> dict[str, float]:
        from ranx import evaluate

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            means = evaluate(ranx_qrels, ranx_run, [r for _, r in MEASURES.values()])
        return {trec: float(means[r]) for trec, (_, r) in MEASURES.items()}

    return {"fanfuse": ours, "pytrec_eval": pytrec, "ranx": ranx}
