"""What the framework adapters wrap, against the real packages (LangChain, LlamaIndex, Haystack) and a
real Tantivy index: every adapter class that wraps a retriever refuses, when built, an object that is
not one (a search would fail on every call, dropped as a failed branch); an async adapter over a
retriever with only a sync search never holds the event loop; a conversation given through any
adapter is read by the default search of `MultiQueryRetriever`; Haystack's own filter syntax reaches
every branch as the same filter."""

from __future__ import annotations

import asyncio
import importlib
import inspect
import os
import threading
from pathlib import Path
from typing import Any

import pytest
from fanfuse import InvalidFilter
from fanfuse.multiquery import MultiQueryRetriever
from fanfuse.retrievers.tantivy_index import TantivyRetriever

os.environ.setdefault("HAYSTACK_TELEMETRY_ENABLED", "False")  # no telemetry calls from the tests

FRAMEWORKS = {"langchain": "langchain_core", "llamaindex": "llama_index.core", "haystack": "haystack"}

# The animals eat, but the barn owl's document says it otherwise: only the conversation's topic finds it.
DOCUMENTS = [
    {
        "id": "owl",
        "text": "barn owls swallow mice, voles, shrews whole at night",
        "product": "cloud",
    },
    *({"id": a, "text": f"{a} eat", "product": p} for a, p in [("cats", "cloud"), ("dogs", "local")]),
    *({"id": a, "text": f"{a} eat", "product": "cloud"} for a in ["cows", "goats", "ducks", "hens", "pigs"]),
]
QUESTION, EARLIER = "and what does it eat?", "tell me about barn owls"


@pytest.fixture(scope="module")
def bm25(tmp_path_factory: pytest.TempPathFactory) -> TantivyRetriever:
    directory = Path(tmp_path_factory.mktemp("animals")) / "index"
    return TantivyRetriever.build(DOCUMENTS, directory)


def adapter_classes() -> list[tuple[str, type]]:
    """Every public class of the adapters whose constructor takes the `retriever` it wraps."""
    found = []
    for module_name, package in FRAMEWORKS.items():
        if importlib.util.find_spec(package.split(".")[0]) is None:
            continue
        module = importlib.import_module(f"fanfuse.integrations.{module_name}")
        for name in module.__all__:
            value = getattr(module, name)
            fields = {*inspect.signature(value.__init__).parameters, *getattr(value, "model_fields", ())}
            if inspect.isclass(value) and "retriever" in fields:  # model_fields: a pydantic model's
                found.append((f"{module_name}.{name}", value))
    return found


ADAPTERS = adapter_classes()


def test_the_adapters_are_found() -> None:
    """The enumeration itself: each framework's three classes (one way in, a sync and an async out)."""
    assert len(ADAPTERS) == 3 * len(FRAMEWORKS), ADAPTERS


class NotARetriever:
    """What a user may pass by mistake: a vector store, a document store, a config object."""

    def similarity_search(self, query: str) -> list[Any]:
        return []


@pytest.mark.parametrize("wrong", [42, NotARetriever()], ids=["int", "object"])
@pytest.mark.parametrize(("name", "cls"), ADAPTERS, ids=[n for n, _ in ADAPTERS])
def test_every_adapter_refuses_what_is_not_a_retriever_when_built(
    name: str, cls: type, wrong: object
) -> None:
    # LangChain's FanfuseRetriever is a pydantic model: its refusal is pydantic's, naming the field too.
    with pytest.raises((TypeError, ValueError)) as refused:
        cls(retriever=wrong)
    message = str(refused.value)
    assert "retriever" in message and type(wrong).__name__ in message, message


def sync_only(framework: str, released: threading.Event) -> Any:
    """A retriever of `framework` with only a sync search, which can answer only once the event loop
    has run on while it waits (the test sets `released` from a task on the loop)."""
    if framework == "langchain":
        from langchain_core.documents import Document
        from langchain_core.retrievers import BaseRetriever

        class LangChainSync(BaseRetriever):
            def _get_relevant_documents(self, query: str, *, run_manager: Any) -> list[Document]:
                return [Document("x", id="owl")] if released.wait(10) else []

        return LangChainSync()
    if framework == "llamaindex":
        from llama_index.core.retrievers import BaseRetriever
        from llama_index.core.schema import NodeWithScore, TextNode

        class LlamaIndexSync(BaseRetriever):
            def _retrieve(self, query_bundle: Any) -> list[NodeWithScore]:
                return (
                    [NodeWithScore(node=TextNode(id_="owl", text="x"), score=1.0)]
                    if released.wait(10)
                    else []
                )

        return LlamaIndexSync()
    from haystack import Document, component

    @component
    class HaystackSync:
        @component.output_types(documents=list[Document])
        def run(self, query: str, top_k: int = 10) -> dict[str, list[Document]]:
            return {"documents": [Document(id="owl", content="x")] if released.wait(10) else []}

    return HaystackSync()


