"""One call of each public entry point with a number argument, for `test_api_numbers.py`: the call
takes the argument as a keyword and builds whatever else it needs (small runs, an index, a
framework's retriever, a connection pool that never connects). Keyed by the entry's name as the
walk of `test_api_numbers.py` finds it: `rrf` for `fanfuse.rrf`, `dask.fuse_runs` for
`fanfuse.dask.fuse_runs`."""

from __future__ import annotations

import asyncio
import functools
import shutil
from collections.abc import Callable
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import fanfuse
import numpy as np
import pytest
from fanfuse.report import adjust, compare_scores
from test_cli_search_options import DOCUMENTS

LISTS = [["a", "b"], ["b", "c"]]
SCORED = [[("a", 0.5), ("b", 0.25)], [("b", 1.0), ("c", 0.5)]]
A, B = [0.5, 0.25, 0.75, 0.1], [0.25, 0.5, 0.25, 0.2]


def embed(texts: list[str]) -> np.ndarray:
    return np.array([[len(t) + 1.0, t.count("o") + 1.0] for t in texts], dtype=np.float32)


class Context:
    """What the calls share, for one test module; what it opens is closed when the `with` ends."""

    def __init__(self, small_runs: dict[str, str], directory: Path, fixture: Callable[[str], Any]) -> None:
        self.fixture = fixture  # a fixture by name, started only for the calls that need it
        self.cleanups = ExitStack()
        self.postgres: str | None = None  # postgres_database's, once made
        self.tables = 0
        self.paths = [small_runs["run0"], small_runs["run1"]]
        self.runs = [fanfuse.read_run(p) for p in self.paths]
        self.qrels = fanfuse.read_qrels(small_runs["qrels"])
        self.output = str(directory / "out.trec")
        self.directory = directory
        self.index = fanfuse.TantivyRetriever.build(DOCUMENTS, directory / "idx")
        self.dense = fanfuse.DenseRetriever.from_documents(DOCUMENTS, embed)

    def __enter__(self) -> Context:
        return self

    def __exit__(self, *exc: object) -> None:
        self.cleanups.close()


def search(ctx: Context, **kw: Any) -> Any:
    return fanfuse.MultiQueryRetriever(ctx.index).search("owls at night", **kw)


def asearch(ctx: Context, **kw: Any) -> Any:
    return asyncio.run(fanfuse.MultiQueryRetriever(ctx.index).asearch("owls at night", **kw))


def mqr(ctx: Context, **kw: Any) -> Any:
    retrievers = {"bm25": ctx.index}
    return fanfuse.MultiQueryRetriever(retrievers, **kw).search("owls at night")


def llm(**kw: Any) -> Any:
    return fanfuse.LLMExpander(base_url="http://127.0.0.1:9", model="m", **kw)


def fuse_table(ctx: Context, **kw: Any) -> Any:
    pa = pytest.importorskip("pyarrow")
    table = pa.table({"qid": ["q1", "q1"], "docid": ["a", "b"], "score": [2.0, 1.0], "run": ["x", "y"]})
    return fanfuse.fuse_table(table, run_column="run", runs=["x", "y"], **kw)


def tfidf(**kw: Any) -> Any:
    pytest.importorskip("sklearn")
    return fanfuse.TfidfSvdEmbedder(**kw).fit(["owls hunt at night", "hawks hunt by day", "moles dig"])


