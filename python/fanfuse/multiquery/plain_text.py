"""A retriever that reads text, not query syntax, in a multi-query search.

The expanders write variants for a Lucene-style parser (``term^0.25``, quoted phrases); a dense
encoder would embed those marks as if they were words. ``PlainTextQueries(dense)`` is searched with
a variant's plain form where its expander wrote one (``Variant.plain``: the feedback variant as the
question followed by its terms), else with ``plain_text(variant)``: the same words, no syntax.
A variant marked ``plain_only`` (``hyde``'s hypothetical answer passage) is searched by these
retrievers alone: ``MultiQueryRetriever`` gives its branches of every other retriever weight 0, so
they are not run (and are reported as skipped).

``PlainTextQueries(dense, skipped_sources=("heuristic",))`` also leaves out the variants of the
sources named (``Variant.source``): their branches of this retriever weigh 0 and are not run. The
original query is always searched. ``fanfuse.open_index`` keeps the word-level variants (content
words, RM3 terms) for BM25 this way: a list of words embedded by a sentence encoder is mostly the
question's own vector again, and costs an encoder input.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from fanfuse.errors import InvalidSetting
from fanfuse.multiquery.expand.words import plain_text
from fanfuse.retrievers.base import Hit, Retriever
from fanfuse.retrievers.filters import known_metadata_keys

__all__ = ["PlainTextQueries", "reads_plain_text", "skipped_sources"]


class PlainTextQueries:
    """``retriever`` (synchronous) searched with each query's plain text."""

    #: MultiQueryRetriever gives this retriever a variant's ``plain`` form where there is one.
    reads_plain_text = True

    def __init__(self, retriever: Retriever, *, skipped_sources: Iterable[str] = ()) -> None:
        if not callable(getattr(retriever, "search", None)):
            raise TypeError(f"retriever must have search(query, k, filter) (got {type(retriever).__name__})")
        sources = () if isinstance(skipped_sources, str) else tuple(skipped_sources)
        if isinstance(skipped_sources, str) or not all(isinstance(s, str) for s in sources):
            raise TypeError("skipped_sources must be a list of variant sources (str), e.g. ['heuristic']")
        if "original" in sources:
            raise InvalidSetting(
                "skipped_sources cannot name 'original': every retriever searches the question"
            )
        self.retriever = retriever
        #: The variant sources whose branches of this retriever are not run.
        self.skipped_sources = frozenset(sources)
        # Batched where the wrapped retriever is, so that its queries still go in one call.
        batch = getattr(retriever, "search_batch", None)
        self.search_batch: Callable[..., Sequence[Sequence[Hit]]] | None = (
            None
            if not callable(batch)
            else lambda queries, k, filter=None: batch([plain_text(query) for query in queries], k, filter)
        )

    @property
    def metadata_keys(self) -> frozenset[str] | None:
        """The wrapped retriever's (what a filter may name), where it says."""
        return known_metadata_keys(self.retriever)

    def search(self, query: str, k: int, filter: Mapping[str, Any] | None = None) -> Sequence[Hit]:
        return self.retriever.search(plain_text(query), k, filter)

    def __repr__(self) -> str:
        if not self.skipped_sources:
            return f"PlainTextQueries({self.retriever!r})"
        return f"PlainTextQueries({self.retriever!r}, skipped_sources={sorted(self.skipped_sources)})"


def reads_plain_text(retriever: object) -> bool:
    """Whether ``retriever`` asks for the variants' plain forms (``PlainTextQueries`` does)."""
    return getattr(retriever, "reads_plain_text", False) is True


def skipped_sources(retriever: object) -> frozenset[str]:
    """The variant sources ``retriever`` does not search (``PlainTextQueries(skipped_sources=...)``)."""
    sources = getattr(retriever, "skipped_sources", None)
    return sources if isinstance(sources, frozenset) else frozenset()
