"""A retriever that reads text, not query syntax, in a multi-query search.

The expanders write variants for a Lucene-style parser (``term^0.25``, quoted phrases); a dense
encoder would embed those marks as if they were words. ``PlainTextQueries(dense)`` passes each
variant on as ``plain_text(variant)``: the same words, no syntax.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from fanfuse.multiquery.words import plain_text
from fanfuse.retrievers.base import Hit, Retriever

__all__ = ["PlainTextQueries"]


class PlainTextQueries:
    """``retriever`` (synchronous) searched with each query's plain text."""

    def __init__(self, retriever: Retriever) -> None:
        if not callable(getattr(retriever, "search", None)):
            raise TypeError(f"retriever must have search(query, k, filter) (got {type(retriever).__name__})")
        self.retriever = retriever

    def search(self, query: str, k: int, filter: Mapping[str, Any] | None = None) -> Sequence[Hit]:
        return self.retriever.search(plain_text(query), k, filter)

    def __repr__(self) -> str:
        return f"PlainTextQueries({self.retriever!r})"
