"""LangChain in both directions (optional extra: `pip install 'fanfuse[langchain]'`).

- `FanfuseRetriever`: a `MultiQueryRetriever` as a LangChain retriever, for chains and agents
  (`invoke` searches, `ainvoke` awaits `asearch`); `invoke(question, history=messages)` searches the
  question in its conversation (LangChain messages, or a chat history's `messages`).
- `LangChainRetriever` / `AsyncLangChainRetriever`: any LangChain retriever as a fanfuse retriever
  (`invoke` in the thread pool, or `ainvoke` on the event loop), to fuse it with others.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from langchain_core.callbacks import AsyncCallbackManagerForRetrieverRun, CallbackManagerForRetrieverRun
from langchain_core.documents import Document as LCDocument
from langchain_core.messages import BaseMessage, ChatMessage
from langchain_core.retrievers import BaseRetriever
from pydantic import ConfigDict, Field, ValidationInfo, field_validator

from fanfuse.errors import InvalidConversation
from fanfuse.integrations.conversion import framework_hits, fused_text_and_metadata
from fanfuse.limits import check_int
from fanfuse.multiquery import FusedHit, MultiQueryRetriever, SearchResult
from fanfuse.multiquery.conversation import converted_messages
from fanfuse.multiquery.planning import check_search_kwargs
from fanfuse.retrievers.base import Hit
from fanfuse.retrievers.filters import conditions, is_fanfuse_filter, matches

__all__ = [
    "AsyncLangChainRetriever",
    "FanfuseRetriever",
    "LangChainRetriever",
    "document_predicate",
    "langchain_history",
]

# LangChain's message types and the roles of a conversation's turns.
_ROLES = {"human": "user", "ai": "assistant", "system": "system", "tool": "tool", "function": "tool"}


def _to_langchain(hit: FusedHit) -> LCDocument:
    text, metadata = fused_text_and_metadata(hit)
    return LCDocument(page_content=text, id=hit.id, metadata=metadata)


def langchain_history(history: Any) -> Any:
    """LangChain's conversation as fanfuse's turns: each `BaseMessage` as `{"role", "content"}`
    (`HumanMessage` a user turn, `AIMessage` an assistant turn, ...; its text blocks as content), a
    chat history object as its `messages`; anything else is left for the search to check."""
    return converted_messages(getattr(history, "messages", history), BaseMessage, _turn)


def _turn(message: BaseMessage, i: int) -> dict[str, str]:
    role = message.role if isinstance(message, ChatMessage) else _ROLES.get(message.type)
    if role is None:
        raise InvalidConversation(
            f"history[{i}] is a LangChain {type(message).__name__} (type {message.type!r}), not a turn of "
            f"a conversation: the turns are {', '.join(_ROLES)} messages"
        )
    text = message.text  # a method before langchain-core 1.0, a str since
    return {"role": role, "content": str(text) if isinstance(text, str) else text()}


def _search_options(search_kwargs: dict[str, Any], history: Any) -> dict[str, Any]:
    """The options of a search: `search_kwargs`, and the call's conversation as fanfuse's turns."""
    options = dict(search_kwargs)
    if history is not None:
        options["history"] = history
    if options.get("history") is not None:
        options["history"] = langchain_history(options["history"])
    return options


class FanfuseRetriever(BaseRetriever):
    """Multi-query retrieval behind LangChain's retriever interface (`invoke`, `ainvoke`, `batch`).

    `search_kwargs` are passed to every `MultiQueryRetriever.search` (e.g. `{"filter": {...}}`);
    `invoke(question, history=...)` adds the conversation before the question: LangChain messages
    (`HumanMessage`, `AIMessage`, ...), a chat history object, or what `search(history=...)` takes.
    The document text is the hit payload's `text`; the rest of the payload becomes metadata, with
    the hit's `id`, fused `score` and `provenance`.
    """

    # An assignment is checked as construction is (`retriever.search_kwargs = {...}`).
    model_config = ConfigDict(arbitrary_types_allowed=True, validate_assignment=True)

    retriever: MultiQueryRetriever
    search_kwargs: dict[str, Any] = Field(default_factory=dict)

    @field_validator("search_kwargs")
    @classmethod
    def _checked_search_kwargs(cls, search_kwargs: dict[str, Any], info: ValidationInfo) -> dict[str, Any]:
        retriever = info.data.get("retriever")
        if retriever is not None:  # else the retriever itself is refused
            check_search_kwargs(retriever, _search_options(search_kwargs, None))  # now, not at a search
        return search_kwargs

    def _options(self, history: Any) -> dict[str, Any]:
        return _search_options(self.search_kwargs, history)

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun, history: Any = None
    ) -> list[LCDocument]:
        result: SearchResult = self.retriever.search(query, **self._options(history))
        return [_to_langchain(hit) for hit in result.hits]

    async def _aget_relevant_documents(
        self, query: str, *, run_manager: AsyncCallbackManagerForRetrieverRun, history: Any = None
    ) -> list[LCDocument]:
        result: SearchResult = await self.retriever.asearch(query, **self._options(history))
        return [_to_langchain(hit) for hit in result.hits]


def document_predicate(filter: Mapping[str, Any]) -> Callable[[LCDocument], bool]:
    """The filter as a function of a LangChain `Document` (its metadata, by fanfuse's rules): what
    stores whose `filter` is a callable take, such as `InMemoryVectorStore`."""
    checked = conditions(filter)
    return lambda document: matches(checked, document.metadata)


class LangChainRetriever:
    """A LangChain retriever (`invoke(query) -> [Document]`) as a fanfuse retriever.

    The hit id is `Document.id`, else `metadata[id_key]`; a document with neither cannot be fused
    (fusion deduplicates on ids) and raises. The score is `metadata[score_key]` when the retriever
    sets one, else 1/rank. LangChain retrievers choose their own k, so the list is cut at `k`.
    A search's `filter` is passed as `invoke(query, filter=translate(filter))`, `translate` being
    `filter_as` (default: the filter as it is, the `{"key": value}` dict most stores read;
    `document_predicate` for stores that take a function); the documents returned are then checked
    by fanfuse's rules (`fanfuse.retrievers.filters`), so a store that compares differently cannot
    let a document through that another backend would not. A filter in a store's own syntax, which
    fanfuse's rules do not read (`{"$and": [...]}`, `{"year": {"$gte": 2020}}`), is passed as it is
    and means what the store says.
    """

    # The method of the wrapped retriever a search calls: checked for when wrapping.
    _method = "invoke"

    def __init__(
        self,
        retriever: Any,
        *,
        id_key: str = "id",
        score_key: str = "score",
        filter_as: Callable[[Mapping[str, Any]], Any] | None = None,
    ) -> None:
        method = self._method
        if not callable(getattr(retriever, method, None)):
            raise TypeError(
                f"retriever must be a LangChain retriever, a Runnable with {method}(query) -> [Document] "
                f"such as vector_store.as_retriever() (got {type(retriever).__name__}, with no {method})"
            )
        self.retriever = retriever
        self.id_key = id_key
        self.score_key = score_key
        self.filter_as = filter_as
        self.name = type(retriever).__name__

    def _invoke_kwargs(self, filter: Mapping[str, Any] | None) -> dict[str, Any]:
        if not filter:
            return {}
        if not is_fanfuse_filter(filter):
            return {"filter": filter}
        return {"filter": self.filter_as(filter) if self.filter_as is not None else filter}

    def search(self, query: str, k: int, filter: Mapping[str, Any] | None = None) -> list[Hit]:
        return self._hits(self.retriever.invoke(query, **self._invoke_kwargs(filter)), k, filter)

    def _hits(self, documents: Sequence[LCDocument], k: int, filter: Mapping[str, Any] | None) -> list[Hit]:
        return framework_hits(
            self.name,
            documents,
            lambda d: (d.id, d.metadata.get(self.score_key), d.page_content, d.metadata),
            id_field="Document.id",
            id_key=self.id_key,
            filter=filter if filter and is_fanfuse_filter(filter) else None,
            k=check_int("retriever_k", k),
        )


class AsyncLangChainRetriever(LangChainRetriever):
    """`LangChainRetriever` through `ainvoke`: searched on the event loop, no thread per branch."""

    _method = "ainvoke"

    async def search(  # type: ignore[override]  # the async form of the same protocol
        self, query: str, k: int, filter: Mapping[str, Any] | None = None
    ) -> list[Hit]:
        documents = await self.retriever.ainvoke(query, **self._invoke_kwargs(filter))
        return self._hits(documents, k, filter)