CALLS: dict[str, Callable[..., Any]] = {
    "rrf": lambda ctx, **kw: fanfuse.rrf(LISTS, **kw),
    "rrf_batch": lambda ctx, **kw: fanfuse.rrf_batch([LISTS], **kw),
    "fuse": lambda ctx, **kw: fanfuse.fuse(SCORED, **kw),
    "fuse_batch": lambda ctx, **kw: fanfuse.fuse_batch([SCORED], **kw),
    "fuse_runs": lambda ctx, **kw: fanfuse.fuse_runs(ctx.runs, **kw),
    "fuse_files": lambda ctx, **kw: fanfuse.fuse_files(ctx.paths, ctx.output, **kw),
    "fuse_table": fuse_table,
    "FusionOptions.__init__": lambda ctx, **kw: fanfuse.FusionOptions(**kw),
    "FusionOptions.replace": lambda ctx, **kw: fanfuse.FusionOptions(k=1).replace(**kw),
    "randomization_test": lambda ctx, a=A, b=B, **kw: fanfuse.randomization_test(a, b, **kw),
    "paired_t": lambda ctx, a=A, b=B: fanfuse.paired_t(a, b),
    "wilcoxon_test": lambda ctx, a=A, b=B: fanfuse.wilcoxon_test(a, b),
    "tukey_hsd": lambda ctx, **kw: fanfuse.tukey_hsd(kw.get("groups", [A, B])),
    "Run.from_columns": lambda ctx, **kw: fanfuse.Run.from_columns(["q1"], ["d1"], kw.get("scores", [1.0])),
    "train_fusion": lambda ctx, **kw: fanfuse.train_fusion(
        ctx.runs, ctx.qrels, method="slidefuse" if "window" in kw else "probfuse", **kw
    ),
    "compare": lambda ctx, **kw: fanfuse.compare(ctx.runs, ctx.qrels, ["ndcg@10"], test="fisher", **kw),
    "MultiQueryRetriever.__init__": mqr,
    "MultiQueryRetriever.search": search,
    "MultiQueryRetriever.asearch": asearch,
    "HeuristicExpander.__init__": lambda ctx, **kw: fanfuse.HeuristicExpander(**kw).expand("owls at night"),
    "HeuristicExpander.expand": lambda ctx, **kw: fanfuse.HeuristicExpander().expand("owls at night", **kw),
    "HeuristicExpander.aexpand": lambda ctx, **kw: asyncio.run(
        fanfuse.HeuristicExpander().aexpand("owls at night", **kw)
    ),
    "StaticExpander.expand": lambda ctx, **kw: fanfuse.StaticExpander({"q": ["r"]}).expand("q", **kw),
    "StaticExpander.aexpand": lambda ctx, **kw: asyncio.run(
        fanfuse.StaticExpander({"q": ["r"]}).aexpand("q", **kw)
    ),
    "CallableExpander.expand": lambda ctx, **kw: fanfuse.CallableExpander(lambda q: [q]).expand("q", **kw),
    "CallableExpander.aexpand": lambda ctx, **kw: asyncio.run(
        fanfuse.CallableExpander(lambda q: [q]).aexpand("q", **kw)
    ),
    "LLMExpander.__init__": lambda ctx, **kw: llm(**kw),
    "LLMExpander.expand": lambda ctx, **kw: llm().expand("q", **kw),
    "LLMExpander.aexpand": lambda ctx, **kw: asyncio.run(llm().aexpand("q", **kw)),
    "VariantCache.__init__": lambda ctx, **kw: fanfuse.VariantCache(**kw),
    "TantivyRetriever.build": lambda ctx, **kw: fanfuse.TantivyRetriever.build(
        DOCUMENTS, ctx.directory / "built", **kw
    ),
    "TantivyRetriever.search": lambda ctx, **kw: ctx.index.search("owls", **kw),
    "TantivyRetriever.search_batch": lambda ctx, **kw: ctx.index.search_batch(["owls", "mice"], **kw),
    "DenseRetriever.__init__": lambda ctx, **kw: fanfuse.DenseRetriever(embed, ["d"], embed(["d"]), **kw),
    "DenseRetriever.search_batch": lambda ctx, **kw: fanfuse.DenseRetriever.from_documents(
        DOCUMENTS, embed
    ).search_batch(["owls", "mice"], **kw),
    "DenseRetriever.from_documents": lambda ctx, **kw: fanfuse.DenseRetriever.from_documents(
        DOCUMENTS, embed, **kw
    ),
    "DenseRetriever.search": lambda ctx, **kw: fanfuse.DenseRetriever.from_documents(DOCUMENTS, embed).search(
        "owls", **kw
    ),
    "TfidfSvdEmbedder.__init__": lambda ctx, **kw: tfidf(**kw),
}


def dense_feedback(ctx: Context, **kw: Any) -> Any:
    from fanfuse.retrievers import DenseFeedback

    return DenseFeedback(ctx.dense, **kw)


