"""fanfuse as a LlamaIndex retriever (alone and in a query engine), and LlamaIndex retrievers (sync
and async, fixed or built per search) as fanfuse branches, against the real llama-index-core with
its in-memory vector index and a local deterministic embedding (no network, no model)."""

from __future__ import annotations

import asyncio
import hashlib
from pathlib import Path

import pytest

pytest.importorskip("llama_index.core")

from fanfuse import MultiQueryRetriever, fuse
from fanfuse.errors import InvalidFilter
from fanfuse.integrations.llamaindex import (
    AsyncLlamaIndexRetriever,
    FanfuseRetriever,
    LlamaIndexRetriever,
    metadata_filters,
)
from fanfuse.retrievers import Hit
from fanfuse.retrievers.tantivy_index import TantivyRetriever
from framework_docs import DOCS, LoopRecordingRetriever
from llama_index.core import VectorStoreIndex
from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.embeddings import BaseEmbedding
from llama_index.core.llms import MockLLM
from llama_index.core.query_engine import RetrieverQueryEngine
from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode
from llama_index.core.vector_stores.types import FilterOperator, MetadataFilters

DIMENSIONS = 64


class HashingEmbedding(BaseEmbedding):
    """Bag of words hashed into 64 buckets: deterministic, local, and similar texts are close."""

    def _vector(self, text: str) -> list[float]:
        vector = [0.0] * DIMENSIONS
        for word in text.lower().split():
            vector[int(hashlib.sha256(word.encode()).hexdigest(), 16) % DIMENSIONS] += 1.0
        return vector

    def _get_query_embedding(self, query: str) -> list[float]:
        return self._vector(query)

    async def _aget_query_embedding(self, query: str) -> list[float]:
        return self._vector(query)

    def _get_text_embedding(self, text: str) -> list[float]:
        return self._vector(text)


class WordRetriever(BaseRetriever):
    """A LlamaIndex retriever of its own: nodes sharing most words with the query; it records which
    of its paths (sync, async) ran."""

    def __init__(self, nodes: list[TextNode]) -> None:
        super().__init__()
        self.nodes = nodes
        self.calls: list[str] = []

    def _matches(self, query: str) -> list[NodeWithScore]:
        words = set(query.lower().split())
        scored = [(len(words & set(n.get_content().split())), n) for n in self.nodes]
        return [NodeWithScore(node=n, score=float(s)) for s, n in sorted(scored, key=lambda t: -t[0]) if s]

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        self.calls.append("sync")
        return self._matches(query_bundle.query_str)

    async def _aretrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        self.calls.append("async")
        return self._matches(query_bundle.query_str)


def nodes() -> list[TextNode]:
    return [TextNode(id_=d["id"], text=d["text"], metadata={"team": d["team"]}) for d in DOCS]


@pytest.fixture()
def bm25(tmp_path: Path) -> TantivyRetriever:
    return TantivyRetriever.build(DOCS, tmp_path / "index")


@pytest.fixture(scope="module")
def vector_index() -> VectorStoreIndex:
    return VectorStoreIndex(nodes=nodes(), embed_model=HashingEmbedding(model_name="hashing"))


def test_fanfuse_as_llamaindex_retriever_carries_score_and_provenance(bm25: TantivyRetriever) -> None:
    with MultiQueryRetriever({"bm25": bm25}, top_k=3) as multi:
        retriever = FanfuseRetriever(multi, search_kwargs={"expansion": False})
        scored = retriever.retrieve("rank fusion")
        expected = multi.search("rank fusion", expansion=False)
    assert [s.node.node_id for s in scored] == expected.ids == ["a", "b", "d"]  # "ranked" stems to "rank"
    for node, hit in zip(scored, expected.hits, strict=True):
        assert isinstance(node.node, TextNode)
        assert node.score == pytest.approx(hit.score)
        assert node.node.get_content() == hit.payload["text"]
        assert node.node.metadata["title"] == hit.payload["title"]
        assert node.node.metadata["team"] == hit.payload["team"]
        assert node.node.metadata["provenance"] == [
            {"variant": "rank fusion", "variant_index": 0, "retriever": "bm25", "rank": p.rank,
             "contribution": pytest.approx(p.contribution)}
            for p in hit.provenance
        ]  # fmt: skip


def test_aretrieve_awaits_asearch_on_the_callers_loop() -> None:
    branch = LoopRecordingRetriever([Hit("x", 1.0, {"text": "x text"}), Hit("y", 0.5, {"text": "y text"})])
    with MultiQueryRetriever({"recorded": branch}, top_k=2, expansion=False) as multi:
        retriever = FanfuseRetriever(multi)

        async def main() -> tuple[list[NodeWithScore], asyncio.AbstractEventLoop]:
            return await retriever.aretrieve("anything"), asyncio.get_running_loop()

        scored, loop = asyncio.run(main())
    assert [s.node.node_id for s in scored] == ["x", "y"]
    assert branch.loops == [loop]  # not the background loop a sync search would use