ASYNC_ADAPTERS = [(n, c) for n, c in ADAPTERS if n.split(".")[1].startswith("Async")]


@pytest.mark.parametrize(("name", "cls"), ASYNC_ADAPTERS, ids=[n for n, _ in ASYNC_ADAPTERS])
def test_an_async_adapter_over_a_sync_only_retriever_never_holds_the_loop(
    name: str, cls: type, bm25: TantivyRetriever
) -> None:
    released = threading.Event()
    wrapped = sync_only(name.split(".")[0], released)
    if name.startswith("haystack"):  # a component without run_async is refused, naming the sync class
        with pytest.raises(TypeError, match="has no run_async method; use HaystackRetriever"):
            cls(wrapped)
        return
    multi = MultiQueryRetriever({"bm25": bm25, "sync": cls(wrapped)}, top_k=3, branch_timeout=30)

    async def search() -> Any:
        async def release() -> None:
            await asyncio.sleep(0)
            released.set()

        task = asyncio.ensure_future(release())
        result = await multi.asearch("owls", expansion=False)
        await task
        return result

    result = asyncio.run(search())
    multi.close()
    sync_branch = [b for b in result.diagnostics.branches if b.retriever == "sync"]
    assert [b.hits for b in sync_branch] == [1], result.diagnostics.branches  # answered once released


def adapter_results(framework: str, multi: MultiQueryRetriever, history: bool) -> list[str]:
    """The ids a framework's own retriever of `multi` returns for the follow-up question."""
    if framework == "langchain":
        from fanfuse.integrations.langchain import FanfuseRetriever as LangChain
        from langchain_core.messages import HumanMessage

        kwargs = {"history": [HumanMessage(EARLIER)]} if history else {}
        return [d.id for d in LangChain(retriever=multi).invoke(QUESTION, **kwargs)]
    if framework == "llamaindex":
        from fanfuse.integrations.llamaindex import FanfuseRetriever as LlamaIndex
        from llama_index.core.base.llms.types import ChatMessage

        turns = [ChatMessage(role="user", content=EARLIER)] if history else None
        return [n.node.node_id for n in LlamaIndex(multi, history=turns).retrieve(QUESTION)]
    from fanfuse.integrations.haystack import FanfuseRetriever as Haystack
    from haystack.dataclasses import ChatMessage as HaystackMessage

    messages = [HaystackMessage.from_user(EARLIER)] if history else None
    return [d.id for d in Haystack(multi).run(query=QUESTION, history=messages)["documents"]]


FRAMEWORK_NAMES = sorted({n.split(".")[0] for n, _ in ADAPTERS})


@pytest.mark.parametrize("framework", FRAMEWORK_NAMES)
def test_the_default_search_reads_a_conversation_given_through_an_adapter(
    framework: str, bm25: TantivyRetriever
) -> None:
    multi = MultiQueryRetriever({"bm25": bm25}, top_k=len(DOCUMENTS))
    alone, with_history = adapter_results(framework, multi, False), adapter_results(framework, multi, True)
    multi.close()
    assert "owl" not in alone and "owl" in with_history, (alone, with_history)


def test_the_default_search_writes_the_joined_reading_and_nothing_without_history(
    bm25: TantivyRetriever,
) -> None:
    multi = MultiQueryRetriever({"bm25": bm25}, top_k=3)
    with_history = multi.search(QUESTION, history=[EARLIER]).diagnostics.variants
    alone = multi.search(QUESTION).diagnostics.variants
    multi.close()
    assert f"{EARLIER} {QUESTION.rstrip('?')}" in [v.text for v in with_history], with_history
    assert all(v.source != "history" for v in alone), alone


def test_haystack_filter_syntax_reaches_every_branch(bm25: TantivyRetriever) -> None:
    pytest.importorskip("haystack")
    from fanfuse.integrations.haystack import FanfuseRetriever, HaystackRetriever
    from haystack import Document
    from haystack.components.retrievers.in_memory import InMemoryBM25Retriever
    from haystack.document_stores.in_memory import InMemoryDocumentStore

    store = InMemoryDocumentStore()
    store.write_documents(
        [Document(id=d["id"], content=d["text"], meta={"product": d["product"]}) for d in DOCUMENTS]
    )
    branches = {"bm25": bm25, "store": HaystackRetriever(InMemoryBM25Retriever(document_store=store))}
    component = FanfuseRetriever(MultiQueryRetriever(branches, top_k=10))
    cloud = {"field": "meta.product", "operator": "==", "value": "cloud"}
    for filters in (cloud, {"operator": "AND", "conditions": [cloud]}, {"product": "cloud"}):
        documents = component.run(query="eat", filters=filters)["documents"]
        assert documents and all(d.meta["product"] == "cloud" for d in documents), filters
        assert {"bm25", "store"} <= {p["retriever"] for d in documents for p in d.meta["provenance"]}, (
            documents
        )
    either = {"field": "meta.product", "operator": "in", "value": ["local"]}
    assert [d.id for d in component.run(query="eat", filters=either)["documents"]] == ["dogs"]
    for unread in (
        {"field": "meta.year", "operator": ">", "value": 2020},
        {"operator": "OR", "conditions": [cloud]},
        {"field": "content", "operator": "==", "value": "x"},
        {"operator": "AND", "conditions": [cloud, {**cloud, "value": "local"}]},
        {**cloud, "value": {"$gte": 2020}},  # a store's own query where a value goes
        {**cloud, "value": None},
        {**either, "value": []},
    ):
        with pytest.raises(InvalidFilter, match=r"^filters: "):
            component.run(query="eat", filters=unread)
    component.retriever.close()


