"""What the default's vector feedback and history variants cost a search: the default against itself
without them, call by call in one process (interleaved, so the machine's load weighs on both alike).

For each MT-RAG question the default (`fanfuse.open_index`) is timed as it is and with `dense-feedback`
weighing 0 (a list of weight 0 is not searched), given the last turn alone and with its earlier turns,
alternately; the dense retriever's query-vector cache is emptied before each search, so each is timed
as the first search of its question. Prints the median and mean wall time of each and their ratios,
with the load average.

    .venv/bin/python benches/mtrag_feedback_cost.py [--domains clapnq] [--limit 100]
"""

from __future__ import annotations

import statistics
import sys
import time
from collections.abc import Callable

import fanfuse
from fanfuse.index_retriever import open_index
from measuring import run_line, versions
from mtrag_bench import Conversation, data_missing, data_parser, judged_domain

Case = Callable[[fanfuse.MultiQueryRetriever, Conversation], object]


def cost_cases() -> dict[str, Case]:
    """Each search timed, by name: the default, and with `dense-feedback` at weight 0 (not searched)."""
    off = {"dense-feedback": 0.0}
    return {
        "the default, last turn": lambda r, c: r.search(c.last),
        "without vector feedback, last turn": lambda r, c: r.search(c.last, retriever_weights=off),
        "the default, with history": lambda r, c: r.search(c.last, history=list(c.history)),
        "without vector feedback, with history": lambda r, c: r.search(
            c.last, history=list(c.history), retriever_weights=off
        ),
    }


def forget_query_vectors(retriever: fanfuse.MultiQueryRetriever) -> None:
    """Empties the dense retriever's query-vector cache (it keeps vectors within a search)."""
    plain = dict(zip(retriever.retriever_names, retriever._retrievers, strict=True))["dense"].retriever
    dense = plain.retriever  # PlainTextQueries(DenseRetriever)
    size = dense.query_cache_size
    dense.query_cache_size = 0
    dense.query_cache_size = size


def main(argv: list[str] | None = None) -> int:
    parser = data_parser(__doc__, index_dir=True)
    parser.set_defaults(limit=100, domains=["clapnq"])
    args = parser.parse_args(argv)
    if data_missing(args.data):
        return 2
    started = time.perf_counter()
    print("| domain | search | n | median ms | mean ms | median / default's |\n|---|---|---:|---:|---:|---:|")
    for domain in args.domains:
        judged = judged_domain(args.data, domain, args.index_dir, args.limit)
        bm25, conversations = judged.bm25, list(judged.conversations.values())
        cases = cost_cases()
        times: dict[str, list[float]] = {name: [] for name in cases}
        with open_index(bm25, top_k=10) as retriever:
            cases["the default, last turn"](retriever, conversations[0])  # warm-up
            for conversation in conversations:
                for name, case in cases.items():
                    forget_query_vectors(retriever)  # each search as the first of its question
                    begin = time.perf_counter()
                    case(retriever, conversation)
                    times[name].append((time.perf_counter() - begin) * 1e3)
        base = statistics.median(times["the default, last turn"])
        for name, values in times.items():
            median = statistics.median(values)
            print(
                f"| {domain} | {name} | {len(values)} | {median:.1f} | {statistics.fmean(values):.1f} "
                f"| {median / base:.2f} |"
            )
    print("\n" + run_line(started, *versions("tantivy")))
    return 0


if __name__ == "__main__":
    sys.exit(main())
