"""A reranker's own ``TimeoutError`` (its model server's, say) is its error on every search path, as a
retriever's is: only the search's deadline passing is reported as ``timed out after ...``."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from typing import Any

import pytest
from fanfuse.multiquery import FusedHit, MultiQueryRetriever, SearchResult
from multiquery_toys import AsyncKeywordRetriever, KeywordRetriever

QUERY = "how does rank fusion combine ranked lists"
MODES = ["sync", "sync-calling-thread", "sync-on-loop", "async"]


def searched(mode: str, reranker: Any, timeout: float = 10.0) -> SearchResult:
    retriever = AsyncKeywordRetriever() if mode == "sync-on-loop" else KeywordRetriever()
    deadline = None if mode == "sync-calling-thread" else timeout
    with MultiQueryRetriever([retriever], branch_timeout=deadline, expansion=False) as multi:
        if mode == "async":
            return asyncio.run(multi.asearch(QUERY, reranker=reranker))
        return multi.search(QUERY, reranker=reranker)


def impatient(query: str, hits: Sequence[FusedHit]) -> list[float]:
    """Test double: a reranker whose model server's client gave up at once."""
    raise TimeoutError("model server did not answer")


def slow(query: str, hits: Sequence[FusedHit]) -> list[float]:
    """Test double: a reranker slower than the search's deadline."""
    time.sleep(1.0)
    return [1.0] * len(hits)


@pytest.mark.parametrize("mode", MODES)
def test_a_rerankers_own_timeout_is_its_error(mode: str) -> None:
    result = searched(mode, impatient)
    assert result.diagnostics.rerank_error == "TimeoutError: model server did not answer"


@pytest.mark.parametrize("mode", ["sync", "sync-on-loop", "async"])
def test_the_search_deadline_is_reported_as_such(mode: str) -> None:
    result = searched(mode, slow, timeout=0.2)
    assert result.diagnostics.rerank_error == "timed out after 0.2 s"
