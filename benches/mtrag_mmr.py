"""The MMR rerank on MT-RAG: nDCG@10 and Recall@10 of the default search with and without
`rerank="mmr"` at several `mmr_lambda`, on each domain, given the last turn and its history and given
the human rewrite; p: the two-sided paired randomization test of per-query nDCG@10 (10,000 sign
flips) against the same search without the rerank. Every row is `fanfuse.open_index` over the
domain's index (neural vectors stored), top 10 of a rerank window of 20 fused hits.

    .venv/bin/python benches/mtrag_mmr.py            # make mtrag-mmr
    .venv/bin/python benches/mtrag_mmr.py --limit 5  # a quick smoke run
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

import fanfuse
from fanfuse.index_retriever import open_index
from mtrag_conversation import HISTORY, REWRITE, answer, read_conversations
from mtrag_indexes import CACHE_DIR, neural_dense, pool_index
from mtrag_retrieval import data_missing, data_parser, per_query_values, report

LAMBDAS = (None, 0.9, 0.7, 0.5)  # None: no rerank


def run_domain(data: Path, domain: str, index_dir: Path, limit: int | None, iterations: int) -> list[dict]:
    bm25 = pool_index(data, domain, index_dir)
    neural_dense(bm25)
    qrels = fanfuse.read_qrels(str(data / "qrels" / domain / "dev.tsv"))
    conversations = read_conversations(data, domain, set(qrels.qids()))
    qids = list(conversations)[:limit]
    conversations = {q: conversations[q] for q in qids}
    rows = []
    for given in (HISTORY, REWRITE):
        plain: list[float] = []
        for mmr_lambda in LAMBDAS:
            rerank = None if mmr_lambda is None else {"rerank": "mmr", "mmr_lambda": mmr_lambda}
            with open_index(bm25, top_k=10, **(rerank or {})) as retriever:
                run, latencies = answer(retriever, conversations, given)
            values = per_query_values(run, qrels, qids)
            if mmr_lambda is None:
                plain = values["ndcg@10"]
            rows.append(
                {
                    "domain": domain,
                    "given": given,
                    "rerank": "none" if mmr_lambda is None else f"mmr, lambda {mmr_lambda:g}",
                    "n": len(qids),
                    **{m: statistics.fmean(v) for m, v in values.items()},
                    "delta": None
                    if mmr_lambda is None
                    else statistics.fmean(values["ndcg@10"]) - statistics.fmean(plain),
                    "p": None
                    if mmr_lambda is None
                    else fanfuse.randomization_test(values["ndcg@10"], plain, iterations=iterations),
                    "ms_mean": statistics.fmean(latencies),
                }
            )
    return rows


def markdown(rows: list[dict]) -> str:
    lines = [
        "| domain | given | rerank | n | nDCG@10 | Recall@10 | Δ nDCG@10 | p | ms/query |",
        "|---|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        delta = "" if r["delta"] is None else f"{r['delta']:+.4f}"
        p = "" if r["p"] is None else f"{r['p']:.4f}"
        lines.append(
            f"| {r['domain']} | {r['given']} | {r['rerank']} | {r['n']} | {r['ndcg@10']:.4f} "
            f"| {r['recall@10']:.4f} | {delta} | {p} | {r['ms_mean']:.1f} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = data_parser(__doc__)
    parser.add_argument("--index-dir", type=Path, default=CACHE_DIR, help="where the indexes are kept")
    parser.add_argument("--iterations", type=int, default=10_000, help="sign flips of the randomization test")
    parser.add_argument("--json", type=Path, help="also write the rows as JSON here")
    args = parser.parse_args(argv)
    if data_missing(args.data):
        return 2
    started = time.perf_counter()
    rows = [
        row
        for domain in args.domains
        for row in run_domain(args.data, domain, args.index_dir, args.limit, args.iterations)
    ]
    report(rows, markdown(rows), started, args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
