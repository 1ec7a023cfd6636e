"""LlamaIndex in both directions (optional extra: `pip install 'fanfuse[llamaindex]'`).

- `FanfuseRetriever`: a `MultiQueryRetriever` as a LlamaIndex `BaseRetriever`, for query engines,
  chat engines and agents (`retrieve` searches, `aretrieve` awaits `asearch`); given a chat memory
  (or a list of `ChatMessage`s) it searches each question in its conversation.
- `LlamaIndexRetriever` / `AsyncLlamaIndexRetriever`: any LlamaIndex retriever as a fanfuse retriever
  (`retrieve` in the thread pool, or `aretrieve` on the event loop), to fuse it with others.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.base.llms.types import ChatMessage
from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode
from llama_index.core.vector_stores.types import FilterOperator, MetadataFilter, MetadataFilters

from fanfuse.errors import InvalidConversation, InvalidFilter
from fanfuse.integrations.conversion import FANFUSE_METADATA_KEYS, framework_hits, fused_text_and_metadata
from fanfuse.limits import check_int
from fanfuse.multiquery import FusedHit, MultiQueryRetriever
from fanfuse.multiquery.conversation import converted_messages
from fanfuse.multiquery.planning import check_search_kwargs
from fanfuse.retrievers.base import Hit
from fanfuse.retrievers.filters import conditions

__all__ = [
    "AsyncLlamaIndexRetriever",
    "FanfuseRetriever",
    "LlamaIndexRetriever",
    "llamaindex_history",
    "metadata_filters",
]

RetrieverFactory = Callable[[int, MetadataFilters | None], BaseRetriever]
# LlamaIndex's message roles and the roles of a conversation's turns.
_ROLES = {
    "user": "user",
    "assistant": "assistant",
    "chatbot": "assistant",
    "model": "assistant",
    "system": "system",
    "developer": "system",
    "tool": "tool",
    "function": "tool",
}


def _to_node(hit: FusedHit) -> NodeWithScore:
    text, metadata = fused_text_and_metadata(hit)
    # The explanation is for the application, not for the LLM prompt or the embedding of the node.
    hidden = list(FANFUSE_METADATA_KEYS)
    node = TextNode(
        id_=hit.id,
        text=text,
        metadata=metadata,
        excluded_llm_metadata_keys=hidden,
        excluded_embed_metadata_keys=hidden,
    )
    return NodeWithScore(node=node, score=hit.score)


def llamaindex_history(history: Any) -> Any:
    """LlamaIndex's conversation as fanfuse's turns: a chat memory as its messages (`get_all()`), each
    `ChatMessage` as `{"role", "content"}` (its text blocks as content); anything else is left for the
    search to check."""
    messages = history.get_all() if callable(getattr(history, "get_all", None)) else history
    return converted_messages(messages, ChatMessage, _turn)


def _turn(message: ChatMessage, i: int) -> dict[str, str]:
    role = _ROLES.get(str(getattr(message.role, "value", message.role)))
    if role is None:
        raise InvalidConversation(
            f"history[{i}] is a ChatMessage of role {message.role!r}; the roles of a conversation's "
            f"turns are {', '.join(_ROLES)}"
        )
    return {"role": role, "content": message.content or ""}


class FanfuseRetriever(BaseRetriever):
    """Multi-query retrieval as a LlamaIndex retriever (`retrieve`, `aretrieve`, query and chat
    engines).

    `search_kwargs` are passed to every `MultiQueryRetriever.search` (e.g. `{"filter": {...}}`).
    `history` is the conversation each question is searched in: a chat memory (read at every
    retrieval, e.g. the `memory` of a `ContextChatEngine`, which retrieves before it stores the new
    question), a list of `ChatMessage`s, or what `search(history=...)` takes; it may be replaced
    between retrievals (`retriever.history = ...`).
    Each result is a `NodeWithScore` with the fused score; its `TextNode` has the hit's id, the
    payload's `text`, and the rest of the payload as metadata with `id`, `score` and `provenance`
    (left out of what the node shows an LLM or an embedding model).
    """

    def __init__(
        self,
        retriever: MultiQueryRetriever,
        *,
        search_kwargs: Mapping[str, Any] | None = None,
        history: Any = None,
        **kwargs: Any,
    ) -> None:
        if not isinstance(retriever, MultiQueryRetriever):
            raise TypeError(f"retriever must be a MultiQueryRetriever (got {type(retriever).__name__})")
        super().__init__(**kwargs)
        self.retriever = retriever
        self.search_kwargs = dict(search_kwargs or {})
        self.history = history
        check_search_kwargs(retriever, self._options())  # now, not at the first retrieval

    def _options(self) -> dict[str, Any]:
        options = dict(self.search_kwargs)
        if self.history is not None:
            options["history"] = self.history
        if options.get("history") is not None:
            options["history"] = llamaindex_history(options["history"])
        return options

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        result = self.retriever.search(query_bundle.query_str, **self._options())
        return [_to_node(hit) for hit in result.hits]

    async def _aretrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        result = await self.retriever.asearch(query_bundle.query_str, **self._options())
        return [_to_node(hit) for hit in result.hits]


def metadata_filters(filter: Mapping[str, Any] | MetadataFilters) -> MetadataFilters:
    """A fanfuse filter (`{"key": value}`, `{"key": [v1, v2]}`) as LlamaIndex `MetadataFilters`;
    `MetadataFilters` pass through unchanged.

    LlamaIndex's filter values are str, int or float, and a list of one type: a bool, or a list
    mixing text and numbers, is refused. Its `==` is Python's (`1 == 1.0`), and a list-valued field
    is compared as a whole by the simple vector store; the retrievers check what comes back by
    fanfuse's rules."""
    if isinstance(filter, MetadataFilters):
        return filter
    filters = []
    for condition in conditions(filter):
        values = list(condition.values)
        if any(isinstance(v, bool) for v in values):
            raise InvalidFilter(
                f"filter[{condition.key!r}]: LlamaIndex filters take str, int or float values, not bool"
            )
        if len({isinstance(v, str) for v in values}) > 1:
            raise InvalidFilter(
                f"filter[{condition.key!r}] = {values!r}: a LlamaIndex filter list holds text or "
                f"numbers, not both"
            )
        if any(isinstance(v, float) for v in values):
            values = [float(v) for v in values]  # its lists are of one type; 1 == 1.0 there
        if len(values) == 1:
            filters.append(MetadataFilter(key=condition.key, value=values[0], operator=FilterOperator.EQ))
        else:
            filters.append(MetadataFilter(key=condition.key, value=values, operator=FilterOperator.IN))  # type: ignore[arg-type]
    return MetadataFilters(filters=filters)  # type: ignore[arg-type]


