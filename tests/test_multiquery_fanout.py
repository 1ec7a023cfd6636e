"""The concurrent fan-out: failures, stalls, odd lists, mixed sync/async, overlap, cancellation, threads."""

from __future__ import annotations

import asyncio
import itertools
import threading
from concurrent.futures import ThreadPoolExecutor

import pytest
from fanfuse import SearchFailed
from fanfuse.multiquery import AllBranchesFailed, MultiQueryRetriever
from multiquery_toys import (
    AsyncKeywordRetriever,
    EmptyRetriever,
    FailingRetriever,
    FixedRetriever,
    Gate,
    KeywordRetriever,
    rewrites,
)

QUERY = "how does rank fusion combine ranked lists"


def test_every_variant_meets_every_retriever_and_all_branches_are_in_flight_together() -> None:
    # The gate opens only when all 8 branches are inside it at once: if they did not all run
    # together, none would get past it and every branch would time out.
    gate = Gate(parties=8)
    sync, async_ = KeywordRetriever(gate=gate), AsyncKeywordRetriever(gate=gate)
    retriever = MultiQueryRetriever([sync, async_], max_variants=4, expander=rewrites())
    try:
        result = retriever.search(QUERY)
    finally:
        gate.open()  # frees the threads of a failed run
    variants = [v.text for v in result.diagnostics.variants]
    assert len(variants) == 4
    assert sorted(c.query for c in sync.calls) == sorted(variants)
    assert sorted(c.query for c in async_.calls) == sorted(variants)
    assert [b.error for b in result.diagnostics.branches] == [None] * 8 and gate.arrived == 8
    assert {(b.retriever, b.variant) for b in result.diagnostics.branches} == {
        (name, v) for name in ("keyword", "async-keyword") for v in variants
    }


@pytest.mark.parametrize("slow", [AsyncKeywordRetriever(delay=0.02), KeywordRetriever(delay=0.02)])
def test_concurrency_limit_bounds_running_branches(slow: KeywordRetriever) -> None:
    # The delay is a slow backend that gives a broken limit the time to start another branch; the
    # assertion, that no two calls overlapped, holds whatever its length.
    MultiQueryRetriever([slow], max_variants=4, max_concurrency=1, expander=rewrites()).search(QUERY)
    assert len(slow.calls) == 4
    calls = sorted(slow.calls, key=lambda c: c.start)
    assert all(earlier.end <= later.start for earlier, later in itertools.pairwise(calls))


def test_a_failing_branch_is_dropped_and_reported() -> None:
    retriever = MultiQueryRetriever([KeywordRetriever(), FailingRetriever()], expansion=False)
    result = retriever.search(QUERY)
    assert result.ids == [h.id for h in KeywordRetriever().rank(QUERY, 20, None)][:10]
    failed = result.diagnostics.failed_branches
    assert [(b.retriever, b.error) for b in failed] == [
        ("failing", "ConnectionError: index server unreachable")
    ]


def test_all_branches_failing_raises_with_each_error() -> None:
    retriever = MultiQueryRetriever([FailingRetriever()], max_variants=2)
    with pytest.raises(AllBranchesFailed, match="all 2 branches failed") as info:
        retriever.search(QUERY)
    assert isinstance(info.value, SearchFailed) and isinstance(info.value, RuntimeError)
    assert [b.error for b in info.value.branches] == ["ConnectionError: index server unreachable"] * 2


@pytest.mark.parametrize("kind", [KeywordRetriever, AsyncKeywordRetriever])
def test_a_stalled_branch_times_out_and_the_rest_answers(kind: type[KeywordRetriever]) -> None:
    never = Gate()  # not opened until the search is over: a backend that does not answer
    retriever = MultiQueryRetriever(
        {"fast": KeywordRetriever(), "slow": kind(gate=never)}, expansion=False, branch_timeout=0.3
    )
    try:
        result = retriever.search(QUERY)
    finally:
        never.open()  # frees the sync call's thread
    by_name = {b.retriever: b for b in result.diagnostics.branches}
    assert by_name["slow"].timed_out and by_name["slow"].error == "timed out after 0.3 s"
    assert never.arrived == 1
    assert by_name["fast"].ok
    assert result.ids == [h.id for h in KeywordRetriever().rank(QUERY, 10, None)]
    assert all(p.retriever == "fast" for hit in result.hits for p in hit.provenance)


