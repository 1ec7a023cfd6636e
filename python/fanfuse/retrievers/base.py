"""The retriever protocol: one method, `search(query, k, filter=None)`, returning ranked hits.

Anything with that method plugs into `MultiQueryRetriever`: a sync method runs in a thread pool,
an `async def` one on the event loop. Hits come best first; `id` is what fusion deduplicates on.
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
    """A synchronous backend. `filter` is backend-specific metadata filtering, passed through untouched."""

    def search(self, query: str, k: int, filter: Mapping[str, Any] | None = None) -> Sequence[Hit]: ...


@runtime_checkable
class AsyncRetriever(Protocol):
    """An asynchronous backend (`async def search`)."""

    async def search(self, query: str, k: int, filter: Mapping[str, Any] | None = None) -> Sequence[Hit]: ...