@pytest.mark.parametrize(("text", "shown"), [(None, ""), ("owls", "owls"), (3, "3")])
def test_a_hit_without_text_is_a_document_without_text(text: object, shown: str) -> None:
    from fanfuse.integrations.conversion import fused_text_and_metadata
    from fanfuse.multiquery import FusedHit

    hit = FusedHit(id="d", score=1.0, payload={"text": text, "product": "cloud"}, provenance=[])
    assert fused_text_and_metadata(hit) == (
        shown,
        {"product": "cloud", "id": "d", "score": 1.0, "provenance": []},
    )


def test_a_haystack_pipeline_with_fanfuse_saves_and_loads(bm25: TantivyRetriever) -> None:
    """A component made with `from_index` is saved by the pipeline (to_dict, dumps) and loaded again
    searching the same; one over a retriever built in code is refused naming the way that saves."""
    pytest.importorskip("haystack")
    from fanfuse.integrations.haystack import FanfuseRetriever
    from haystack import Pipeline
    from haystack.core.errors import SerializationError

    pipeline = Pipeline()
    made = FanfuseRetriever.from_index(str(bm25.directory), search_kwargs={"top_k": 3}, dense=False)
    pipeline.add_component("retriever", made)
    saved = pipeline.dumps()
    # Haystack loads only the modules it is told to trust.
    loaded = Pipeline.loads(saved, allowed_modules=["fanfuse.integrations.haystack"])
    assert loaded.dumps() == saved
    ask = {"retriever": {"query": "eat", "history": None}}
    found = [[d.id for d in p.run(ask)["retriever"]["documents"]] for p in (pipeline, loaded)]
    assert found[0] == found[1] and len(found[0]) == 3, found
    for component in (made, loaded.get_component("retriever")):
        component.retriever.close()
    built = Pipeline()
    built.add_component("retriever", FanfuseRetriever(MultiQueryRetriever({"bm25": bm25})))
    with pytest.raises(SerializationError, match=r"make it with FanfuseRetriever\.from_index"):
        built.dumps()


class Failing:
    """A backend that fails every search, as one with a wrong client or a dropped connection does."""

    def search(self, query: str, k: int, filter: Any = None) -> list[Any]:
        raise ConnectionError("the store refused the connection")


@pytest.mark.parametrize("path", ["search", "asearch"])
def test_a_failed_branch_is_logged_as_a_warning_with_its_reason(
    path: str, bm25: TantivyRetriever, caplog: pytest.LogCaptureFixture
) -> None:
    """A search that lost a backend still answers (the others' hits), and says why at WARNING, the
    level a service logs by default; a search that lost nothing logs at INFO only."""
    multi = MultiQueryRetriever({"bm25": bm25, "store": Failing()}, top_k=3)
    caplog.set_level("INFO", logger="fanfuse")
    for retrievers in (multi, MultiQueryRetriever({"bm25": bm25}, top_k=3)):
        result = retrievers.search("eat") if path == "search" else asyncio.run(retrievers.asearch("eat"))
        assert result.hits
        retrievers.close()
    warned = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    assert (
        len(warned) == 1 and "failed: store: ConnectionError: the store refused the connection" in warned[0]
    )


def test_an_async_factory_may_build_what_only_looks_like_a_llamaindex_retriever() -> None:
    """A factory's stand-in with an async `aretrieve` of its own is awaited; one with a sync
    `retrieve` only is searched in a thread."""
    pytest.importorskip("llama_index.core")
    from fanfuse.integrations.llamaindex import AsyncLlamaIndexRetriever
    from llama_index.core.schema import NodeWithScore, TextNode

    class Awaited:
        async def aretrieve(self, query: str) -> list[NodeWithScore]:
            return [NodeWithScore(node=TextNode(id_="a", text="x"), score=1.0)]

    class Threaded:
        def retrieve(self, query: str) -> list[NodeWithScore]:
            return [NodeWithScore(node=TextNode(id_="b", text="x"), score=1.0)]

    for made, found in ((Awaited(), "a"), (Threaded(), "b")):
        hits = asyncio.run(AsyncLlamaIndexRetriever(lambda k, f, m=made: m).search("q", 3))
        assert [h.id for h in hits] == [found]
