"""`fanfuse tune RUN... --qrels FILE`: cross-validated search of RRF k and per-run weights."""

from __future__ import annotations

import argparse
import json
from dataclasses import asdict
from typing import Any

from fanfuse.cli._common import float_list, guarded, int_from, table
from fanfuse.cli.progress import ProgressBar
from fanfuse.tables import read_any_qrels, read_any_run
from fanfuse.tune import DEFAULT_KS, DEFAULT_WEIGHTS, tune


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "tune",
        help="search RRF k and run weights with k-fold cross-validation over queries",
        description="Grid search of k x per-run weights, chosen on the training folds and scored on the "
        "held-out fold; compared with picking the best single run the same way.",
    )
    parser.add_argument("runs", nargs="+", metavar="RUN", help="run files (at least two)")
    parser.add_argument(
        "--qrels", required=True, help="TREC qrels, BEIR TSV qrels or Parquet (qid, docid, relevance)"
    )
    parser.add_argument("--metric", default="ndcg@10", help="metric to optimise (default ndcg@10)")
    parser.add_argument("--ks", type=float_list, default=list(DEFAULT_KS), help="k values to try")
    parser.add_argument(
        "--weight-levels", type=float_list, default=list(DEFAULT_WEIGHTS), help="weights to try"
    )
    parser.add_argument("--folds", type=int_from(2), default=5, help="cross-validation folds (default 5)")
    parser.add_argument("--seed", type=int_from(0), default=0, help="seed of the fold split (default 0)")
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    parser.set_defaults(run=guarded(run))


def run(args: argparse.Namespace) -> int:
    qrels = read_any_qrels(args.qrels)
    runs = [read_any_run(path) for path in args.runs]
    progress = ProgressBar("tune")
    report = tune(
        runs,
        qrels,
        metric=args.metric,
        ks=args.ks,
        weight_levels=args.weight_levels,
        folds=args.folds,
        seed=args.seed,
        on_step=progress,
    )
    progress.close()
    if args.json:
        print(json.dumps(asdict(report), indent=2))
        return 0
    names = args.runs
    rows = [
        [
            str(f.fold),
            f.fused.describe(names),
            f"{f.fused_heldout:.4f}",
            f.single.describe(names),
            f"{f.single_heldout:.4f}",
        ]
        for f in report.folds
    ]
    print(table(["fold", "chosen fusion", "held-out", "chosen single", "held-out"], rows))
    gain = report.fused_heldout - report.single_heldout
    print(
        f"\n{report.metric} on held-out queries ({report.queries}): "
        f"tuned fusion {report.fused_heldout:.4f} vs best single run {report.single_heldout:.4f}: "
        f"{gain:+.4f} (paired randomization p={report.p_value:.3f})"
    )
    return 0
