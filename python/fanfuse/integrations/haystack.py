"""Haystack in both directions (optional extra: `pip install 'fanfuse[haystack]'`).

- `FanfuseRetriever`: a `MultiQueryRetriever` as a Haystack component (`run`, `run_async`), for
  pipelines: `{"query": str, "history": [ChatMessage]} -> {"documents": [Document]}`.
- `HaystackRetriever` / `AsyncHaystackRetriever`: any Haystack text retriever component (one whose
  `run(query=..., top_k=..., filters=...)` returns `{"documents": [...]}`, such as
  `InMemoryBM25Retriever` or a document store's retriever) as a fanfuse retriever, through `run`
  in the thread pool or `run_async` on the event loop.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any

from haystack import Document, component
from haystack.core.errors import SerializationError
from haystack.core.serialization import default_to_dict
from haystack.dataclasses import ChatMessage

from fanfuse.errors import InvalidConversation, InvalidFilter
from fanfuse.index_retriever import open_index
from fanfuse.integrations.conversion import framework_hits, fused_text_and_metadata
from fanfuse.limits import check_choice, check_int
from fanfuse.multiquery import FusedHit, MultiQueryRetriever
from fanfuse.multiquery.conversation import ROLES, converted_messages
from fanfuse.multiquery.planning import check_search_kwargs
from fanfuse.retrievers.base import Hit
from fanfuse.retrievers.filters import conditions

__all__ = [
    "AsyncHaystackRetriever",
    "FanfuseRetriever",
    "HaystackRetriever",
    "fanfuse_filter",
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

    Input `query` (and optionally `top_k`; `filters`, passed to the branches as fanfuse's
    `filter`, in fanfuse's syntax or Haystack's, see `fanfuse_filter`; and `history`, the
    conversation before the query as `ChatMessage`s, oldest first); output `documents`: one
    `Document` per fused hit, with the hit's id, the payload's `text` as content, the fused score as
    `score`, and the rest of the payload as `meta` with `id`, `score` and `provenance`.
    `search_kwargs` go to every search (`expansion`, ...).
    """

    def __init__(self, retriever: MultiQueryRetriever, search_kwargs: Mapping[str, Any] | None = None):
        if not isinstance(retriever, MultiQueryRetriever):
            raise TypeError(f"retriever must be a MultiQueryRetriever (got {type(retriever).__name__})")
        self.retriever = retriever
        self.search_kwargs = dict(search_kwargs or {})
        check_search_kwargs(retriever, self._kwargs(None, None, None))  # now, not at the first run
        # What `from_index` opened the retriever with: the component's saved form (`to_dict`).
        self._opened_with: dict[str, Any] | None = None

    @classmethod
    def from_index(
        cls,
        index: str | os.PathLike[str],
        *,
        search_kwargs: Mapping[str, Any] | None = None,
        **open_index_kwargs: Any,
    ) -> FanfuseRetriever:
        """The component over `fanfuse.open_index(index, **open_index_kwargs)`: one a pipeline saves
        (`to_dict`, `dumps`) and loads again, for it holds the index's path and those arguments."""
        component = cls(open_index(index, **open_index_kwargs), search_kwargs)
        component._opened_with = {"index": os.fspath(index), **open_index_kwargs}
        return component

    def to_dict(self) -> dict[str, Any]:
        """The component as a pipeline saves it; only one made by `from_index` has a saved form."""
        if self._opened_with is None:
            raise SerializationError(
                "FanfuseRetriever over a MultiQueryRetriever built in code has no saved form; make it with "
                "FanfuseRetriever.from_index(index, ...) in a pipeline that is saved (to_dict, dumps)"
            )
        return default_to_dict(self, search_kwargs=self.search_kwargs, **self._opened_with)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> FanfuseRetriever:
        """The component `to_dict` saved: `from_index` with the arguments it holds."""
        parameters = dict(data.get("init_parameters", {}))
        return cls.from_index(parameters.pop("index"), **parameters)

    def _kwargs(
        self, top_k: int | None, filters: dict[str, Any] | None, history: list[ChatMessage] | None
    ) -> dict[str, Any]:
        kwargs = dict(self.search_kwargs)
        if top_k is not None:
            kwargs["top_k"] = top_k
        if filters is not None:
            kwargs["filter"] = fanfuse_filter(filters)
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


_HAYSTACK_FORMS = (
    "Haystack's '==' or 'in' on a meta field ({'field': 'meta.KEY', 'operator': '==', 'value': V}, V a "
    "str, number or bool; 'in': a non-empty list of them), "
    "alone or joined by AND ({'operator': 'AND', 'conditions': [...]}), or fanfuse's {'KEY': V}"
)


def fanfuse_filter(filters: Mapping[str, Any]) -> dict[str, Any]:
    """The filter of a search, from Haystack's syntax where it is in it (it has an `operator`): the
    comparisons a fanfuse filter holds, `==` and `in` on `meta.KEY`, alone or joined by `AND`; a
    filter without an `operator` is fanfuse's and passes as it is. Anything else is refused naming
    `filters`, for every branch reads the filter by fanfuse's rules (`fanfuse.retrievers.filters`)."""
    if not isinstance(filters, Mapping):
        raise InvalidFilter(f"filters must be a dict, {_HAYSTACK_FORMS} (got {type(filters).__name__})")
    if "operator" not in filters:
        return dict(filters)
    joined = filters.get("operator") == "AND" and "conditions" in filters
    comparisons = filters["conditions"] if joined else [filters]
    if not isinstance(comparisons, list):
        raise InvalidFilter(f"filters['conditions'] must be a list (got {type(comparisons).__name__})")
    translated: dict[str, Any] = {}
    for comparison in comparisons:
        field = comparison.get("field") if isinstance(comparison, Mapping) else None
        operator = comparison.get("operator") if isinstance(comparison, Mapping) else None
        value = comparison.get("value") if isinstance(comparison, Mapping) else None
        values = value if operator == "in" and isinstance(value, list) else [value]
        readable = (
            isinstance(field, str)
            and field.startswith("meta.")
            and len(field) > len("meta.")
            and (operator, isinstance(value, list)) in (("==", False), ("in", True))
            and bool(values)
            and all(isinstance(v, (str, int, float)) for v in values)  # a value, not a store's query
        )
        if not readable:
            raise InvalidFilter(
                f"filters: {comparison!r} is not a filter every branch reads; give {_HAYSTACK_FORMS}"
            )
        key = str(field)[len("meta.") :]
        if key in translated:
            raise InvalidFilter(f"filters: {field!r} is compared twice; give each field once")
        translated[key] = value
    return translated


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
