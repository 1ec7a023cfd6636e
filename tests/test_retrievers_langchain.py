"""fanfuse as a LangChain retriever, and a LangChain retriever as a fanfuse retriever (skips without
langchain-core)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

pytest.importorskip("langchain_core")

from fanfuse import FusionError, MultiQueryRetriever
from fanfuse.retrievers.langchain import FanfuseRetriever, LangChainRetriever
from fanfuse.retrievers.tantivy_index import TantivyRetriever
from langchain_core.callbacks import CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever

DOCS = [
    {"id": "a", "title": "Alpha", "text": "rank fusion merges ranked lists", "team": "x"},
    {"id": "b", "title": "Beta", "text": "reciprocal rank fusion is simple", "team": "y"},
    {"id": "c", "title": "Gamma", "text": "dense vectors and cosine similarity", "team": "x"},
]


class KeywordRetriever(BaseRetriever):
    """A real LangChain retriever: returns the documents that contain every query word."""

    documents: list[Document]

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun
    ) -> list[Document]:
        words = query.lower().split()
        return [d for d in self.documents if all(w in d.page_content for w in words)]


@pytest.fixture()
def bm25(tmp_path: Path) -> TantivyRetriever:
    return TantivyRetriever.build(DOCS, tmp_path / "index")


def test_fanfuse_as_langchain_retriever(bm25: TantivyRetriever) -> None:
    with MultiQueryRetriever({"bm25": bm25}, top_k=2) as multi:
        retriever = FanfuseRetriever(retriever=multi, search_kwargs={"filter": {"team": "y"}})
        documents = retriever.invoke("rank fusion")
        assert [d.id for d in documents] == ["b"]
        assert documents[0].page_content == "reciprocal rank fusion is simple"
        assert documents[0].metadata["title"] == "Beta"
        assert documents[0].metadata["provenance"][0]["retriever"] == "bm25"
        assert [d.id for d in asyncio.run(retriever.ainvoke("rank fusion"))] == ["b"]


def test_langchain_retriever_fused_with_bm25(bm25: TantivyRetriever) -> None:
    keyword = KeywordRetriever(
        documents=[Document(page_content=d["text"], id=d["id"]) for d in DOCS]  # type: ignore[arg-type]
    )
    adapter = LangChainRetriever(keyword)
    assert [h.id for h in adapter.search("fusion", 1)] == ["a"]
    with MultiQueryRetriever({"bm25": bm25, "keyword": adapter}, top_k=3) as multi:
        result = multi.search("cosine similarity", expansion=False)
    assert result.ids == ["c"]
    assert {p.retriever for p in result.hits[0].provenance} == {"bm25", "keyword"}


def test_langchain_document_without_id_is_a_clear_error() -> None:
    adapter = LangChainRetriever(KeywordRetriever(documents=[Document(page_content="no id here")]))
    with pytest.raises(FusionError, match=r"without an id \(Document.id or metadata\['id'\]\)"):
        adapter.search("id", 5)
