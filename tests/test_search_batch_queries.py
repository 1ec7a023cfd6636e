"""Texts where texts are expected, one or many, checked where they enter.

Every backend's `search` refuses a query that is no str with one message, and its `search_batch`
refuses `queries` that are a bare str (which would be searched letter by letter) or no sequence, and
checks each query. Every parameter of a public expander or retriever that takes a collection of str
refuses a bare str (`stopwords="the"` is not the letters t, h and e) and an item that is no str,
naming the parameter. The backends and the parameters are found, not listed: a new one without a
call here fails.

The PostgreSQL retrievers are given a pool that is never opened: the query is refused before any
statement, and a check that let it through would meet the closed pool instead.
"""

from __future__ import annotations

import asyncio
import importlib
import inspect
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest
from fanfuse.retrievers import DenseFeedback, DenseRetriever, TantivyRetriever

DOCUMENTS = [
    {"id": "owl", "title": "Owls", "text": "owls hunt mice at night"},
    {"id": "bat", "title": "Bats", "text": "bats hunt insects at night"},
    {"id": "mole", "title": "Moles", "text": "moles dig tunnels for worms"},
]
QUERY_MESSAGE = "query must be a str (got {})"


def embed(texts: list[str]) -> npt.NDArray[np.float32]:
    """A hashing embedding: no model, and the same vector for the same words."""
    out = np.zeros((len(texts), 16), dtype=np.float32)
    for row, text in enumerate(texts):
        for word in text.lower().split():
            out[row, sum(map(ord, word)) % 16] += 1.0
    return out


class Context:
    """One of each thing a call below needs, made once."""

    def __init__(self, directory: Path) -> None:
        self.index = TantivyRetriever.build(DOCUMENTS, directory / "index")
        self.dense = DenseRetriever.from_documents(DOCUMENTS, embed)
        self.directory = directory


@pytest.fixture(scope="module")
def ctx(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Context]:
    context = Context(tmp_path_factory.mktemp("texts"))
    yield context
    context.index.close()


def postgres() -> Any:
    try:
        return importlib.import_module("fanfuse.retrievers.postgres")
    except ImportError:  # the postgres extra is not installed
        return None


def unopened_pool(asynchronous: bool) -> Any:
    from psycopg_pool import AsyncConnectionPool, ConnectionPool

    pool = AsyncConnectionPool if asynchronous else ConnectionPool
    return pool("host=127.0.0.1 port=9 dbname=never", open=False)


# A backend whose module does not check its queries yet, an expected failure (strict: once it does,
# the pass shows here, to take it off): DenseFeedback's search goes through its search_batch (naming
# queries[0]), which reads a str as letters.
NOT_YET: dict[str, str] = {}
BACKENDS: dict[str, Callable[[Context], Any]] = {
    "TantivyRetriever": lambda ctx: ctx.index,
    "DenseRetriever": lambda ctx: ctx.dense,
    "DenseFeedback": lambda ctx: DenseFeedback(ctx.dense),
    "PostgresFullTextRetriever": lambda ctx: postgres().PostgresFullTextRetriever(unopened_pool(False)),
    "AsyncPostgresFullTextRetriever": lambda ctx: postgres().AsyncPostgresFullTextRetriever(
        unopened_pool(True)
    ),
    "PgvectorRetriever": lambda ctx: postgres().PgvectorRetriever(unopened_pool(False), embed),
    "AsyncPgvectorRetriever": lambda ctx: postgres().AsyncPgvectorRetriever(unopened_pool(True), embed),
}


def public_classes() -> dict[str, type]:
    """The public classes of the retrievers (the PostgreSQL ones where their extra is installed) and
    of multi-query search."""
    modules = [importlib.import_module("fanfuse.retrievers"), importlib.import_module("fanfuse.multiquery")]
    modules += [m for m in [postgres()] if m is not None]
    found = {}
    for module in modules:
        for name in module.__all__:
            value = getattr(module, name)
            if inspect.isclass(value) and not getattr(value, "_is_protocol", False):
                found[name] = value
    return found