def onnx_encoder(ctx: Context, **kw: Any) -> Any:
    pytest.importorskip("onnxruntime")
    from fanfuse.retrievers import OnnxEncoder
    from fanfuse.retrievers.default_encoder import TOKENIZER_PATH
    from onnx_toys import write_toy_model

    directory = ctx.directory / "toy-encoder"
    if not directory.is_dir():
        write_toy_model(directory / "model.onnx", seed=0)
        shutil.copyfile(TOKENIZER_PATH, directory / "tokenizer.json")
    return OnnxEncoder(directory, **kw)


class OneVariant(fanfuse.multiquery.Expander):
    """A caller's own expander: what it inherits checks the arguments."""

    name = "mine"

    def expand(self, query: str, *, max_variants: int, strategy: str | None = None, history: Any = ()) -> Any:
        return fanfuse.StaticExpander({query: []}).expand(query, max_variants=max_variants)


def history(**kw: Any) -> Any:
    return fanfuse.multiquery.HistoryExpander(**kw)


def feedback(ctx: Context, **kw: Any) -> Any:
    return fanfuse.multiquery.FeedbackExpander(ctx.index, **kw)


def run_scores(ctx: Context) -> Any:
    from fanfuse.run_scores import score_run

    return [score_run(run, ctx.qrels, ["ndcg@10"]) for run in ctx.runs]


def postgres_database(ctx: Context) -> str:
    """The conninfo of a database on the test server holding the documents and their vectors (made
    once a module)."""
    if ctx.postgres is None:
        psycopg = pytest.importorskip("psycopg")
        from fanfuse.retrievers.postgres import create_table, load_documents
        from postgres_server import database

        conninfo = ctx.cleanups.enter_context(database(ctx.fixture("postgres_server")))
        with psycopg.connect(conninfo) as connection:
            create_table(connection, dimensions=2)
            load_documents(connection, DOCUMENTS, embed=embed)
        ctx.postgres = conninfo
    return ctx.postgres


def postgres(ctx: Context, name: str, pool: Any = None, **kw: Any) -> Any:
    from fanfuse.retrievers import postgres as pg

    if pool is None:  # a pool that never connects: the number is checked on construction
        psycopg_pool = pytest.importorskip("psycopg_pool")
        kind = psycopg_pool.AsyncConnectionPool if name.startswith("Async") else psycopg_pool.ConnectionPool
        pool = kind(postgres_database(ctx), open=False)
    if "Pgvector" in name:
        return getattr(pg, name)(pool, embed, **kw)
    return getattr(pg, name)(pool, **kw)


def postgres_search(ctx: Context, name: str, method: str, **kw: Any) -> Any:
    psycopg_pool = pytest.importorskip("psycopg_pool")
    if method == "statement":
        query = embed(["owls"])[0] if "Pgvector" in name else "owls"
        return postgres(ctx, name).statement(query, filter=None, **kw)
    if not name.startswith("Async"):
        with psycopg_pool.ConnectionPool(postgres_database(ctx), min_size=1) as pool:
            return postgres(ctx, name, pool).search("owls", **kw)

    async def search() -> Any:
        async with psycopg_pool.AsyncConnectionPool(postgres_database(ctx), min_size=1) as pool:
            return await postgres(ctx, name, pool).search("owls", **kw)

    return asyncio.run(search())


def create_table(ctx: Context, **kw: Any) -> Any:
    """A new table each call; without the HNSW index, which pgvector builds up to 2000 dimensions."""
    psycopg = pytest.importorskip("psycopg")
    from fanfuse.retrievers.postgres import PostgresTable
    from fanfuse.retrievers.postgres import create_table as create

    ctx.tables += 1
    with psycopg.connect(postgres_database(ctx)) as connection:
        create(connection, PostgresTable(name=f"created_{ctx.tables}"), vector_index=False, **kw)
    return ctx.tables


