"""The concurrent fan-out: failures, stalls, odd lists, mixed sync/async, overlap, cancellation, threads."""

from __future__ import annotations

import asyncio
import itertools
import threading
from concurrent.futures import ThreadPoolExecutor

import pytest
from fanfuse import FusionError
from fanfuse.multiquery import AllBranchesFailed, MultiQueryRetriever
from multiquery_toys import (
    AsyncKeywordRetriever,
    EmptyRetriever,
    FailingRetriever,
    FixedRetriever,
    KeywordRetriever,
    rewrites,
)

QUERY = "how does rank fusion combine ranked lists"


def test_every_variant_meets_every_retriever_and_branches_overlap_in_time() -> None:
    # 0.2 s each: long enough that even a loaded machine starts all 8 before the first one ends.
    sync, async_ = KeywordRetriever(delay=0.2), AsyncKeywordRetriever(delay=0.2)
    retriever = MultiQueryRetriever([sync, async_], max_variants=4, expander=rewrites())
    result = retriever.search(QUERY)
    variants = [v.text for v in result.diagnostics.variants]
    assert len(variants) == 4
    assert sorted(c.query for c in sync.calls) == sorted(variants)
    assert sorted(c.query for c in async_.calls) == sorted(variants)
    calls = sync.calls + async_.calls
    # All 8 branches were running at one moment: the last one started before the first one ended.
    assert max(c.start for c in calls) < min(c.end for c in calls)
    assert {(b.retriever, b.variant) for b in result.diagnostics.branches} == {
        (name, v) for name in ("keyword", "async-keyword") for v in variants
    }


@pytest.mark.parametrize("slow", [AsyncKeywordRetriever(delay=0.02), KeywordRetriever(delay=0.02)])
def test_concurrency_limit_bounds_running_branches(slow: KeywordRetriever) -> None:
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
    assert isinstance(info.value, FusionError) and isinstance(info.value, ValueError)
    assert [b.error for b in info.value.branches] == ["ConnectionError: index server unreachable"] * 2


@pytest.mark.parametrize(
    "stalling", [KeywordRetriever(name="stall", delay=1.0), AsyncKeywordRetriever(delay=1.0)]
)
def test_a_stalled_branch_times_out_and_the_rest_answers(stalling: KeywordRetriever) -> None:
    retriever = MultiQueryRetriever(
        {"fast": KeywordRetriever(), "slow": stalling}, expansion=False, branch_timeout=0.3
    )
    result = retriever.search(QUERY)
    by_name = {b.retriever: b for b in result.diagnostics.branches}
    assert by_name["slow"].timed_out and by_name["slow"].error == "timed out after 0.3 s"
    assert by_name["fast"].ok and result.ids
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
    slow = AsyncKeywordRetriever(delay=5.0)
    retriever = MultiQueryRetriever([slow], max_variants=3, expander=rewrites())

    async def scenario() -> None:
        task = asyncio.create_task(retriever.asearch(QUERY))
        while len(slow.calls) < 3:  # wait until every branch is running
            await asyncio.sleep(0.005)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(scenario())
    assert [c.cancelled for c in slow.calls] == [True, True, True]


def test_sync_search_works_inside_a_running_event_loop() -> None:
    retriever = MultiQueryRetriever([AsyncKeywordRetriever(), KeywordRetriever()], max_variants=2)
    expected = retriever.search(QUERY).ids

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
    assert result.ids == inner.search(QUERY).ids


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
