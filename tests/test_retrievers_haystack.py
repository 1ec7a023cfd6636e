"""fanfuse as a Haystack component (alone and inside real sync and async pipelines), and Haystack
retriever components (sync and async) as fanfuse branches, against the real haystack-ai with its
in-memory document store and BM25 retriever (no network)."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any

import pytest

os.environ.setdefault("HAYSTACK_TELEMETRY_ENABLED", "False")  # no telemetry calls from the tests
pytest.importorskip("haystack")

import haystack
from fanfuse import MultiQueryRetriever, fuse
from fanfuse.errors import InvalidFilter
from fanfuse.integrations.haystack import (
    AsyncHaystackRetriever,
    FanfuseRetriever,
    HaystackRetriever,
    haystack_filters,
)
from fanfuse.retrievers import Hit
from fanfuse.retrievers.tantivy_index import TantivyRetriever
from framework_docs import DOCS, LoopRecordingRetriever
from haystack import Document, Pipeline
from haystack.components.builders import PromptBuilder
from haystack.components.retrievers.in_memory import InMemoryBM25Retriever
from haystack.document_stores.in_memory import InMemoryDocumentStore

TEMPLATE = (
    "{% for d in documents %}{{ d.id }}:{{ d.meta.provenance[0].retriever }}:{{ d.content }}\n{% endfor %}"
)


@pytest.fixture()
def bm25(tmp_path: Path) -> TantivyRetriever:
    return TantivyRetriever.build(DOCS, tmp_path / "index")


@pytest.fixture()
def haystack_bm25() -> InMemoryBM25Retriever:
    store = InMemoryDocumentStore()
    store.write_documents([Document(id=d["id"], content=d["text"], meta={"team": d["team"]}) for d in DOCS])
    return InMemoryBM25Retriever(document_store=store)


def prompt_pipeline(multi: MultiQueryRetriever, *, asynchronous: bool) -> Any:
    """fanfuse -> PromptBuilder. Haystack 2.x awaits run_async in an AsyncPipeline, 3.x in Pipeline."""
    pipeline = haystack.AsyncPipeline() if asynchronous and hasattr(haystack, "AsyncPipeline") else Pipeline()
    pipeline.add_component("retriever", FanfuseRetriever(multi))
    pipeline.add_component("prompt", PromptBuilder(template=TEMPLATE))
    pipeline.connect("retriever.documents", "prompt.documents")
    return pipeline


def test_component_carries_score_and_provenance(bm25: TantivyRetriever) -> None:
    with MultiQueryRetriever({"bm25": bm25}, top_k=3) as multi:
        output = FanfuseRetriever(multi, search_kwargs={"expansion": False}).run(query="cosine vectors")
        expected = multi.search("cosine vectors", expansion=False)
    documents = output["documents"]
    assert [d.id for d in documents] == expected.ids == ["c", "d"]
    for document, hit in zip(documents, expected.hits, strict=True):
        assert document.score == pytest.approx(hit.score) == document.meta["score"]
        assert document.content == hit.payload["text"]
        assert document.meta["title"] == hit.payload["title"] and document.meta["team"] == hit.payload["team"]
        assert [(p["variant"], p["retriever"], p["rank"]) for p in document.meta["provenance"]] == [
            (p.variant, p.retriever, p.rank) for p in hit.provenance
        ]


def test_component_top_k_and_filters_reach_the_search(bm25: TantivyRetriever) -> None:
    with MultiQueryRetriever({"bm25": bm25}, top_k=3, expansion=False) as multi:
        component = FanfuseRetriever(multi)
        assert [d.id for d in component.run(query="rank", top_k=1)["documents"]] == ["a"]
        filtered = component.run(query="rank", filters={"team": "y"})["documents"]
    assert [d.id for d in filtered] == ["b"]


def test_component_in_a_pipeline_sync_and_async(bm25: TantivyRetriever) -> None:
    branch = LoopRecordingRetriever([Hit("c", 2.0, {"text": "dense vectors and cosine similarity"})])
    with MultiQueryRetriever({"bm25": bm25, "recorded": branch}, top_k=2, expansion=False) as multi:
        data = {"retriever": {"query": "cosine vectors"}}
        prompt = prompt_pipeline(multi, asynchronous=False).run(data)["prompt"]["prompt"]

        async def main() -> tuple[dict[str, Any], asyncio.AbstractEventLoop]:
            output = await prompt_pipeline(multi, asynchronous=True).run_async(data)
            return output, asyncio.get_running_loop()

        async_output, loop = asyncio.run(main())
    # "c" is first in both branches, so its first sighting is the bm25 one (branch order).
    assert prompt == "c:bm25:dense vectors and cosine similarity\nd:bm25:cosine of dense ranked vectors\n"
    assert async_output["prompt"]["prompt"] == prompt
    assert branch.loops[-1] is loop  # run_async awaited asearch on the pipeline's own loop


def test_haystack_bm25_as_branch(bm25: TantivyRetriever, haystack_bm25: InMemoryBM25Retriever) -> None:
    native = haystack_bm25.run(query="dense ranked vectors", top_k=3)["documents"]
    hits = HaystackRetriever(haystack_bm25).search("dense ranked vectors", 3)
    assert [(h.id, h.score) for h in hits] == [(d.id, d.score) for d in native]
    assert hits[0].payload == {"team": native[0].meta["team"], "text": native[0].content}

    with MultiQueryRetriever(
        {"tantivy": bm25, "haystack": HaystackRetriever(haystack_bm25)}, top_k=4
    ) as multi:
        result = multi.search("dense ranked vectors", expansion=False)
        tantivy_ids = [h.id for h in bm25.search("dense ranked vectors", 8)]
        haystack_ids = [d.id for d in haystack_bm25.run(query="dense ranked vectors", top_k=8)["documents"]]
    assert result.ids == fuse([tantivy_ids, haystack_ids], method="rrf", k=60, top_k=4).ids
    assert {p.retriever for p in result.hits[0].provenance} == {"tantivy", "haystack"}


def test_async_branch_uses_run_async(haystack_bm25: InMemoryBM25Retriever) -> None:
    class AsyncOnly:  # the real component behind a guard: its sync path must not be used
        def run(self, **inputs: Any) -> dict[str, list[Document]]:
            raise AssertionError("the sync run was called")

        async def run_async(self, **inputs: Any) -> dict[str, list[Document]]:
            output: dict[str, list[Document]] = await haystack_bm25.run_async(**inputs)
            return output

    team = {"team": ["x", "y"]}
    with MultiQueryRetriever({"haystack": AsyncHaystackRetriever(AsyncOnly())}, top_k=2) as multi:
        result = asyncio.run(multi.asearch("cosine", expansion=False, filter=team))
    native = haystack_bm25.run(query="cosine", top_k=4, filters=haystack_filters(team))["documents"]
    assert result.ids == [d.id for d in native][:2] and result.ids[0] == "c"
    assert {h.payload["team"] for h in result.hits} <= {"x", "y"}  # "d" mentions cosine, but is team z
    assert not result.diagnostics.failed_branches


def test_filter_translation() -> None:
    assert haystack_filters({"team": "x", "year": [2023, 2024]}) == {
        "operator": "AND",
        "conditions": [
            {"field": "meta.team", "operator": "==", "value": "x"},
            {"field": "meta.year", "operator": "in", "value": [2023, 2024]},
        ],
    }
    native = {"field": "meta.team", "operator": "!=", "value": "x"}
    assert haystack_filters(native) == native
    with pytest.raises(InvalidFilter, match=r"filter\['team'\] = \[\]"):
        haystack_filters({"team": []})


def test_not_a_component_is_a_type_error(haystack_bm25: InMemoryBM25Retriever) -> None:
    with pytest.raises(TypeError, match=r"Haystack component with a run\(query=..., top_k=...\)"):
        HaystackRetriever(object())

    class SyncOnly:
        def run(self, query: str, top_k: int) -> dict[str, list[Document]]:
            return {"documents": []}

    with pytest.raises(TypeError, match="SyncOnly has no run_async method; use HaystackRetriever"):
        AsyncHaystackRetriever(SyncOnly())
    with pytest.raises(TypeError, match="must be a MultiQueryRetriever"):
        FanfuseRetriever(object())  # type: ignore[arg-type]
