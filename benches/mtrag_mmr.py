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
from pathlib import Path

import fanfuse
from fanfuse.index_retriever import open_index
from measuring import markdown_table
from mtrag_bench import HISTORY, REWRITE, answer, data_parser, judged_domain, per_query_values, report_domains

LAMBDAS = (None, 0.9, 0.7, 0.5)  # None: no rerank


def run_domain(data: Path, domain: str, index_dir: Path, limit: int | None, iterations: int) -> list[dict]:
    judged = judged_domain(data, domain, index_dir, limit)
    bm25, qrels, conversations = judged.bm25, judged.qrels, judged.conversations
    qids = list(conversations)
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
    columns = (
        "domain | given | rerank | n | nDCG@10=ndcg@10:.4f | Recall@10=recall@10:.4f | Δ nDCG@10=delta:+.4f "
        "| p:.4f | ms/query=ms_mean:.1f"
    )
    return markdown_table(columns, "lllrrrrrr", rows)


def main(argv: list[str] | None = None) -> int:
    parser = data_parser(__doc__, index_dir=True, iterations=True, json_rows=True)
    return report_domains(
        parser,
        argv,
        lambda args: (
            lambda domain: run_domain(args.data, domain, args.index_dir, args.limit, args.iterations)
        ),
        markdown,
    )


if __name__ == "__main__":
    sys.exit(main())
