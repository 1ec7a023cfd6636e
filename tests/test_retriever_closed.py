"""A closed MultiQueryRetriever (`close()`, or the end of its `with` block) refuses every search,
whatever its retrievers: with an async retriever beside a sync one it would run the async one alone
and report the other failed, a partial result that looks like a search. The searching methods are
enumerated (every public method taking a query), so a new one cannot miss the check."""

from __future__ import annotations

import asyncio
import inspect
from typing import Any

import pytest
from fanfuse import MultiQueryRetriever
from fanfuse.retrievers import Hit


class AsyncBackend:
    async def search(self, query: str, k: int, filter: Any = None) -> list[Hit]:
        return [Hit("a", 1.0), Hit("b", 0.5)]


class SyncBackend:
    def search(self, query: str, k: int, filter: Any = None) -> list[Hit]:
        return [Hit("b", 1.0)]


BACKENDS = {
    "sync": {"bm25": SyncBackend()},
    "async": {"dense": AsyncBackend()},
    "both": {"dense": AsyncBackend(), "bm25": SyncBackend()},
}


def searching_methods() -> list[str]:
    return sorted(
        name
        for name, member in inspect.getmembers(MultiQueryRetriever, inspect.isfunction)
        if not name.startswith("_") and "query" in inspect.signature(member).parameters
    )


def call(retriever: MultiQueryRetriever, method: str) -> Any:
    result = getattr(retriever, method)("q")
    return asyncio.run(result) if inspect.iscoroutine(result) else result


def test_the_searching_methods_are_search_and_asearch() -> None:
    assert searching_methods() == ["asearch", "search"]


@pytest.mark.parametrize("method", searching_methods())
@pytest.mark.parametrize("backends", BACKENDS)
@pytest.mark.parametrize("closing", ["close", "with"])
def test_a_closed_retriever_refuses_every_search(method: str, backends: str, closing: str) -> None:
    retriever = MultiQueryRetriever(BACKENDS[backends], expansion=False)
    if closing == "with":
        with retriever as opened:
            assert call(opened, method).ids
    else:
        assert call(retriever, method).ids
        retriever.close()
    with pytest.raises(RuntimeError, match="this MultiQueryRetriever is closed"):
        call(retriever, method)
