"""Haystack in both directions (optional extra: `pip install 'fanfuse[haystack]'`).

- `FanfuseRetriever`: a `MultiQueryRetriever` as a Haystack component (`run`, `run_async`), for
  pipelines: `{"query": str, "history": [ChatMessage]} -> {"documents": [Document]}`.
- `HaystackRetriever` / `AsyncHaystackRetriever`: any Haystack text retriever component (one whose
  `run(query=..., top_k=..., filters=...)` returns `{"documents": [...]}`, such as
  `InMemoryBM25Retriever` or a document store's retriever) as a fanfuse retriever, through `run`
  in the thread pool or `run_async` on the event loop.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from haystack import Document, component
from haystack.dataclasses import ChatMessage

from fanfuse.errors import InvalidConversation
from fanfuse.integrations.conversion import framework_hits, fused_text_and_metadata
from fanfuse.limits import check_choice, check_int
from fanfuse.multiquery import FusedHit, MultiQueryRetriever
from fanfuse.multiquery.conversation import ROLES, converted_messages
from fanfuse.multiquery.planning import check_option_names
from fanfuse.retrievers.base import Hit
from fanfuse.retrievers.filters import conditions

__all__ = [
    "AsyncHaystackRetriever",
    "FanfuseRetriever",
    "HaystackRetriever",
    "haystack_filters",
    "haystack_history",
]


def _to_document(hit: FusedHit) -> Document:
    text, metadata = fused_text_and_metadata(hit)
    return Document(id=hit.id, content=text, meta=metadata, score=hit.score)


def haystack_history(history: Any) -> Any:
    """Haystack's conversation as fanfuse's turns: each `ChatMessage` as `{"role", "content"}` (its
    text as content); anything else is left for the search to check."""
    return converted_messages(history, ChatMessage, _turn)


def _turn(message: ChatMessage, i: int) -> dict[str, str]:
    role = str(getattr(message.role, "value", message.role))
    return {
        "role": check_choice(f"history[{i}].role", role, ROLES, InvalidConversation),
        "content": message.text or "",
    }


@component
class FanfuseRetriever:
    """Multi-query retrieval as a Haystack retriever component.

    Input `query` (and optionally `top_k` and `filters`, the latter passed to the branches as
    fanfuse's `filter`, and `history`, the conversation before the query as `ChatMessage`s, oldest
    first); output `documents`: one `Document` per fused hit, with the hit's id, the payload's `text`
    as content, the fused score as `score`, and the rest of the payload as `meta` with `id`, `score`
    and `provenance`. `search_kwargs` go to every search (`expansion`, ...).
    """

    def __init__(self, retriever: MultiQueryRetriever, search_kwargs: Mapping[str, Any] | None = None):
        if not isinstance(retriever, MultiQueryRetriever):
            raise TypeError(f"retriever must be a MultiQueryRetriever (got {type(retriever).__name__})")
        self.retriever = retriever
        self.search_kwargs = dict(search_kwargs or {})
        check_option_names(self.search_kwargs, "search_kwargs")  # now, not at the first run

    def _kwargs(
        self, top_k: int | None, filters: dict[str, Any] | None, history: list[ChatMessage] | None
    ) -> dict[str, Any]:
        kwargs = dict(self.search_kwargs)
        if top_k is not None:
            kwargs["top_k"] = top_k
        if filters is not None:
            kwargs["filter"] = filters
        if history is not None:
            kwargs["history"] = history
        if kwargs.get("history") is not None:
            kwargs["history"] = haystack_history(kwargs["history"])
        return kwargs

    @component.output_types(documents=list[Document])
    def run(
        self,
        query: str,
        top_k: int | None = None,
        filters: dict[str, Any] | None = None,
        history: list[ChatMessage] | None = None,
    ) -> dict[str, list[Document]]:
        result = self.retriever.search(query, **self._kwargs(top_k, filters, history))
        return {"documents": [_to_document(hit) for hit in result.hits]}

    @component.output_types(documents=list[Document])
    async def run_async(
        self,
        query: str,
        top_k: int | None = None,
        filters: dict[str, Any] | None = None,
        history: list[ChatMessage] | None = None,
    ) -> dict[str, list[Document]]:
        result = await self.retriever.asearch(query, **self._kwargs(top_k, filters, history))
        return {"documents": [_to_document(hit) for hit in result.hits]}


def haystack_filters(filter: Mapping[str, Any]) -> dict[str, Any]:
    """A fanfuse filter (`{"key": value}`, `{"key": [v1, v2]}`) in Haystack's filter syntax, over
    `meta`; a filter already in Haystack's syntax (it has an `operator`) passes through unchanged.

    Haystack's `==` compares a list-valued field as a whole in some stores (InMemoryDocumentStore)
    and matches its items in others (Elasticsearch, OpenSearch, Qdrant); the hits that come back are
    checked by fanfuse's rules either way (`HaystackRetriever`)."""
    if "operator" in filter:
        return dict(filter)
    comparisons = [
        {"field": f"meta.{c.key}", "operator": "==", "value": c.values[0]}
        if len(c.values) == 1
        else {"field": f"meta.{c.key}", "operator": "in", "value": list(c.values)}
        for c in conditions(filter)
    ]
    return {"operator": "AND", "conditions": comparisons}


