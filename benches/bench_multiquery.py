"""pytest-benchmark: what multi-query orchestration costs on top of the retrievers themselves.

- Fan-out overhead: 4 variants x 2 retrievers that each sleep a fixed 2 ms. The overhead of one search
  is its wall time minus its slowest branch's latency (from the diagnostics); the baseline is a bare
  ``asyncio.gather`` of the same 8 calls, measured the same way in the same process.
- Expansion off: ``search(expansion=False)`` over one in-memory retriever vs calling it directly.
  The toy ranking is memoized, so a branch costs its sleep and nothing else: what remains is ours.
- The heuristic expander per query.

`make bench` times them and prints the overhead medians; the test run smoke-runs each once.
"""

from __future__ import annotations

import asyncio
import functools
import re
import statistics
import time
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from fanfuse.multiquery import HeuristicExpander, MultiQueryRetriever, StaticExpander
from fanfuse.multiquery.expand.history import conversation_default
from fanfuse.retrievers import Hit

SLEEP = 0.002
DOCS = {f"doc{i}": f"document {i} about rank fusion topic {i % 7} and retrieval {i % 5}" for i in range(200)}
QUERIES = [
    "how does reciprocal rank fusion combine ranked lists",
    "what is the best dense retrieval model for long documents",
    "bm25 versus tf idf",
    "rank fusion",
    "why do query variants improve recall in retrieval augmented generation",
]


@functools.cache  # the branches' own work stays out of the orchestration numbers
def ranked(query: str, k: int) -> list[Hit]:
    words = set(re.findall(r"\w+", query.lower()))
    scored = sorted(((-len(words & set(text.split())), doc) for doc, text in DOCS.items()))[:k]
    return [Hit(doc, float(-neg)) for neg, doc in scored]


class SleepingSync:
    name = "sync"

    def search(self, query: str, k: int, filter: Mapping[str, Any] | None = None) -> Sequence[Hit]:
        time.sleep(SLEEP)
        return ranked(query, k)


class SleepingAsync:
    name = "async"

    async def search(self, query: str, k: int, filter: Mapping[str, Any] | None = None) -> Sequence[Hit]:
        await asyncio.sleep(SLEEP)
        return ranked(query, k)


def rewrites(query: str, max_variants: int) -> list[str]:
    return [f"{query} ({i})" for i in range(1, max_variants)]


# Four variants of each question whatever the heuristic rules: the fan-out is always 4 x 2 branches.
# A StaticExpander, not a CallableExpander: the latter's aexpand runs a sync function in a thread
# (it may block), a hop of its own that is not the fan-out's.
VARIANTS = {query: rewrites(query, 4) for query in QUERIES}
FOUR = StaticExpander(VARIANTS)


class InMemory:
    name = "memory"

    def search(self, query: str, k: int, filter: Mapping[str, Any] | None = None) -> Sequence[Hit]:
        return ranked(query, k)


def report(benchmark: Any, label: str, overheads_ms: list[float]) -> None:
    median = statistics.median(overheads_ms)
    benchmark.extra_info["overhead_ms_median"] = median
    print(
        f"\n{label}: median overhead beyond the slowest branch {median:.3f} ms over {len(overheads_ms)} calls"
    )


@pytest.mark.benchmark(group="multiquery-fanout")
def test_fanout_overhead_async(benchmark: Any) -> None:
    retriever = MultiQueryRetriever([SleepingSync(), SleepingAsync()], max_variants=4, expander=FOUR)
    loop = asyncio.new_event_loop()
    overheads: list[float] = []

    async def one() -> None:
        start = time.perf_counter()
        result = await retriever.asearch(QUERIES[0])
        wall = (time.perf_counter() - start) * 1e3
        assert len(result.diagnostics.branches) == 8 and not result.diagnostics.failed_branches
        overheads.append(wall - max(b.latency_ms for b in result.diagnostics.branches))

    benchmark(lambda: loop.run_until_complete(one()))
    loop.close()
    report(benchmark, "asearch, 4 variants x 2 retrievers", overheads)


def sync_overheads(benchmark: Any, retriever: MultiQueryRetriever, label: str) -> None:
    overheads: list[float] = []

    def one() -> None:
        start = time.perf_counter()
        result = retriever.search(QUERIES[0])
        wall = (time.perf_counter() - start) * 1e3
        assert len(result.diagnostics.branches) == 8
        overheads.append(wall - max(b.latency_ms for b in result.diagnostics.branches))

    benchmark(one)
    report(benchmark, label, overheads)


@pytest.mark.benchmark(group="multiquery-fanout")
def test_fanout_overhead_sync(benchmark: Any) -> None:
    """A sync caller with one async retriever: the search runs on the background loop."""
    retriever = MultiQueryRetriever([SleepingSync(), SleepingAsync()], max_variants=4, expander=FOUR)
    sync_overheads(benchmark, retriever, "search (sync), sync + async retrievers")


