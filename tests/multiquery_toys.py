"""Small in-memory retrievers over a fixed toy corpus for the multi-query tests.

They are real retrievers (they score documents by shared words), not mocks of fanfuse. Each records
its calls with start/end timestamps, so tests can check what ran, with which arguments, and when. A
``Gate`` holds their calls where a test needs branches in flight together, or a backend that hangs.
"""

from __future__ import annotations

import asyncio
import contextlib
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


class Gate:
    """Where calls wait, sync ones in their threads and async ones on their event loops alike.

    With ``parties``, a barrier: it opens when that many calls are inside at once, so a test whose
    calls all return proves they were all in flight together. Without, it opens only on ``open()``:
    a backend that never answers. A sync call waits at most ``timeout`` seconds, then raises.
    """

    def __init__(self, parties: int | None = None, timeout: float = 60.0) -> None:
        self.parties = parties
        self.timeout = timeout
        self.arrived = 0  # calls that reached the gate
        self._waiting = 0  # calls inside it now (a call that gave up has left)
        self._is_open = False
        self._changed = threading.Condition()
        self._async_waiters: list[tuple[asyncio.AbstractEventLoop, asyncio.Event]] = []

    def open(self) -> None:
        with self._changed:
            self._open_locked()

    def wait_until_arrived(self, count: int) -> bool:
        """Whether ``count`` calls reached the gate within its timeout."""
        with self._changed:
            return self._changed.wait_for(lambda: self.arrived >= count, self.timeout)

    def pass_through(self) -> None:
        with self._changed:
            self._arrive_locked()
            if not self._changed.wait_for(lambda: self._is_open, self.timeout):
                self._waiting -= 1
                raise TimeoutError(f"the gate stayed closed ({self._waiting + 1} of {self.parties} inside)")

    async def pass_through_async(self) -> None:
        event = asyncio.Event()
        with self._changed:
            if not self._is_open:
                self._async_waiters.append((asyncio.get_running_loop(), event))
            self._arrive_locked()
            if self._is_open:
                return
        try:
            await event.wait()
        except asyncio.CancelledError:
            with self._changed:
                self._waiting -= 1
            raise

    def _arrive_locked(self) -> None:
        self.arrived += 1
        self._waiting += 1
        if self.parties is not None and self._waiting >= self.parties:
            self._open_locked()
        self._changed.notify_all()

    def _open_locked(self) -> None:
        self._is_open = True
        self._changed.notify_all()
        for loop, event in self._async_waiters:
            with contextlib.suppress(RuntimeError):  # that loop is closed: nobody waits there any more
                loop.call_soon_threadsafe(event.set)
        self._async_waiters.clear()


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
    """Sync: documents sharing the most words with the query, best first; optionally each call first
    sleeps ``delay`` seconds (a slow backend) or waits at ``gate``."""

    name: str = "keyword"
    delay: float = 0.0
    gate: Gate | None = None
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
        if self.gate is not None:
            self.gate.pass_through()
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
            if self.gate is not None:
                await self.gate.pass_through_async()
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
