"""Every fusion method tuned by `fanfuse tune` on the real MT-RAG runs: BM25, BGE and ELSER over the
rewritten questions, per domain; 5-fold cross-validation (seed 0), ndcg@10 on held-out queries,
against the best single run chosen the same way. Prints a Markdown table.

    python benches/mtrag_tune_methods.py [--mtrag ../shared/data/mtrag] [--set rewrite]
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import fanfuse
from fanfuse.tune import tune
from measuring import load_text

MTRAG = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "mtrag"
RETRIEVERS = ("bm25", "bge", "elser")
DOMAINS = ("clapnq", "cloud")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--mtrag", type=Path, default=MTRAG)
    parser.add_argument("--set", default="rewrite", help="the runs' query set: lastturn, rewrite, questions")
    args = parser.parse_args()
    inputs = {}
    for domain in DOMAINS:
        runs = [
            fanfuse.read_run(str(args.mtrag / "runs" / f"{r}_{domain}_{args.set}.jsonl")) for r in RETRIEVERS
        ]
        inputs[domain] = runs, fanfuse.read_qrels(str(args.mtrag / "qrels" / domain / "dev.tsv"))
    print(f"{'+'.join(RETRIEVERS)} ({args.set}); {load_text()}\n")
    columns = " | ".join(f"{d}: held-out (best single), p" for d in DOMAINS)
    print(f"| method | tuned | {columns} | seconds |")
    print("|---|---|" + "---|" * len(DOMAINS) + "---|")
    for method in fanfuse.METHODS + fanfuse.TRAINED_METHODS:
        started = time.perf_counter()
        cells = []
        for domain in DOMAINS:
            runs, qrels = inputs[domain]
            report = tune(runs, qrels, method=method)
            mark = "▲" if report.p_value < 0.05 and report.fused_heldout > report.single_heldout else ""
            cells.append(
                f"{report.fused_heldout:.4f} ({report.single_heldout:.4f}), {report.p_value:.3f}{mark}"
            )
        tuned = ", ".join(fanfuse.METHOD_PARAMETERS[method]) or "-"
        print(f"| {method} | {tuned} | " + " | ".join(cells) + f" | {time.perf_counter() - started:.1f} |")
    print(f"\n{load_text()}")


if __name__ == "__main__":
    main()