def load_documents(ctx: Context, **kw: Any) -> Any:
    """Into a table of a real server: a batch size taken loads the documents."""
    psycopg = pytest.importorskip("psycopg")
    from fanfuse.retrievers.postgres import PostgresTable
    from fanfuse.retrievers.postgres import create_table as create
    from fanfuse.retrievers.postgres import load_documents as load

    ctx.tables += 1
    table = PostgresTable(name=f"loaded_{ctx.tables}")
    with psycopg.connect(postgres_database(ctx)) as connection:
        create(connection, table)
        return load(connection, DOCUMENTS, table, **kw)


def langchain(asynchronous: bool = False) -> Any:
    pytest.importorskip("langchain_core")
    from fanfuse.integrations.langchain import AsyncLangChainRetriever, LangChainRetriever
    from langchain_core.documents import Document as LCDocument
    from langchain_core.embeddings import DeterministicFakeEmbedding
    from langchain_core.vectorstores import InMemoryVectorStore

    store = InMemoryVectorStore(DeterministicFakeEmbedding(size=4))
    store.add_documents([LCDocument(d["text"], id=d["id"]) for d in DOCUMENTS])
    return (AsyncLangChainRetriever if asynchronous else LangChainRetriever)(store.as_retriever())


def llamaindex(asynchronous: bool = False) -> Any:
    pytest.importorskip("llama_index.core")
    from fanfuse.integrations.llamaindex import AsyncLlamaIndexRetriever, LlamaIndexRetriever
    from llama_index.core import VectorStoreIndex
    from llama_index.core.embeddings import MockEmbedding
    from llama_index.core.schema import TextNode

    nodes = [TextNode(id_=d["id"], text=d["text"]) for d in DOCUMENTS]
    index = VectorStoreIndex(nodes, embed_model=MockEmbedding(embed_dim=4))
    return (AsyncLlamaIndexRetriever if asynchronous else LlamaIndexRetriever)(index.as_retriever())


def haystack(asynchronous: bool = False) -> Any:
    pytest.importorskip("haystack")
    from fanfuse.integrations.haystack import AsyncHaystackRetriever, HaystackRetriever
    from haystack import Document as HaystackDocument
    from haystack.components.retrievers.in_memory import InMemoryBM25Retriever
    from haystack.document_stores.in_memory import InMemoryDocumentStore

    store = InMemoryDocumentStore()
    store.write_documents([HaystackDocument(id=d["id"], content=d["text"]) for d in DOCUMENTS])
    return (AsyncHaystackRetriever if asynchronous else HaystackRetriever)(InMemoryBM25Retriever(store))


def haystack_component(ctx: Context) -> Any:
    pytest.importorskip("haystack")
    from fanfuse.integrations.haystack import FanfuseRetriever

    return FanfuseRetriever(fanfuse.MultiQueryRetriever(ctx.index))


def dask_fuse(ctx: Context, **kw: Any) -> Any:
    pytest.importorskip("dask")
    import fanfuse.dask

    return fanfuse.dask.fuse_runs(ctx.paths, **kw).compute()


# The method whose parameter a level list searches (rrf for the rest).
LEVELS_OF = {"segment_counts": "probfuse", "windows": "slidefuse", "phis": "rbc", "sigmas": "logn_isr"}
LEVELS_OF |= {"gammas": "combgmnz"}


def tune(ctx: Context, **kw: Any) -> Any:
    from fanfuse.tune import tune as tune_runs

    method = next((m for levels, m in LEVELS_OF.items() if levels in kw), "rrf")
    folds = kw.pop("folds", 3)  # a trained method trains without two folds
    return tune_runs(ctx.runs, ctx.qrels, method=method, metric="ndcg@10", folds=folds, **kw)