@pytest.mark.benchmark(group="multiquery-fanout")
def test_fanout_overhead_sync_only(benchmark: Any) -> None:
    """A sync caller with sync retrievers: no event loop, the branches go straight to the pool."""
    retriever = MultiQueryRetriever({"a": SleepingSync(), "b": SleepingSync()}, max_variants=4, expander=FOUR)
    sync_overheads(benchmark, retriever, "search (sync), 2 sync retrievers")


@pytest.mark.benchmark(group="multiquery-fanout")
def test_fanout_baseline_bare_gather(benchmark: Any) -> None:
    """The floor: the same 8 calls with asyncio.gather and a thread pool, no expansion or fusion."""
    sync, async_ = SleepingSync(), SleepingAsync()
    variants = [QUERIES[0], *rewrites(QUERIES[0], 4)]
    loop = asyncio.new_event_loop()
    overheads: list[float] = []

    async def timed(call: Any) -> float:
        start = time.perf_counter()
        await call
        return (time.perf_counter() - start) * 1e3

    async def one() -> None:
        start = time.perf_counter()
        running = asyncio.get_running_loop()
        calls = [timed(running.run_in_executor(None, sync.search, v, 20)) for v in variants]
        calls += [timed(async_.search(v, 20)) for v in variants]
        latencies = await asyncio.gather(*calls)
        overheads.append((time.perf_counter() - start) * 1e3 - max(latencies))

    benchmark(lambda: loop.run_until_complete(one()))
    loop.close()
    report(benchmark, "bare asyncio.gather baseline", overheads)


@pytest.mark.benchmark(group="multiquery-expansion-off")
def test_expansion_off_search(benchmark: Any) -> None:
    retriever = MultiQueryRetriever([InMemory()], expansion=False)
    result = benchmark(retriever.search, QUERIES[0])
    assert result.ids == [h.id for h in ranked(QUERIES[0], 10)]


@pytest.mark.benchmark(group="multiquery-expansion-off")
def test_expansion_off_search_no_deadline(benchmark: Any) -> None:
    """Without branch_timeout the one branch runs in the calling thread: no thread hop at all."""
    retriever = MultiQueryRetriever([InMemory()], expansion=False, branch_timeout=None)
    result = benchmark(retriever.search, QUERIES[0])
    assert result.ids == [h.id for h in ranked(QUERIES[0], 10)]


@pytest.mark.benchmark(group="multiquery-expansion-off")
def test_expansion_off_async_search(benchmark: Any) -> None:
    retriever = MultiQueryRetriever([InMemory()], expansion=False)
    loop = asyncio.new_event_loop()
    result = benchmark(lambda: loop.run_until_complete(retriever.asearch(QUERIES[0])))
    loop.close()
    assert result.ids == [h.id for h in ranked(QUERIES[0], 10)]


@pytest.mark.benchmark(group="multiquery-expansion-off")
def test_expansion_off_baseline_direct_call(benchmark: Any) -> None:
    hits = benchmark(InMemory().search, QUERIES[0], 10)
    assert len(hits) == 10


@pytest.mark.benchmark(group="multiquery-heuristic")
def test_heuristic_expander_per_query(benchmark: Any) -> None:
    expander = HeuristicExpander(max_variants=4)

    def expand_all() -> int:
        return sum(len(expander.expand(q, max_variants=4).variants) for q in QUERIES)

    assert benchmark(expand_all) >= len(QUERIES)  # the time shown is for 5 queries


@pytest.mark.benchmark(group="multiquery-heuristic")
def test_default_expander_per_query(benchmark: Any) -> None:
    """`MultiQueryRetriever`'s default without a conversation: the heuristic's variants behind the
    history reading, which has nothing to read (the cost of reading one when it comes)."""
    expander = conversation_default()

    def expand_all() -> int:
        return sum(len(expander.expand(q, max_variants=4).variants) for q in QUERIES)

    assert benchmark(expand_all) >= len(QUERIES)  # the time shown is for 5 queries


@pytest.mark.benchmark(group="multiquery-fanout")
def test_fanout_baseline_bare_pool(benchmark: Any) -> None:
    """The floor for sync retrievers: 8 calls submitted to a thread pool and waited for."""
    retriever = SleepingSync()
    variants = [QUERIES[0], *rewrites(QUERIES[0], 4)] * 2
    pool = ThreadPoolExecutor(16)
    overheads: list[float] = []

    def timed(query: str) -> float:
        start = time.perf_counter()
        retriever.search(query, 20)
        return (time.perf_counter() - start) * 1e3

    def one() -> None:
        start = time.perf_counter()
        latencies = list(pool.map(timed, variants))
        overheads.append((time.perf_counter() - start) * 1e3 - max(latencies))

    benchmark(one)
    pool.shutdown()
    report(benchmark, "bare thread pool baseline", overheads)
