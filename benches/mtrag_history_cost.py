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

import statistics
import sys
import time
from pathlib import Path

from fanfuse.index_retriever import open_index
from measuring import markdown_table
from mtrag_bench import (
    add_routing_flag,
    data_missing,
    data_parser,
    interleaved_seconds,
    judged_domain,
    query_cache_off,
    report,
    route,
)


def run_domain(data: Path, domain: str, index_dir: Path, limit: int | None) -> dict[str, object]:
    judged = judged_domain(data, domain, index_dir)
    bm25 = judged.bm25
    conversations = [c for c in judged.conversations.values() if c.history][:limit]
    with open_index(bm25, top_k=10) as retriever:
        searches = {
            "alone": lambda c: retriever.search(c.last, history=None),
            "history": lambda c: retriever.search(c.last, history=list(c.history)),
        }
        seconds = interleaved_seconds(searches, conversations)
    alone, history = seconds["alone"], seconds["history"]
    return {
        "domain": domain,
        "n": len(conversations),
        "alone_ms": 1e3 * statistics.fmean(alone),
        "history_ms": 1e3 * statistics.fmean(history),
        "ratio": sum(history) / sum(alone),
        "median_ratio": statistics.median(h / a for a, h in zip(alone, history, strict=True)),
    }


def main(argv: list[str] | None = None) -> int:
    parser = data_parser(__doc__, index_dir=True)
    add_routing_flag(parser)
    args = parser.parse_args(argv)
    if data_missing(args.data):
        return 2
    started = time.perf_counter()
    with query_cache_off(), route(args.dense_skipped):
        rows = [run_domain(args.data, domain, args.index_dir, args.limit) for domain in args.domains]
    columns = (
        "domain | questions with history=n | ms/search, last turn alone=alone_ms:.1f "
        "| with its history=history_ms:.1f | ratio of the sums=ratio:.2f | median ratio=median_ratio:.2f"
    )
    report(rows, markdown_table(columns, "lrrrrr", rows), started, None)
    return 0


if __name__ == "__main__":
    sys.exit(main())
