"""Which variants the dense side searches: every variant against the question and the sentence-like
variants only (what `fanfuse.open_index` does: `DENSE_SKIPPED_SOURCES` for BM25 alone), on real
MT-RAG data; nDCG@10, paired p, and the CPU a search costs.

For each domain and each way of asking (the last turn alone, the last turn with its history, the
human rewrite) three retrievers answer every judged query: the default's retrievers with the
question alone (`max_variants=1`), the default with every variant sent to the dense side too, and
the default as `open_index` builds it. Each has its own dense retriever (its own query-vector
cache), so every question is embedded by each: "CPU ms" is the process CPU time per search (every
thread), measured query by query. p: the two-sided paired randomization test of per-query nDCG@10
(10,000 sign flips, seed 0), the default against every variant to dense.

    .venv/bin/python benches/mtrag_routing.py             # the table (docs/mtrag-retrieval.md)
    .venv/bin/python benches/mtrag_routing.py --limit 5   # a quick smoke run
    .venv/bin/python benches/mtrag_routing.py --dense-skipped heuristic,feedback,history-topic
        # the default with another routing: the sources named go to BM25 alone
"""

from __future__ import annotations

import argparse
import statistics
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import fanfuse
from fanfuse import MultiQueryRetriever
from fanfuse.index_retriever import default_retrievers, open_index
from fanfuse.multiquery.plain_text import PlainTextQueries
from fanfuse.retrievers.tantivy_index import TantivyRetriever
from measuring import markdown_table
from mtrag_bench import (
    HISTORY,
    LAST,
    REWRITE,
    add_routing_flag,
    answer,
    data_parser,
    default_search_over,
    judged_domain,
    per_query_values,
    report_domains,
    route,
)
from mtrag_indexes import CACHE_DIR

SINGLE, EVERY, DEFAULT = "question alone", "every variant to dense", "default"


def every_variant_to_dense(bm25: TantivyRetriever) -> MultiQueryRetriever:
    """The default with no routing: the dense retrievers search every variant's plain text."""
    retrievers = {
        name: PlainTextQueries(r.retriever) if isinstance(r, PlainTextQueries) else r
        for name, r in default_retrievers(bm25).items()
    }
    return default_search_over(bm25, retrievers)


MAKERS: dict[str, Callable[[TantivyRetriever], MultiQueryRetriever]] = {
    SINGLE: lambda bm25: open_index(bm25, top_k=10, max_variants=1),
    EVERY: every_variant_to_dense,
    DEFAULT: lambda bm25: open_index(bm25, top_k=10),
}


def run_domain(
    data: Path, domain: str, limit: int | None, iterations: int, index_dir: Path = CACHE_DIR
) -> list[dict[str, Any]]:
    judged = judged_domain(data, domain, index_dir, limit)
    bm25, qrels, conversations = judged.bm25, judged.qrels, judged.conversations
    qids = list(conversations)
    rows = []
    for given in (LAST, HISTORY, REWRITE):
        ndcg: dict[str, list[float]] = {}
        cpu: dict[str, float] = {}
        for name, make in MAKERS.items():
            with make(bm25) as retriever:
                run, costs = answer(retriever, conversations, given)
            ndcg[name] = per_query_values(run, qrels, qids)["ndcg@10"]
            cpu[name] = statistics.fmean(costs)
        rows.append(
            {
                "domain": domain,
                "given": given,
                "n": len(qids),
                **{f"ndcg {name}": statistics.fmean(values) for name, values in ndcg.items()},
                "delta": statistics.fmean(ndcg[DEFAULT]) - statistics.fmean(ndcg[EVERY]),
                "p": fanfuse.randomization_test(ndcg[DEFAULT], ndcg[EVERY], iterations=iterations),
                **{f"cpu {name}": ms for name, ms in cpu.items()},
            }
        )
    return rows


def markdown(rows: list[dict[str, Any]]) -> str:
    names = (SINGLE, EVERY, DEFAULT)
    columns = " | ".join(
        [
            "domain | asked=given | n",
            *(f"nDCG@10 {name}=ndcg {name}:.4f" for name in names),
            "delta:+.4f | p:.3f",
            *(f"CPU ms {name}=cpu {name}:.1f" for name in names),
            f"{DEFAULT} / {SINGLE}=ratio",
        ]
    )
    shown = ({**r, "ratio": f"{r[f'cpu {DEFAULT}'] / r[f'cpu {SINGLE}']:.2f}x"} for r in rows)
    return markdown_table(columns, "llrrrrrrrrrr", shown)


def main(argv: list[str] | None = None) -> int:
    parser = data_parser(__doc__, index_dir=True, iterations=True, json_rows=True)
    add_routing_flag(parser)

    def rows_for(args: argparse.Namespace) -> Callable[[str], list[dict[str, Any]]]:
        def rows_of(domain: str) -> list[dict[str, Any]]:
            with route(args.dense_skipped):
                return run_domain(args.data, domain, args.limit, args.iterations, args.index_dir)

        return rows_of

    return report_domains(parser, argv, rows_for, markdown)


if __name__ == "__main__":
    sys.exit(main())
