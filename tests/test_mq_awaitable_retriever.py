"""A retriever whose ``search`` is a plain ``def`` that returns an awaitable (a sync-looking wrapper
around an async client) is awaited by every search path: ``asearch`` on its own loop, ``search`` on the
background loop, whether the branch runs in the calling thread, in the retriever's threads or through
the background loop. All paths give the same hits, the same branch errors and the same deadline."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable, Mapping
from typing import Any

import pytest
from fanfuse.multiquery import AllBranchesFailed, MultiQueryRetriever, SearchResult, StaticExpander
from fanfuse.retrievers import Hit
from multiquery_toys import AsyncKeywordRetriever

QUERY = "owls"
# How a search is made: sync without an event loop, in the calling thread (no deadline) or in the
# retriever's threads; sync through the background loop (an async retriever beside it); async.
MODES = ["sync", "sync-calling-thread", "sync-on-loop", "async"]


class AsyncClient:
    """Test double: an async backend client (answers after ``delay`` seconds, or raises ``error``)."""

    def __init__(self, delay: float = 0.0, error: Exception | None = None) -> None:
        self.delay = delay
        self.error = error
        self.loops: set[int] = set()

    async def search(self, query: str, k: int, filter: Mapping[str, Any] | None = None) -> list[Hit]:
        self.loops.add(id(asyncio.get_running_loop()))
        await asyncio.sleep(self.delay)
        if self.error is not None:
            raise self.error
        return [Hit(f"{query}-1", 1.0), Hit(f"{query}-2", 0.5)][:k]


class Wrapper:
    """Test double: a sync ``search`` that hands back its async client's coroutine unawaited."""

    def __init__(self, client: AsyncClient) -> None:
        self.client = client

    def search(self, query: str, k: int, filter: Mapping[str, Any] | None = None) -> Awaitable[list[Hit]]:
        return self.client.search(query, k, filter)


def searched(client: AsyncClient, mode: str, **options: Any) -> SearchResult:
    retrievers: dict[str, Any] = {"w": Wrapper(client)}
    if mode == "sync-on-loop":
        retrievers["a"] = AsyncKeywordRetriever(name="a")
    deadline = options.pop("branch_timeout", 10.0)
    timeout = None if mode == "sync-calling-thread" else deadline
    with MultiQueryRetriever(retrievers, branch_timeout=timeout, **options) as retriever:
        if mode == "async":
            return asyncio.run(retriever.asearch(QUERY))
        return retriever.search(QUERY)


def branch(result: SearchResult, variant: int = 0) -> Any:
    return next(b for b in result.diagnostics.branches if b.retriever == "w" and b.variant_index == variant)


@pytest.mark.parametrize("mode", MODES)
def test_every_path_awaits_what_a_sync_search_returns(mode: str) -> None:
    result = searched(AsyncClient(), mode, expansion=False)
    assert [h.id for h in result.hits if h.id.startswith(QUERY)] == ["owls-1", "owls-2"]
    assert branch(result).error is None and branch(result).hits == 2


@pytest.mark.parametrize("mode", ["sync", "sync-on-loop", "async"])
def test_every_branch_of_an_expanded_search_is_awaited(mode: str) -> None:
    expander = StaticExpander({QUERY: ["barn owls", "snowy owls"]})
    result = searched(AsyncClient(), mode, expander=expander, max_variants=3)
    assert [branch(result, i).hits for i in range(3)] == [2, 2, 2]
    assert {"owls-1", "barn owls-1", "snowy owls-1"} <= set(result.ids)


def report(client: AsyncClient, mode: str, **options: Any) -> Any:
    """The wrapper's branch report, whether the search answered or failed as a whole."""
    try:
        return branch(searched(client, mode, expansion=False, **options))
    except AllBranchesFailed as failed:
        return next(b for b in failed.branches if b.retriever == "w")


@pytest.mark.parametrize("mode", MODES)
def test_a_failing_awaitable_fails_its_branch_alike_on_every_path(mode: str) -> None:
    failed = report(AsyncClient(error=ConnectionError("backend down")), mode)
    assert failed.error == "ConnectionError: backend down" and not failed.timed_out


@pytest.mark.parametrize("mode", ["sync", "sync-on-loop", "async"])
def test_the_branch_deadline_covers_the_awaitable(mode: str) -> None:
    late = report(AsyncClient(delay=30.0), mode, branch_timeout=0.3)
    assert late.timed_out and late.error == "timed out after 0.3 s"


def test_a_sync_search_awaits_on_the_background_loop_not_a_new_one_each_time() -> None:
    client = AsyncClient()
    with MultiQueryRetriever({"w": Wrapper(client)}, expansion=False) as retriever:
        for _ in range(3):
            assert retriever.search(QUERY).ids == ["owls-1", "owls-2"]
    assert len(client.loops) == 1


def test_a_sync_search_from_a_thread_running_an_event_loop_awaits_it_too() -> None:
    client = AsyncClient()
    found: list[object] = []

    async def inside_a_loop() -> None:
        with MultiQueryRetriever({"w": Wrapper(client)}, expansion=False, branch_timeout=None) as r:
            try:
                found.append(r.search(QUERY).ids)
            except Exception as exc:  # shown by the assertion below, not lost in the thread
                found.append(exc)

    thread = threading.Thread(target=asyncio.run, args=(inside_a_loop(),))
    thread.start()
    thread.join(30)
    assert found == [["owls-1", "owls-2"]]
