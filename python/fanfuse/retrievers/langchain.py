"""LangChain in both directions (optional extra: `pip install 'fanfuse[langchain]'`).

- `FanfuseRetriever`: a `MultiQueryRetriever` as a LangChain retriever, for chains and agents
  (`invoke` searches, `ainvoke` awaits `asearch`).
- `LangChainRetriever` / `AsyncLangChainRetriever`: any LangChain retriever as a fanfuse retriever
  (`invoke` in the thread pool, or `ainvoke` on the event loop), to fuse it with others.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from langchain_core.callbacks import AsyncCallbackManagerForRetrieverRun, CallbackManagerForRetrieverRun
from langchain_core.documents import Document as LCDocument
from langchain_core.retrievers import BaseRetriever
from pydantic import Field

from fanfuse.limits import check_int
from fanfuse.multiquery import FusedHit, MultiQueryRetriever, SearchResult
from fanfuse.retrievers.base import Hit
from fanfuse.retrievers.interop import framework_hits, fused_text_and_metadata

__all__ = ["AsyncLangChainRetriever", "FanfuseRetriever", "LangChainRetriever"]


def _to_langchain(hit: FusedHit) -> LCDocument:
    text, metadata = fused_text_and_metadata(hit)
    return LCDocument(page_content=text, id=hit.id, metadata=metadata)


class FanfuseRetriever(BaseRetriever):
    """Multi-query retrieval behind LangChain's retriever interface (`invoke`, `ainvoke`, `batch`).

    `search_kwargs` are passed to every `MultiQueryRetriever.search` (e.g. `{"filter": {...}}`).
    The document text is the hit payload's `text`; the rest of the payload becomes metadata, with
    the hit's `id`, fused `score` and `provenance`.
    """

    retriever: MultiQueryRetriever
    search_kwargs: dict[str, Any] = Field(default_factory=dict)

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun
    ) -> list[LCDocument]:
        result: SearchResult = self.retriever.search(query, **self.search_kwargs)
        return [_to_langchain(hit) for hit in result.hits]

    async def _aget_relevant_documents(
        self, query: str, *, run_manager: AsyncCallbackManagerForRetrieverRun
    ) -> list[LCDocument]:
        result: SearchResult = await self.retriever.asearch(query, **self.search_kwargs)
        return [_to_langchain(hit) for hit in result.hits]


class LangChainRetriever:
    """A LangChain retriever (`invoke(query) -> [Document]`) as a fanfuse retriever.

    The hit id is `Document.id`, else `metadata[id_key]`; a document with neither cannot be fused
    (fusion deduplicates on ids) and raises. The score is `metadata[score_key]` when the retriever
    sets one, else 1/rank. LangChain retrievers choose their own k, so the list is cut at `k`;
    `filter`, when given, is passed as `invoke(query, filter=...)` for retrievers that accept it.
    """

    def __init__(self, retriever: Any, *, id_key: str = "id", score_key: str = "score") -> None:
        self.retriever = retriever
        self.id_key = id_key
        self.score_key = score_key
        self.name = type(retriever).__name__

    def search(self, query: str, k: int, filter: Mapping[str, Any] | None = None) -> list[Hit]:
        documents = self.retriever.invoke(query, filter=filter) if filter else self.retriever.invoke(query)
        return self._hits(documents, k)

    def _hits(self, documents: Sequence[LCDocument], k: int) -> list[Hit]:
        return framework_hits(
            self.name,
            documents[: check_int("retriever_k", k)],
            lambda d: (d.id, d.metadata.get(self.score_key), d.page_content, d.metadata),
            id_field="Document.id",
            id_key=self.id_key,
        )


class AsyncLangChainRetriever(LangChainRetriever):
    """`LangChainRetriever` through `ainvoke`: searched on the event loop, no thread per branch."""

    async def search(  # type: ignore[override]  # the async form of the same protocol
        self, query: str, k: int, filter: Mapping[str, Any] | None = None
    ) -> list[Hit]:
        if filter:
            documents = await self.retriever.ainvoke(query, filter=filter)
        else:
            documents = await self.retriever.ainvoke(query)
        return self._hits(documents, k)
