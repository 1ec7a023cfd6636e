"""Coordinate ascent against the full grid in `fanfuse tune`: time and held-out score on 3 runs (the
real MT-RAG runs, and generated runs), and coordinate ascent alone on 8 generated runs, where the
grid (5 weight levels ^ 8 runs) is out of reach. Same folds, seed and metric for both searches.

    python benches/tune_search.py [--queries 500] [--mtrag ../shared/data/mtrag]
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import fanfuse
from fanfuse.tune import tune
from fanfuse.tune.space import DEFAULT_KS, DEFAULT_WEIGHTS, weight_grid
from measuring import load_text, machine
from tune_workload import tune_inputs

MTRAG = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "mtrag"


def compare(label: str, runs: list[fanfuse.Run], qrels: fanfuse.Qrels, method: str = "rrf") -> None:
    rows = []
    for search in ("grid", "coordinate"):
        started = time.perf_counter()
        report = tune(runs, qrels, method=method, search=search)
        seconds = time.perf_counter() - started
        rows.append((search, seconds, report))
        print(
            f"{label} {method} {search:10s}: {seconds:7.2f} s, {report.fusions:5d} fusions, held-out "
            f"{report.metric} {report.fused_heldout:.4f} (best single run {report.single_heldout:.4f}, "
            f"p={report.p_value:.3f}); {load_text()}"
        )
    (_, grid_s, grid), (_, coord_s, coord) = rows
    print(
        f"{label} {method}: coordinate ascent takes {coord_s / grid_s:.2f} of the grid's time; held-out "
        f"{coord.fused_heldout - grid.fused_heldout:+.4f} against the grid"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--queries", type=int, default=500, help="generated queries (default 500)")
    parser.add_argument("--mtrag", type=Path, default=MTRAG, help="the MT-RAG data folder")
    args = parser.parse_args()
    print(f"machine: {machine()}\n5-fold CV, seed 0, ndcg@10")
    print(f"default levels: k {len(DEFAULT_KS)}, weights {len(DEFAULT_WEIGHTS)} per run")
    if args.mtrag.is_dir():
        for domain in ("clapnq", "cloud"):
            runs = [
                fanfuse.read_run(str(args.mtrag / "runs" / f"{r}_{domain}_rewrite.jsonl"))
                for r in ("bm25", "bge", "elser")
            ]
            qrels = fanfuse.read_qrels(str(args.mtrag / "qrels" / domain / "dev.tsv"))
            compare(f"MT-RAG {domain} bm25+bge+elser (rewrite)", runs, qrels)
    else:
        print(f"MT-RAG data not found at {args.mtrag}: generated runs only")
    runs, qrels, _, _ = tune_inputs(3, args.queries)
    compare(f"generated 3 runs x {args.queries} queries", runs, qrels)
    runs, qrels, _, _ = tune_inputs(8, args.queries)
    grid = len(weight_grid(8, DEFAULT_WEIGHTS)) * len(DEFAULT_KS)
    started = time.perf_counter()
    report = tune(runs, qrels, search="coordinate")
    seconds = time.perf_counter() - started
    per_fusion = seconds / report.fusions
    print(
        f"generated 8 runs x {args.queries} queries rrf coordinate: {seconds:.2f} s, "
        f"{report.fusions} fusions, "
        f"held-out {report.fused_heldout:.4f} (best single run {report.single_heldout:.4f}, "
        f"p={report.p_value:.3f}); the grid would fuse {grid:,} configurations, about "
        f"{grid * per_fusion / 3600:.1f} h at this rate; {load_text()}"
    )


if __name__ == "__main__":
    main()
