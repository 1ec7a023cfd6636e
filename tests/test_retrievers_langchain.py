"""fanfuse as a LangChain retriever, and LangChain retrievers (sync and async) as fanfuse branches,
against the real langchain-core (installed by the dev extra)."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

import pytest

pytest.importorskip("langchain_core")

from fanfuse import MultiQueryRetriever, fuse
from fanfuse.errors import InvalidCorpus
from fanfuse.integrations.langchain import AsyncLangChainRetriever, FanfuseRetriever, LangChainRetriever
from fanfuse.retrievers.tantivy_index import TantivyRetriever
from langchain_core.callbacks import AsyncCallbackManagerForRetrieverRun, CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from pydantic import Field

DOCS = [
    {"id": "a", "title": "Alpha", "text": "rank fusion merges ranked lists", "team": "x"},
    {"id": "b", "title": "Beta", "text": "reciprocal rank fusion is simple", "team": "y"},
    {"id": "c", "title": "Gamma", "text": "dense vectors and cosine similarity", "team": "x"},
]


class KeywordRetriever(BaseRetriever):
    """A real LangChain retriever: the documents containing any query word, most words first; its
    async path is its own coroutine, and it records which path ran."""

    documents: list[Document]
    calls: list[str] = Field(default_factory=list)

    def _matches(self, query: str) -> list[Document]:
        words = query.lower().split()
        counted = [(sum(w in d.page_content for w in words), i, d) for i, d in enumerate(self.documents)]
        return [d for n, _, d in sorted(counted, key=lambda t: (-t[0], t[1])) if n]

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun
    ) -> list[Document]:
        self.calls.append("sync")
        return self._matches(query)

    async def _aget_relevant_documents(
        self, query: str, *, run_manager: AsyncCallbackManagerForRetrieverRun
    ) -> list[Document]:
        self.calls.append("async")
        return self._matches(query)


def keyword_retriever() -> KeywordRetriever:
    return KeywordRetriever(
        documents=[Document(page_content=d["text"], id=d["id"]) for d in DOCS]  # type: ignore[arg-type]
    )


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


def test_scores_and_provenance_reach_the_langchain_documents(bm25: TantivyRetriever) -> None:
    with MultiQueryRetriever({"bm25": bm25, "keyword": LangChainRetriever(keyword_retriever())}) as multi:
        retriever = FanfuseRetriever(retriever=multi, search_kwargs={"expansion": False})
        documents = retriever.invoke("rank fusion")
        expected = multi.search("rank fusion", expansion=False)
    assert [d.id for d in documents] == expected.ids
    for document, hit in zip(documents, expected.hits, strict=True):
        assert document.metadata["score"] == pytest.approx(hit.score)
        assert [(p["retriever"], p["rank"]) for p in document.metadata["provenance"]] == [
            (p.retriever, p.rank) for p in hit.provenance
        ]
    # Both branches found "a" and "b": each document says so, with each branch's contribution.
    assert {p["retriever"] for p in documents[0].metadata["provenance"]} == {"bm25", "keyword"}
    assert sum(p["contribution"] for p in documents[0].metadata["provenance"]) == pytest.approx(
        documents[0].metadata["score"]
    )


def test_langchain_retriever_fused_with_bm25(bm25: TantivyRetriever) -> None:
    adapter = LangChainRetriever(keyword_retriever())
    assert [h.id for h in adapter.search("fusion", 1)] == ["a"]
    with MultiQueryRetriever({"bm25": bm25, "keyword": adapter}, top_k=3) as multi:
        result = multi.search("cosine similarity", expansion=False)
    assert result.ids == ["c"]
    assert {p.retriever for p in result.hits[0].provenance} == {"bm25", "keyword"}


def test_async_langchain_branch_awaits_ainvoke(bm25: TantivyRetriever) -> None:
    keyword = keyword_retriever()
    adapter = AsyncLangChainRetriever(keyword)
    with MultiQueryRetriever({"bm25": bm25, "keyword": adapter}, top_k=3) as multi:
        result = asyncio.run(multi.asearch("rank fusion", expansion=False))
        bm25_ids = [h.id for h in bm25.search("rank fusion", multi.top_k * 2)]
    assert keyword.calls == ["async"]
    keyword_ids = ["a", "b"]  # both words in a and b; c has neither
    assert result.ids == fuse([bm25_ids, keyword_ids], method="rrf", k=60, top_k=3).ids


def test_langchain_document_without_id_is_a_clear_error() -> None:
    adapter = LangChainRetriever(KeywordRetriever(documents=[Document(page_content="no id here")]))
    with pytest.raises(InvalidCorpus, match=r"without an id \(Document.id or metadata\['id'\]\)"):
        adapter.search("id", 5)


class FilterRecordingRetriever(BaseRetriever):
    """A real LangChain retriever that takes `filter` as a search keyword, as vector stores' do, and
    records it; it returns every document, so what the adapter keeps is what the filter decides."""

    documents: list[Document]
    filters: list[object] = Field(default_factory=list)

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun, filter: object = None
    ) -> list[Document]:
        self.filters.append(filter)
        return self.documents


def test_filters_reach_the_store_and_what_comes_back_is_checked() -> None:
    documents = [
        Document(page_content="x", id="one", metadata={"n": 1, "tags": ["a", "b"]}),
        Document(page_content="x", id="true", metadata={"n": True, "tags": "a"}),
    ]
    store = FilterRecordingRetriever(documents=documents)
    adapter = LangChainRetriever(store)
    assert [h.id for h in adapter.search("q", 5, {"n": 1})] == ["one"]  # the store let True == 1 through
    assert [h.id for h in adapter.search("q", 5, {"tags": "a"})] == ["one", "true"]
    own_syntax = {"n": {"$gte": 1}}  # the store's own: passed as it is, its meaning kept
    assert [h.id for h in adapter.search("q", 5, own_syntax)] == ["one", "true"]
    assert store.filters == [{"n": 1}, {"tags": "a"}, own_syntax]


def test_search_kwargs_k_of_langchain_is_refused_naming_rrf_k_and_top_k(bm25: TantivyRetriever) -> None:
    # LangChain's retrievers take search_kwargs={"k": 4} as how many documents; a search's k would have
    # been the RRF constant, and the count left at top_k.
    refused = (
        "search_kwargs keyword k is renamed: use rrf_k (the RRF constant; how many hits come back is top_k)"
    )
    with MultiQueryRetriever({"bm25": bm25}) as multi:
        with pytest.raises(TypeError, match=f"^{re.escape(refused)}$"):
            FanfuseRetriever(retriever=multi, search_kwargs={"k": 1})
        assert len(FanfuseRetriever(retriever=multi, search_kwargs={"top_k": 1}).invoke("rank fusion")) == 1
