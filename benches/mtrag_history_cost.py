"""What the history costs a search: the default (`fanfuse.open_index`) searching each MT-RAG question
with history twice, given the last turn alone and given it with its history, the two interleaved (their
order alternating question by question) so that both see the same load; the ratio of the summed times
and the median of the per-question ratios. The query-vector cache is off (`FANFUSE_QUERY_CACHE_SIZE=0`,
set here): with it, the second search of a question would reuse the first's vectors.

    .venv/bin/python benches/mtrag_history_cost.py             # make mtrag-history-cost
    .venv/bin/python benches/mtrag_history_cost.py --limit 20  # a quick run
    .venv/bin/python benches/mtrag_history_cost.py --dense-skipped heuristic,feedback,history-topic
        # another routing (benches/mtrag_routing.py)
"""

from __future__ import annotations

import contextlib
import os
import statistics
import sys
import time
from collections.abc import Iterator
from pathlib import Path

from fanfuse.index_retriever import open_index
from mtrag_bench import data_missing, data_parser, judged_domain, report
from mtrag_routing import add_routing_flag, route

WARM_UP = 5


def run_domain(data: Path, domain: str, index_dir: Path, limit: int | None) -> dict[str, object]:
    judged = judged_domain(data, domain, index_dir)
    bm25 = judged.bm25
    conversations = [c for c in judged.conversations.values() if c.history][:limit]
    seconds: dict[str, list[float]] = {"alone": [], "history": []}
    with open_index(bm25, top_k=10) as retriever:
        for c in conversations[:WARM_UP]:  # sessions, threads
            retriever.search(c.last)
            retriever.search(c.last, history=list(c.history))
        for i, c in enumerate(conversations):
            given = [("alone", None), ("history", list(c.history))]
            for name, history in given if i % 2 else given[::-1]:
                begin = time.perf_counter()
                retriever.search(c.last, history=history)
                seconds[name].append(time.perf_counter() - begin)
    alone, history = seconds["alone"], seconds["history"]
    return {
        "domain": domain,
        "n": len(conversations),
        "alone_ms": 1e3 * statistics.fmean(alone),
        "history_ms": 1e3 * statistics.fmean(history),
        "ratio": sum(history) / sum(alone),
        "median_ratio": statistics.median(h / a for a, h in zip(alone, history, strict=True)),
    }


@contextlib.contextmanager
def query_cache_off() -> Iterator[None]:
    """The query-vector cache off for the retrievers made inside; the environment as it was after."""
    name, before = "FANFUSE_QUERY_CACHE_SIZE", os.environ.get("FANFUSE_QUERY_CACHE_SIZE")
    os.environ[name] = "0"
    try:
        yield
    finally:
        if before is None:
            del os.environ[name]
        else:
            os.environ[name] = before


def main(argv: list[str] | None = None) -> int:
    parser = data_parser(__doc__, index_dir=True)
    add_routing_flag(parser)
    args = parser.parse_args(argv)
    if data_missing(args.data):
        return 2
    started = time.perf_counter()
    with query_cache_off(), route(args.dense_skipped):
        rows = [run_domain(args.data, domain, args.index_dir, args.limit) for domain in args.domains]
    table = [
        "| domain | questions with history | ms/search, last turn alone | with its history "
        "| ratio of the sums | median ratio |",
        "|---|---:|---:|---:|---:|---:|",
        *(
            f"| {r['domain']} | {r['n']} | {r['alone_ms']:.1f} | {r['history_ms']:.1f} | {r['ratio']:.2f} "
            f"| {r['median_ratio']:.2f} |"
            for r in rows
        ),
    ]
    report(rows, "\n".join(table), started, None)
    return 0


if __name__ == "__main__":
    sys.exit(main())
