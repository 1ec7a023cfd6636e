"""Generated runs with something to tune: per query a pool of documents, a few relevant, and runs of
different quality (a run's score is relevance times its quality plus noise), so that weights matter."""

from __future__ import annotations

import os
import random
import tempfile

import fanfuse

POOL, RELEVANT, DEPTH = 200, 8, 100


def tune_inputs(
    n_runs: int, n_queries: int, seed: int = 0
) -> tuple[list[fanfuse.Run], fanfuse.Qrels, dict[str, dict[str, float]], list[dict[str, dict[str, float]]]]:
    """The runs and qrels as fanfuse objects, and the same as dicts (qrels, runs) for ranx."""
    rng = random.Random(seed)
    qualities = [0.3 + 1.2 * r / max(n_runs - 1, 1) for r in range(n_runs)]
    runs: list[dict[str, dict[str, float]]] = [{} for _ in range(n_runs)]
    qrels: dict[str, dict[str, float]] = {}
    for q in range(n_queries):
        qid = f"q{q}"
        relevant = rng.sample(range(POOL), RELEVANT)
        qrels[qid] = {f"d{q}-{d}": rng.choice((1, 1, 2)) for d in relevant}
        for r, quality in enumerate(qualities):
            scores = {d: quality * (d in relevant) + rng.gauss(0.0, 1.0) for d in range(POOL)}
            top = sorted(scores, key=scores.__getitem__, reverse=True)[:DEPTH]
            runs[r][qid] = {f"d{q}-{d}": round(scores[d], 6) for d in top}
    core_runs = []
    for r, run in enumerate(runs):
        rows = [(q, d, s) for q, hits in run.items() for d, s in hits.items()]
        columns = ([row[0] for row in rows], [row[1] for row in rows], [row[2] for row in rows])
        core_runs.append(fanfuse.Run.from_columns(*columns, name=f"run{r}"))
    with tempfile.TemporaryDirectory() as directory:
        path = os.path.join(directory, "qrels.txt")
        with open(path, "w", encoding="utf-8") as out:
            out.writelines(f"{q} 0 {d} {g}\n" for q, judged in qrels.items() for d, g in judged.items())
        core_qrels = fanfuse.read_qrels(path)
    return core_runs, core_qrels, qrels, runs