class HaystackRetriever:
    """A Haystack retriever component as a fanfuse retriever.

    Each search calls `run(query=query, top_k=k)`, plus `filters=` (see `haystack_filters`) when the
    search has a filter; of the documents returned, those whose `meta` does not match the filter by
    fanfuse's rules (`fanfuse.retrievers.filters`) are left out. The hit id is `Document.id` (else
    `meta[id_key]`), the score `Document.score` (else 1/rank), the payload the document's `meta`
    plus its `text`.
    """

    def __init__(self, retriever: Any, *, id_key: str = "id", name: str | None = None) -> None:
        if not callable(getattr(retriever, "run", None)):
            raise TypeError(
                f"retriever must be a Haystack component with a run(query=..., top_k=...) method "
                f"(got {type(retriever).__name__})"
            )
        self.retriever = retriever
        self.id_key = id_key
        self.name = name or type(retriever).__name__

    @staticmethod
    def _inputs(query: str, k: int, filter: Mapping[str, Any] | None) -> dict[str, Any]:
        inputs: dict[str, Any] = {"query": query, "top_k": check_int("retriever_k", k)}
        if filter:
            inputs["filters"] = haystack_filters(filter)
        return inputs

    def _hits(self, output: Mapping[str, Any], k: int, filter: Mapping[str, Any] | None) -> list[Hit]:
        documents: Sequence[Document] = output["documents"]
        native = filter is not None and "operator" in filter  # Haystack's own syntax: its meaning
        return framework_hits(
            self.name,
            documents,
            lambda d: (d.id, d.score, d.content, d.meta),
            id_field="Document.id",
            id_key=self.id_key,
            filter=None if native else filter,
            k=k,
        )

    def search(self, query: str, k: int, filter: Mapping[str, Any] | None = None) -> list[Hit]:
        return self._hits(self.retriever.run(**self._inputs(query, k, filter)), k, filter)


class AsyncHaystackRetriever(HaystackRetriever):
    """`HaystackRetriever` through the component's `run_async`: on the event loop, no thread."""

    def __init__(self, retriever: Any, *, id_key: str = "id", name: str | None = None) -> None:
        super().__init__(retriever, id_key=id_key, name=name)
        if not callable(getattr(retriever, "run_async", None)):
            raise TypeError(
                f"{type(retriever).__name__} has no run_async method; use HaystackRetriever, "
                "which calls run in fanfuse's thread pool"
            )

    async def search(  # type: ignore[override]  # the async form of the same protocol
        self, query: str, k: int, filter: Mapping[str, Any] | None = None
    ) -> list[Hit]:
        return self._hits(await self.retriever.run_async(**self._inputs(query, k, filter)), k, filter)