def test_fanfuse_in_a_llamaindex_query_engine(bm25: TantivyRetriever) -> None:
    # MockLLM (LlamaIndex's own) stands in for a model server: it answers with the prompt it got.
    with MultiQueryRetriever({"bm25": bm25}, top_k=2, expansion=False) as multi:
        engine = RetrieverQueryEngine.from_args(FanfuseRetriever(multi), llm=MockLLM())
        response = engine.query("cosine similarity")
        async_response = asyncio.run(engine.aquery("cosine similarity"))
    assert [n.node.node_id for n in response.source_nodes] == ["c", "d"]
    assert [n.node.node_id for n in async_response.source_nodes] == ["c", "d"]
    prompt = str(response)
    assert "dense vectors and cosine similarity" in prompt and "title: Gamma" in prompt
    assert "provenance" not in prompt and "contribution" not in prompt


def test_llamaindex_vector_retriever_as_branch(
    bm25: TantivyRetriever, vector_index: VectorStoreIndex
) -> None:
    native = vector_index.as_retriever(similarity_top_k=3)
    adapter = LlamaIndexRetriever(native)
    expected = native.retrieve("dense ranked vectors")
    hits = adapter.search("dense ranked vectors", 2)
    assert [(h.id, h.score) for h in hits] == [(s.node.node_id, s.score) for s in expected[:2]]
    assert hits[0].payload["text"] == expected[0].node.get_content()
    assert hits[0].payload["team"] == expected[0].node.metadata["team"]

    with MultiQueryRetriever({"bm25": bm25, "vectors": adapter}, top_k=4) as multi:
        result = multi.search("dense ranked vectors", expansion=False)
        bm25_ids = [h.id for h in bm25.search("dense ranked vectors", 8)]
    vector_ids = [s.node.node_id for s in expected]
    assert result.ids == fuse([bm25_ids, vector_ids], method="rrf", k=60, top_k=4).ids
    assert {p.retriever for p in result.hits[0].provenance} == {"bm25", "vectors"}


def test_async_branch_uses_aretrieve(bm25: TantivyRetriever) -> None:
    words = WordRetriever(nodes())
    with MultiQueryRetriever({"bm25": bm25, "words": AsyncLlamaIndexRetriever(words)}, top_k=2) as multi:
        result = asyncio.run(multi.asearch("cosine vectors", expansion=False))
    assert words.calls == ["async"]
    assert result.ids[0] in {"c", "d"}
    assert {p.retriever for p in result.hits[0].provenance} == {"bm25", "words"}


def test_per_search_k_and_filter_through_from_index(vector_index: VectorStoreIndex) -> None:
    for adapter in (
        LlamaIndexRetriever.from_index(vector_index),
        AsyncLlamaIndexRetriever.from_index(vector_index),
    ):
        search = adapter.search("dense ranked vectors", 3, {"team": ["x", "y"]})
        hits = asyncio.run(search) if asyncio.iscoroutine(search) else search
        assert len(hits) == 3 and {h.payload["team"] for h in hits} <= {"x", "y"}
        unfiltered = adapter.search("dense ranked vectors", 1)
        one = asyncio.run(unfiltered) if asyncio.iscoroutine(unfiltered) else unfiltered
        assert [h.id for h in one] == ["d"]  # the only document with all three words; k honoured


def test_filter_translation() -> None:
    filters = metadata_filters({"team": "x", "year": [2023, 2024]})
    assert [(f.key, f.value, f.operator) for f in filters.filters] == [  # type: ignore[union-attr]
        ("team", "x", FilterOperator.EQ),
        ("year", [2023, 2024], FilterOperator.IN),
    ]
    native = MetadataFilters(filters=[])
    assert metadata_filters(native) is native
    with pytest.raises(InvalidFilter, match=r"filter\['flag'\]: LlamaIndex filters take str, int or float"):
        metadata_filters({"flag": True})
    with pytest.raises(InvalidFilter, match=r"filter\['team'\] = \[\]"):
        metadata_filters({"team": []})


def test_filter_on_a_fixed_retriever_fails_its_branch_only(
    bm25: TantivyRetriever, vector_index: VectorStoreIndex
) -> None:
    adapter = LlamaIndexRetriever(vector_index.as_retriever(similarity_top_k=2), name="vectors")
    with pytest.raises(InvalidFilter, match=r"takes its filters when built.*from_index"):
        adapter.search("cosine", 2, {"team": "x"})
    with MultiQueryRetriever({"bm25": bm25, "vectors": adapter}, top_k=2) as multi:
        result = multi.search("cosine", expansion=False, filter={"team": "x"})
    assert result.ids == ["c"]
    [failed] = result.diagnostics.failed_branches
    assert failed.retriever == "vectors" and "from_index" in (failed.error or "")


def test_not_a_llamaindex_retriever_is_a_type_error() -> None:
    with pytest.raises(TypeError, match="BaseRetriever or a function"):
        LlamaIndexRetriever(42)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="must be a MultiQueryRetriever"):
        FanfuseRetriever(object())  # type: ignore[arg-type]