SUBPACKAGE_CALLS: dict[str, Callable[..., Any]] = {
    "dask.fuse_runs": dask_fuse,
    "multiquery.Expander.aexpand": lambda ctx, **kw: asyncio.run(OneVariant().aexpand("owls", **kw)),
    "multiquery.CombinedExpander.expand": lambda ctx, **kw: fanfuse.multiquery.CombinedExpander(
        [fanfuse.HeuristicExpander()]
    ).expand("owls at night", **kw),
    "multiquery.CombinedExpander.aexpand": lambda ctx, **kw: asyncio.run(
        fanfuse.multiquery.CombinedExpander([fanfuse.HeuristicExpander()]).aexpand("owls at night", **kw)
    ),
    "multiquery.FeedbackExpander.__init__": feedback,
    "multiquery.FeedbackExpander.expand": lambda ctx, **kw: feedback(ctx).expand("owls", **kw),
    "multiquery.FeedbackExpander.aexpand": lambda ctx, **kw: asyncio.run(feedback(ctx).aexpand("owls", **kw)),
    "multiquery.HistoryExpander.__init__": lambda ctx, **kw: history(**kw),
    "multiquery.HistoryExpander.expand": lambda ctx, **kw: history().expand("what do they eat", **kw),
    "multiquery.HistoryExpander.aexpand": lambda ctx, **kw: asyncio.run(
        history().aexpand("what do they eat", **kw)
    ),
    "multiquery.HistoryExpander.joined_variant": lambda ctx, **kw: history().joined_variant(
        "what do they eat", ["tell me about owls"], **kw
    ),
    "multiquery.HistoryExpander.topic_variant": lambda ctx, **kw: fanfuse.multiquery.HistoryExpander(
        ctx.index, min_idf=0
    ).topic_variant("what do they eat", ["tell me about owls"], **kw),
    "multiquery.MultiQueryConfig.__init__": lambda ctx, **kw: fanfuse.multiquery.MultiQueryConfig(**kw),
    "multiquery.MultiQueryConfig.from_env": lambda ctx, **kw: fanfuse.multiquery.MultiQueryConfig.from_env(
        {}, **kw
    ),
    "report.compare_scores": lambda ctx, **kw: compare_scores(run_scores(ctx), ["ndcg@10"], **kw),
    "report.adjust": lambda ctx, **kw: adjust(kw.get("p_values", [0.5, 0.01]), "holm"),
    "retrievers.DenseFeedback.__init__": dense_feedback,
    "retrievers.DenseFeedback.search": lambda ctx, **kw: dense_feedback(ctx).search("owls", **kw),
    "retrievers.DenseFeedback.search_batch": lambda ctx, **kw: dense_feedback(ctx).search_batch(
        ["owls"], **kw
    ),
    "retrievers.OnnxEncoder.__init__": onnx_encoder,
    "tune.tune": tune,
    "retrievers.postgres.create_table": create_table,
    "retrievers.postgres.load_documents": load_documents,
    "integrations.langchain.LangChainRetriever.search": lambda ctx, **kw: langchain().search("owls", **kw),
    "integrations.langchain.AsyncLangChainRetriever.search": lambda ctx, **kw: asyncio.run(
        langchain(asynchronous=True).search("owls", **kw)
    ),
    "integrations.llamaindex.LlamaIndexRetriever.search": lambda ctx, **kw: llamaindex().search("owls", **kw),
    "integrations.llamaindex.AsyncLlamaIndexRetriever.search": lambda ctx, **kw: asyncio.run(
        llamaindex(asynchronous=True).search("owls", **kw)
    ),
    "integrations.haystack.HaystackRetriever.search": lambda ctx, **kw: haystack().search("owls", **kw),
    "integrations.haystack.AsyncHaystackRetriever.search": lambda ctx, **kw: asyncio.run(
        haystack(asynchronous=True).search("owls", **kw)
    ),
    "integrations.haystack.FanfuseRetriever.run": lambda ctx, **kw: haystack_component(ctx).run("owls", **kw),
    "integrations.haystack.FanfuseRetriever.run_async": lambda ctx, **kw: asyncio.run(
        haystack_component(ctx).run_async("owls", **kw)
    ),
}


POSTGRES = (
    "PostgresFullTextRetriever",
    "AsyncPostgresFullTextRetriever",
    "PgvectorRetriever",
    "AsyncPgvectorRetriever",
)
for _name in POSTGRES:
    if "FullText" in _name:
        SUBPACKAGE_CALLS[f"retrievers.postgres.{_name}.__init__"] = functools.partial(postgres, name=_name)
    for _method in ("search", "statement"):
        SUBPACKAGE_CALLS[f"retrievers.postgres.{_name}.{_method}"] = functools.partial(
            postgres_search, name=_name, method=_method
        )
CALLS |= SUBPACKAGE_CALLS