def backend_classes() -> list[str]:
    retrievers = [importlib.import_module("fanfuse.retrievers")] + [m for m in [postgres()] if m]
    names = {name for module in retrievers for name in module.__all__}
    return sorted(
        n for n, c in public_classes().items() if n in names and callable(getattr(c, "search", None))
    )


def marked(name: str) -> Any:
    if name in NOT_YET:
        return pytest.param(name, marks=pytest.mark.xfail(reason=NOT_YET[name], strict=True))
    return name


def run(result: Any) -> Any:
    return asyncio.run(result) if inspect.iscoroutine(result) else result


def test_every_backend_is_made_here() -> None:
    found = set(backend_classes())
    assert found <= set(BACKENDS)
    if postgres() is not None:  # the PostgreSQL backends are public where their extra is installed
        assert found == set(BACKENDS)


@pytest.mark.parametrize("name", [marked(n) for n in sorted(BACKENDS)])
def test_search_refuses_a_query_that_is_no_str(ctx: Context, name: str) -> None:
    if "Postgres" in name or "Pgvector" in name:
        pytest.importorskip("psycopg_pool")
    backend = BACKENDS[name](ctx)
    for query in (5, b"owls", None, ["owls"]):
        expected = QUERY_MESSAGE.format(type(query).__name__)
        with pytest.raises(TypeError, match=f"^{re.escape(expected)}$"):
            run(backend.search(query, 3))


BATCHING = [n for n in sorted(BACKENDS) if n in {"TantivyRetriever", "DenseRetriever", "DenseFeedback"}]


def test_the_batching_backends_are_the_ones_with_search_batch() -> None:
    classes = public_classes()
    assert [n for n in backend_classes() if callable(getattr(classes[n], "search_batch", None))] == BATCHING


@pytest.mark.parametrize("name", [marked(n) for n in BATCHING])
def test_search_batch_refuses_queries_that_are_no_sequence_of_str(ctx: Context, name: str) -> None:
    backend = BACKENDS[name](ctx)
    for queries, message in (
        ("owls", "queries must be a sequence of str (got str)"),
        (b"owls", "queries must be a sequence of str (got bytes)"),
        (5, "queries must be a sequence of str (got int)"),
        ({"owls"}, "queries has no order (got set); pass a list or tuple of str"),
        (["owls", 5], "queries[1] must be a str (got int)"),
    ):
        with pytest.raises(TypeError, match=f"^{re.escape(message)}$"):
            backend.search_batch(queries, 3)
    one_by_one = [backend.search(q, 3) for q in ("owls", "night")]
    assert backend.search_batch(("owls", "night"), 3) == one_by_one
    assert backend.search_batch((q for q in ("owls", "night")), 3) == one_by_one
    assert backend.search_batch([], 3) == []


# Parameters of a collection of str: each given a bare str and a list with an item that is no str.
COLLECTION_OF_STR = re.compile(
    r"\b(Iterable|Sequence|Collection|AbstractSet|list|tuple|set|frozenset)\[str\b"
)
# Where a str is one of the things the parameter takes: a mapping's value is one variant or a list.
TAKES_A_STR = {"StaticExpander.__init__ mapping"}


def str_collection_parameters() -> list[str]:
    """`Class.method parameter` for each parameter of a public method (the constructor and calls
    included) whose annotation is a collection of str."""
    found = []
    for name, cls in public_classes().items():
        for method_name, method in inspect.getmembers(cls, callable):
            if method_name.startswith("_") and method_name not in ("__init__", "__call__"):
                continue
            try:
                parameters = inspect.signature(method).parameters.values()
            except (TypeError, ValueError):
                continue
            for parameter in parameters:
                if COLLECTION_OF_STR.search(str(parameter.annotation)):
                    found.append(f"{name}.{method_name} {parameter.name}")
    return sorted(set(found) - TAKES_A_STR)


