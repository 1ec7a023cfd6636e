"""LangChain in both directions (optional extra: `pip install 'fanfuse[langchain]'`).

- `FanfuseRetriever`: a `MultiQueryRetriever` as a LangChain retriever, for chains and agents.
- `LangChainRetriever`: any LangChain retriever as a fanfuse retriever, to fuse it with others.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from langchain_core.callbacks import AsyncCallbackManagerForRetrieverRun, CallbackManagerForRetrieverRun
from langchain_core.documents import Document as LCDocument
from langchain_core.retrievers import BaseRetriever
from pydantic import Field

from fanfuse._core import FusionError
from fanfuse.multiquery import FusedHit, MultiQueryRetriever, SearchResult
from fanfuse.retrievers.base import Hit

__all__ = ["FanfuseRetriever", "LangChainRetriever"]


def _to_langchain(hit: FusedHit) -> LCDocument:
    payload = dict(hit.payload)
    text = payload.pop("text", "")
    metadata = {
        **payload,
        "id": hit.id,
        "score": hit.score,
        # Which variants and retrievers found it: the explanation travels with the document.
        "provenance": [
            {"variant": p.variant, "retriever": p.retriever, "rank": p.rank} for p in hit.provenance
        ],
    }
    return LCDocument(page_content=str(text), id=hit.id, metadata=metadata)


class FanfuseRetriever(BaseRetriever):
    """Multi-query retrieval behind LangChain's retriever interface (`invoke`, `ainvoke`, `batch`).

    `search_kwargs` are passed to every `MultiQueryRetriever.search` (e.g. `{"filter": {...}}`).
    The document text is the hit payload's `text`; the rest of the payload becomes metadata.
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
        return [self._hit(rank, doc) for rank, doc in enumerate(documents[:k], start=1)]

    def _hit(self, rank: int, document: LCDocument) -> Hit:
        doc_id = document.id or document.metadata.get(self.id_key)
        if doc_id is None:
            raise FusionError(
                f"{self.name} returned a document without an id (Document.id or metadata[{self.id_key!r}]); "
                f"pass id_key= naming the metadata field that identifies documents"
            )
        score = document.metadata.get(self.score_key, 1.0 / rank)
        return Hit(str(doc_id), float(score), {**document.metadata, "text": document.page_content})
