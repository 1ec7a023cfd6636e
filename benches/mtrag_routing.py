"""Which variants the dense side searches: every variant (as before) against the question and the
sentence-like variants only (`fanfuse.open_index` now: `DENSE_SKIPPED_SOURCES` for BM25 alone), on
real MT-RAG data; nDCG@10, paired p, and the CPU a search costs.

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
import contextlib
import statistics
import sys
import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import fanfuse
from fanfuse import MultiQueryRetriever, index_retriever
from fanfuse.index_retriever import (
    DEFAULT_RETRIEVER_WEIGHTS,
    DEFAULT_VARIANT_WEIGHTS,
    DENSE_SKIPPED_SOURCES,
    default_expander,
    default_retrievers,
    open_index,
)
from fanfuse.multiquery.plain_text import PlainTextQueries
from fanfuse.retrievers.tantivy_index import TantivyRetriever
from mtrag_conversation import HISTORY, LAST, REWRITE, Conversation, read_conversations
from mtrag_indexes import CACHE_DIR, neural_dense, pool_index
from mtrag_retrieval import data_missing, data_parser, per_query_values, report

SINGLE, EVERY, DEFAULT = "question alone", "every variant to dense", "default"


def every_variant_to_dense(bm25: TantivyRetriever) -> MultiQueryRetriever:
    """The default as it was: the dense retrievers search every variant's plain text."""
    retrievers = {
        name: PlainTextQueries(r.retriever) if isinstance(r, PlainTextQueries) else r
        for name, r in default_retrievers(bm25).items()
    }
    return MultiQueryRetriever(
        retrievers,
        expander=default_expander(bm25),
        variant_weights=list(DEFAULT_VARIANT_WEIGHTS),
        retriever_weights={n: w for n, w in DEFAULT_RETRIEVER_WEIGHTS.items() if n in retrievers},
        top_k=10,
    )


MAKERS: dict[str, Callable[[TantivyRetriever], MultiQueryRetriever]] = {
    SINGLE: lambda bm25: open_index(bm25, top_k=10, max_variants=1),
    EVERY: every_variant_to_dense,
    DEFAULT: lambda bm25: open_index(bm25, top_k=10),
}


def answer(
    retriever: MultiQueryRetriever, conversations: Mapping[str, Conversation], given: str
) -> tuple[dict[str, list[str]], list[float]]:
    def search(c: Conversation) -> list[str]:
        if given == REWRITE:
            return retriever.search(c.rewrite).ids
        return retriever.search(c.last, history=list(c.history) if given == HISTORY else None).ids

    retriever.search("a warm up question about nothing in particular")  # sessions, threads
    run, cpu = {}, []
    for qid, conversation in conversations.items():
        begin = time.process_time()
        run[qid] = search(conversation)
        cpu.append((time.process_time() - begin) * 1e3)
    return run, cpu


def run_domain(
    data: Path, domain: str, limit: int | None, iterations: int, index_dir: Path = CACHE_DIR
) -> list[dict[str, Any]]:
    bm25 = pool_index(data, domain, index_dir)
    neural_dense(bm25)
    qrels = fanfuse.read_qrels(str(data / "qrels" / domain / "dev.tsv"))
    conversations = read_conversations(data, domain, set(qrels.qids()))
    qids = list(conversations)[:limit]
    conversations = {q: conversations[q] for q in qids}
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
    lines = [
        f"| domain | asked | n | nDCG@10 {SINGLE} | nDCG@10 {EVERY} | nDCG@10 {DEFAULT} | delta | p "
        f"| CPU ms {SINGLE} | CPU ms {EVERY} | CPU ms {DEFAULT} | {DEFAULT} / {SINGLE} |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        lines.append(
            f"| {r['domain']} | {r['given']} | {r['n']} | {r[f'ndcg {SINGLE}']:.4f} "
            f"| {r[f'ndcg {EVERY}']:.4f} | {r[f'ndcg {DEFAULT}']:.4f} | {r['delta']:+.4f} | {r['p']:.3f} "
            f"| {r[f'cpu {SINGLE}']:.1f} | {r[f'cpu {EVERY}']:.1f} | {r[f'cpu {DEFAULT}']:.1f} "
            f"| {r[f'cpu {DEFAULT}'] / r[f'cpu {SINGLE}']:.2f}x |"
        )
    return "\n".join(lines)


def add_routing_flag(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--dense-skipped",
        type=lambda text: tuple(s for s in text.split(",") if s),
        help="comma-separated variant sources the default's dense side leaves to BM25 "
        f"(default: {','.join(DENSE_SKIPPED_SOURCES)}, the library's)",
    )


@contextlib.contextmanager
def route(skipped: tuple[str, ...] | None) -> Iterator[None]:
    """The default built inside leaves `skipped` to BM25 (None: the library's routing)."""
    before = index_retriever.DENSE_SKIPPED_SOURCES
    if skipped is not None:
        index_retriever.DENSE_SKIPPED_SOURCES = skipped
    try:
        yield
    finally:
        index_retriever.DENSE_SKIPPED_SOURCES = before


def main(argv: list[str] | None = None) -> int:
    parser = data_parser(__doc__)
    parser.add_argument("--index-dir", type=Path, default=CACHE_DIR, help="where the indexes are kept")
    parser.add_argument("--iterations", type=int, default=10_000, help="sign flips of the randomization test")
    parser.add_argument("--json", type=Path, help="also write the rows as JSON here")
    add_routing_flag(parser)
    args = parser.parse_args(argv)
    if data_missing(args.data):
        return 2
    started = time.perf_counter()
    with route(args.dense_skipped):
        rows = [
            row
            for domain in args.domains
            for row in run_domain(args.data, domain, args.limit, args.iterations, args.index_dir)
        ]
    report(rows, markdown(rows), started, args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
