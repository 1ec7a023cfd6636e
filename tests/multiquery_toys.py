"""Small in-memory retrievers over a fixed toy corpus for the multi-query tests.

They are real retrievers (they score documents by shared words), not mocks of fanfuse. Each records
its calls with start/end timestamps, so tests can check what ran, with which arguments, and when.
"""

from __future__ import annotations

import asyncio
import re
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from fanfuse.multiquery import CallableExpander, HeuristicExpander
from fanfuse.retrievers import Hit

CORPUS: dict[str, dict[str, str]] = {
    "rrf": {"text": "reciprocal rank fusion combines ranked lists", "topic": "fusion"},
    "borda": {"text": "borda count fusion of rankings by votes", "topic": "fusion"},
    "combsum": {"text": "combsum adds normalized scores of runs", "topic": "fusion"},
    "bm25": {"text": "bm25 ranks documents by term frequency", "topic": "lexical"},
    "tfidf": {"text": "tf idf weights terms by rarity", "topic": "lexical"},
    "dense": {"text": "dense retrieval embeds queries and documents", "topic": "dense"},
    "colbert": {"text": "colbert late interaction of token embeddings", "topic": "dense"},
    "hyde": {"text": "hypothetical documents help dense retrieval of queries", "topic": "dense"},
    "ragfusion": {"text": "rag fusion generates multiple queries and fuses ranked lists", "topic": "fusion"},
    "rewrite": {"text": "query rewriting for conversational search", "topic": "queries"},
}
_WORD = re.compile(r"\w+")


@dataclass
class Call:
    query: str
    k: int
    filter: Mapping[str, Any] | None
    start: float
    end: float = 0.0
    cancelled: bool = False


@dataclass
class KeywordRetriever:
    """Sync: documents sharing the most words with the query, best first; optional fixed delay."""

    name: str = "keyword"
    delay: float = 0.0
    calls: list[Call] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def rank(self, query: str, k: int, filter: Mapping[str, Any] | None) -> list[Hit]:
        words = set(_WORD.findall(query.lower())) - {"or"}
        scored = []
        for doc_id, doc in CORPUS.items():
            if filter and any(doc.get(key) != value for key, value in filter.items()):
                continue
            overlap = len(words & set(doc["text"].split()))
            if overlap:
                scored.append((-overlap, doc_id))
        scored.sort()
        return [Hit(doc_id, float(-neg), {"text": CORPUS[doc_id]["text"]}) for neg, doc_id in scored[:k]]

    def search(self, query: str, k: int, filter: Mapping[str, Any] | None = None) -> Sequence[Hit]:
        call = Call(query, k, filter, time.perf_counter())
        with self._lock:
            self.calls.append(call)
        if self.delay:
            time.sleep(self.delay)
        hits = self.rank(query, k, filter)
        call.end = time.perf_counter()
        return hits


@dataclass
class AsyncKeywordRetriever(KeywordRetriever):
    """The same ranking behind ``async def search``; records whether it was cancelled."""

    name: str = "async-keyword"

    async def search(self, query: str, k: int, filter: Mapping[str, Any] | None = None) -> Sequence[Hit]:
        call = Call(query, k, filter, time.perf_counter())
        self.calls.append(call)
        try:
            if self.delay:
                await asyncio.sleep(self.delay)
        except asyncio.CancelledError:
            call.cancelled = True
            call.end = time.perf_counter()
            raise
        call.end = time.perf_counter()
        return self.rank(query, k, filter)


class FailingRetriever:
    name = "failing"

    def search(self, query: str, k: int, filter: Mapping[str, Any] | None = None) -> Sequence[Hit]:
        raise ConnectionError("index server unreachable")


class EmptyRetriever:
    name = "empty"

    async def search(self, query: str, k: int, filter: Mapping[str, Any] | None = None) -> Sequence[Hit]:
        return []


@dataclass
class FixedRetriever:
    """Returns a given list of ids whatever the query (duplicates included, if given)."""

    ids: list[str]
    name: str = "fixed"

    def search(self, query: str, k: int, filter: Mapping[str, Any] | None = None) -> Sequence[Hit]:
        return [Hit(doc_id, 1.0 / (rank + 1), {"rank": rank}) for rank, doc_id in enumerate(self.ids[:k])]


def _rewrites(query: str, max_variants: int) -> list[str]:
    words = " ".join(_WORD.findall(query))
    return [*HeuristicExpander(default_operator="and").candidates(query), f'"{words}"']


def rewrites() -> CallableExpander:
    """The orchestration tests' expander: up to three rewrites of a query (its content words, them
    joined by OR, the quoted words), so that branch counts do not follow HeuristicExpander's rules."""
    return CallableExpander(_rewrites)