def onnx_encoder(ctx: Context) -> Any:
    pytest.importorskip("onnx")
    pytest.importorskip("onnxruntime")
    from fanfuse.retrievers import OnnxEncoder
    from test_onnx_encoder import model_dir

    return OnnxEncoder(model_dir(ctx.directory))


def tfidf(ctx: Context) -> Any:
    pytest.importorskip("sklearn")
    from fanfuse.retrievers import TfidfSvdEmbedder

    return TfidfSvdEmbedder(dimensions=2)


def feedback(ctx: Context, value: Any) -> Any:
    from fanfuse.multiquery import FeedbackExpander

    return FeedbackExpander(ctx.index, stopwords=value)


def history(ctx: Context) -> Any:
    from fanfuse.multiquery import HistoryExpander

    return HistoryExpander(ctx.index)


def heuristic(value: Any) -> Any:
    from fanfuse.multiquery import HeuristicExpander

    return HeuristicExpander(stopwords=value)


CALLS: dict[str, Callable[[Context, Any], Any]] = {
    "HeuristicExpander.__init__ stopwords": lambda ctx, v: heuristic(v),
    "FeedbackExpander.__init__ stopwords": feedback,
    "HistoryExpander.__init__ stopwords": lambda ctx, v: type(history(ctx))(ctx.index, stopwords=v),
    "HistoryExpander.joined_variant earlier": lambda ctx, v: history(ctx).joined_variant("owls", v),
    "HistoryExpander.topic_variant earlier": lambda ctx, v: history(ctx).topic_variant("owls", v),
    "HistoryExpander.topic_words earlier": lambda ctx, v: history(ctx).topic_words("owls", v),
    "DenseRetriever.__init__ ids": lambda ctx, v: DenseRetriever(embed, v, np.ones((len(v), 2))),
    "DenseRetriever.search_batch queries": lambda ctx, v: ctx.dense.search_batch(v, 3),
    "TantivyRetriever.search_batch queries": lambda ctx, v: ctx.index.search_batch(v, 3),
    "DenseFeedback.search_batch queries": lambda ctx, v: DenseFeedback(ctx.dense).search_batch(v, 3),
    "OnnxEncoder.embed_queries texts": lambda ctx, v: onnx_encoder(ctx).embed_queries(v),
    "OnnxEncoder.embed_passages texts": lambda ctx, v: onnx_encoder(ctx).embed_passages(v),
    "TfidfSvdEmbedder.fit texts": lambda ctx, v: tfidf(ctx).fit(v),
    "TfidfSvdEmbedder.__call__ texts": lambda ctx, v: tfidf(ctx).fit(["owls hunt", "bats fly", "moles"])(v),
}
# The parameters whose modules do not check them yet, expected failures as NOT_YET's.
STILL_OPEN: dict[str, str] = {}


def test_every_collection_of_str_is_called_here() -> None:
    assert str_collection_parameters() == sorted(CALLS)


@pytest.mark.parametrize(
    "where",
    [
        pytest.param(w, marks=pytest.mark.xfail(reason=f"{STILL_OPEN[w]} does not check it yet", strict=True))
        if w in STILL_OPEN
        else w
        for w in sorted(CALLS)
    ],
)
def test_a_bare_str_or_an_item_that_is_no_str_is_refused_naming_it(ctx: Context, where: str) -> None:
    parameter = where.split()[1]
    for value in ("owl", b"owl", ["owl", 5]):
        with pytest.raises(TypeError, match=re.escape(parameter)):
            CALLS[where](ctx, value)


def test_stopwords_are_words_in_any_collection() -> None:
    from fanfuse.multiquery import HeuristicExpander

    assert HeuristicExpander(stopwords={"The", "owls"}).stopwords == {"the", "owls"}
    assert HeuristicExpander(stopwords=("the",)).stopwords == {"the"}
    with pytest.raises(TypeError, match=r"^stopwords must be a collection of words \(str\) \(got str\)"):
        HeuristicExpander(stopwords="the")
