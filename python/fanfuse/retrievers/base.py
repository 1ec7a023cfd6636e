"""The retriever protocol: one method, `search(query, k, filter=None)`, returning ranked hits.

Anything with that method plugs into `MultiQueryRetriever`: a sync method runs in threads of its own
(at most `max_workers` at once, so a backend that hangs holds only its own threads), an `async def`
one on the event loop. Hits come best first; `id` is what fusion deduplicates on.

What a search returns is checked inside its branch, so a bad retriever fails only its own branches:
a list or tuple of hits, or any iterable of them (read in the retriever's thread, within the branch's
time limit); each hit's `id` a str that encodes as UTF-8 or an int (read as its decimal string), its
`score` a finite number, its `payload` a mapping.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable


@dataclass(frozen=True, slots=True)
class Hit:
    """One ranked search result: the document id, the backend's score, and whatever else it returned."""

    id: str
    score: float
    payload: Mapping[str, Any] = field(default_factory=dict)


@runtime_checkable
class Retriever(Protocol):
    """A synchronous backend. `filter` is passed through untouched; the built-in backends all read it
    as `fanfuse.retrievers.filters` says."""

    def search(self, query: str, k: int, filter: Mapping[str, Any] | None = None) -> Sequence[Hit]: ...


@runtime_checkable
class AsyncRetriever(Protocol):
    """An asynchronous backend (`async def search`)."""

    async def search(self, query: str, k: int, filter: Mapping[str, Any] | None = None) -> Sequence[Hit]: ...