class LlamaIndexRetriever:
    """A LlamaIndex retriever (`retrieve(query) -> [NodeWithScore]`) as a fanfuse retriever.

    The hit id is the node id (else `metadata[id_key]`), the score the node's score (else 1/rank),
    the payload the node's metadata plus its `text`. A LlamaIndex retriever fixes its k and its
    filters when built, so its list is cut at `k`, and a search with a `filter` is an error. For
    per-search k and filters pass a factory instead, `factory(k, filters) -> BaseRetriever`
    (`filters`: None or the search's filter as `MetadataFilters`), or use `from_index(index)`.
    """

    def __init__(
        self, retriever: BaseRetriever | RetrieverFactory, *, id_key: str = "id", name: str | None = None
    ) -> None:
        if isinstance(retriever, BaseRetriever):
            self._fixed: BaseRetriever | None = retriever
            self._factory: RetrieverFactory | None = None
        elif callable(retriever):
            self._fixed, self._factory = None, retriever
        else:
            raise TypeError(
                "retriever must be a LlamaIndex BaseRetriever or a function (k, filters) -> BaseRetriever "
                f"(got {type(retriever).__name__})"
            )
        self.name = name or type(retriever).__name__
        self.id_key = id_key

    @classmethod
    def from_index(
        cls, index: Any, *, name: str | None = None, **retriever_kwargs: Any
    ) -> LlamaIndexRetriever:
        """A retriever over `index` (a `VectorStoreIndex`, ...) built for each search with
        `index.as_retriever(similarity_top_k=k, filters=..., **retriever_kwargs)`."""

        def build(k: int, filters: MetadataFilters | None) -> BaseRetriever:
            retriever: BaseRetriever = index.as_retriever(
                similarity_top_k=k, filters=filters, **retriever_kwargs
            )
            return retriever

        return cls(build, name=name or type(index).__name__)

    def _retriever(self, k: int, filter: Mapping[str, Any] | None) -> BaseRetriever:
        k = check_int("retriever_k", k)
        if self._factory is not None:
            return self._factory(k, metadata_filters(filter) if filter else None)
        if filter:
            raise InvalidFilter(
                f"{self.name}: a LlamaIndex retriever takes its filters when built, not per search; "
                f"pass a factory (k, filters) -> retriever or use LlamaIndexRetriever.from_index(index)"
            )
        assert self._fixed is not None
        return self._fixed

    def _hits(self, nodes: Sequence[NodeWithScore], k: int, filter: Mapping[str, Any] | None) -> list[Hit]:
        native = isinstance(filter, MetadataFilters)  # LlamaIndex's own: its meaning
        return framework_hits(
            self.name,
            nodes,
            lambda n: (n.node.node_id, n.score, n.node.get_content(), n.node.metadata),
            id_field="node_id",
            id_key=self.id_key,
            filter=None if native else filter,
            k=k,
        )

    def search(self, query: str, k: int, filter: Mapping[str, Any] | None = None) -> list[Hit]:
        return self._hits(self._retriever(k, filter).retrieve(query), k, filter)


def _retrieves_async(retriever: BaseRetriever) -> bool:
    """Whether `retriever` has an async retrieval of its own: LlamaIndex's default `aretrieve` calls
    the sync `_retrieve` on the event loop, where it would stop every other search until it returns."""
    if not isinstance(retriever, BaseRetriever):  # a factory's stand-in: its own aretrieve, if async
        return inspect.iscoroutinefunction(getattr(retriever, "aretrieve", None))
    below = type(retriever).__mro__[: type(retriever).__mro__.index(BaseRetriever)]
    return any("_aretrieve" in vars(kind) or "aretrieve" in vars(kind) for kind in below)


class AsyncLlamaIndexRetriever(LlamaIndexRetriever):
    """`LlamaIndexRetriever` through `aretrieve`: searched on the event loop, no thread per branch.
    A retriever without an async retrieval of its own (only `_retrieve`) is searched in a thread,
    as `LlamaIndexRetriever` searches it, so that it never holds the loop (see `_retrieves_async`)."""

    async def search(  # type: ignore[override]  # the async form of the same protocol
        self, query: str, k: int, filter: Mapping[str, Any] | None = None
    ) -> list[Hit]:
        retriever = self._retriever(k, filter)
        if _retrieves_async(retriever):
            nodes = await retriever.aretrieve(query)
        else:
            nodes = await asyncio.to_thread(retriever.retrieve, query)
        return self._hits(nodes, k, filter)