def test_empty_lists_and_duplicates() -> None:
    retriever = MultiQueryRetriever(
        {"empty": EmptyRetriever(), "dups": FixedRetriever(["a", "b", "a", "c", "b"])}, expansion=False
    )
    result = retriever.search(QUERY)
    assert result.ids == ["a", "b", "c"]
    assert {b.retriever: b.hits for b in result.diagnostics.branches} == {"empty": 0, "dups": 5}
    # A repeated id counts once, at its first position: "c" is at rank 4 although it is the 3rd id.
    assert [(h.id, [p.rank for p in h.provenance]) for h in result.hits] == [
        ("a", [1]),
        ("b", [2]),
        ("c", [4]),
    ]


def test_a_retriever_returning_bad_hits_is_a_branch_error() -> None:
    class Strings:
        def search(self, query: str, k: int, filter: object = None) -> list[str]:
            return ["a", "b"]

    retriever = MultiQueryRetriever({"ok": FixedRetriever(["x"]), "bad": Strings()}, expansion=False)
    bad = retriever.search(QUERY).diagnostics.failed_branches[0]
    assert bad.retriever == "bad" and "without a str id" in (bad.error or "")


def test_cancelling_the_outer_task_cancels_the_branches() -> None:
    never = Gate()
    slow = AsyncKeywordRetriever(gate=never)
    retriever = MultiQueryRetriever([slow], max_variants=3, expander=rewrites())

    async def scenario() -> None:
        task = asyncio.create_task(retriever.asearch(QUERY))
        assert await asyncio.to_thread(never.wait_until_arrived, 3)  # every branch is running
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(scenario())
    assert [c.cancelled for c in slow.calls] == [True, True, True]


def test_sync_search_works_inside_a_running_event_loop() -> None:
    retriever = MultiQueryRetriever([AsyncKeywordRetriever(), KeywordRetriever()], max_variants=2)
    expected = retriever.search(QUERY).ids
    assert expected[0] == "rrf"  # the one document sharing four words with the query

    async def inside_loop() -> list[str]:
        return retriever.search(QUERY).ids  # blocks this loop's thread, but must not fail

    assert asyncio.run(inside_loop()) == expected


def test_sync_search_from_an_async_retriever_on_the_portal_loop() -> None:
    inner = MultiQueryRetriever([KeywordRetriever()], expansion=False)

    class Nested:
        name = "nested"

        async def search(self, query: str, k: int, filter: object = None) -> list[object]:
            return list(inner.search(query).hits)  # a sync search from code already on the portal loop

    result = MultiQueryRetriever([Nested()], expansion=False).search(QUERY)
    assert result.ids == inner.search(QUERY).ids == [h.id for h in KeywordRetriever().rank(QUERY, 10, None)]


@pytest.mark.parametrize("mixed", [True, False], ids=["sync+async", "sync only"])
def test_many_threads_search_at_once(mixed: bool) -> None:
    second = AsyncKeywordRetriever() if mixed else KeywordRetriever(name="other")
    retriever = MultiQueryRetriever([KeywordRetriever(), second], max_variants=3, expander=rewrites())
    queries = ["rank fusion", "dense retrieval of queries", "bm25 term frequency", "query rewriting"]
    expected = {q: retriever.search(q).ids for q in queries}
    barrier = threading.Barrier(8)

    def worker(i: int) -> list[bool]:
        barrier.wait()
        return [retriever.search(q).ids == expected[q] for q in queries * 5]

    with ThreadPoolExecutor(8) as pool:
        results = list(pool.map(worker, range(8)))
    assert all(all(r) for r in results)


class ThreadRecorder:
    name = "recorder"

    def __init__(self) -> None:
        self.threads: list[int] = []

    def search(self, query: str, k: int, filter: object = None) -> list[object]:
        self.threads.append(threading.get_ident())
        return FixedRetriever(["a", "b"]).search(query, k)


def test_expansion_off_without_a_deadline_calls_a_sync_retriever_directly() -> None:
    recorder = ThreadRecorder()
    direct = MultiQueryRetriever([recorder], expansion=False, branch_timeout=None)
    assert direct.search(QUERY).ids == ["a", "b"]
    pooled = MultiQueryRetriever([recorder], expansion=False)  # a deadline needs another thread
    assert pooled.search(QUERY).ids == ["a", "b"]
    expanded = MultiQueryRetriever([recorder], max_variants=2, branch_timeout=None)
    assert expanded.search(QUERY).ids == ["a", "b"]
    me = threading.get_ident()
    assert recorder.threads[0] == me
    assert all(t != me for t in recorder.threads[1:]) and len(recorder.threads) == 4
