"""A retriever that reads text, not query syntax, in a multi-query search.

The expanders write variants for a Lucene-style parser (``term^0.25``, quoted phrases); a dense
encoder would embed those marks as if they were words. ``PlainTextQueries(dense)`` is searched with
a variant's plain form where its expander wrote one (``Variant.plain``: the feedback variant as the
question followed by its terms), else with ``plain_text(variant)``: the same words, no syntax.
A variant marked ``plain_only`` (``hyde``'s hypothetical answer passage) is searched by these
retrievers alone: ``MultiQueryRetriever`` gives its branches of every other retriever weight 0, so
they are not run (and are reported as skipped).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from fanfuse.multiquery.expand.words import plain_text
from fanfuse.retrievers.base import Hit, Retriever

__all__ = ["PlainTextQueries", "reads_plain_text"]


class PlainTextQueries:
    """``retriever`` (synchronous) searched with each query's plain text."""

    #: MultiQueryRetriever gives this retriever a variant's ``plain`` form where there is one.
    reads_plain_text = True

    def __init__(self, retriever: Retriever) -> None:
        if not callable(getattr(retriever, "search", None)):
            raise TypeError(f"retriever must have search(query, k, filter) (got {type(retriever).__name__})")
        self.retriever = retriever
        # Batched where the wrapped retriever is, so that its queries still go in one call.
        batch = getattr(retriever, "search_batch", None)
        self.search_batch: Callable[..., Sequence[Sequence[Hit]]] | None = (
            None
            if not callable(batch)
            else lambda queries, k, filter=None: batch([plain_text(query) for query in queries], k, filter)
        )

    def search(self, query: str, k: int, filter: Mapping[str, Any] | None = None) -> Sequence[Hit]:
        return self.retriever.search(plain_text(query), k, filter)

    def __repr__(self) -> str:
        return f"PlainTextQueries({self.retriever!r})"


def reads_plain_text(retriever: object) -> bool:
    """Whether ``retriever`` asks for the variants' plain forms (``PlainTextQueries`` does)."""
    return getattr(retriever, "reads_plain_text", False) is True
