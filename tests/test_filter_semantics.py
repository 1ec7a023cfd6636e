"""One filter, one meaning, on every backend: the same generated metadata and filters (str, int, float,
bool, lists of them, missing keys, unicode and dotted keys, nested values that match nothing) searched
in Tantivy (and an index built before filter terms), the dense retriever, a real PostgreSQL (full text,
and pgvector where the server has it), and the LangChain, LlamaIndex and Haystack adapters over their
frameworks' in-memory stores, each against `filters.matches`."""

from __future__ import annotations

import json
import os
import re
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import tantivy as tantivy_module
from fanfuse.corpus import Document
from fanfuse.errors import InvalidFilter
from fanfuse.retrievers.dense import DenseRetriever
from fanfuse.retrievers.filters import conditions, matches
from fanfuse.retrievers.tantivy_index import MANIFEST, TantivyRetriever
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from postgres_server import Server, database

os.environ.setdefault("HAYSTACK_TELEMETRY_ENABLED", "False")

# Few keys and values, so that generated filters often match and often almost match (1 and true,
# "1" and 1, "e\u0301" and "é", the same instant written twice, a key and its dotted neighbour).
KEYS = ["a", "tags", "n", "k.dot", "Ключ", "ключ", " a", "\u202e"]
VALUES: list[Any] = [
    "x", "X", "1", "true", "", "é", "e\u0301", "2020-01-01T00:00:00Z", "2020-01-01T01:00:00+01:00",
    0, 1, -1, 2**53 + 1, 2**63, 1.0, -0.0, 0.0, 2.5, 1e300, 9007199254740992.0, True, False,
]  # fmt: skip
TEXT = st.text(st.characters(exclude_categories=("Cs",), exclude_characters="\x00"), max_size=4)
FLOATS = st.floats(allow_nan=False, allow_infinity=False)
# An index built before filter terms stores whole numbers from -2**63 to 2**64 - 1 (a Tantivy JSON field).
SCALARS = st.sampled_from(VALUES) | TEXT | st.integers(-(2**63), 2**64 - 1) | FLOATS
# What metadata may hold besides scalars and lists of them; none of it matches a filter.
UNMATCHABLE = st.sampled_from([None, {"x": 1}, [["x"]], [[1]], {"a": "x"}])
METADATA_VALUES = SCALARS | st.lists(SCALARS | UNMATCHABLE, max_size=3) | UNMATCHABLE
METADATA = st.dictionaries(st.sampled_from(KEYS) | TEXT.filter(str.strip), METADATA_VALUES, max_size=4)
# A filter may ask for what no document can hold (a NUL character, a key no document has).
FILTER_SCALARS = SCALARS | st.sampled_from(["x\x00", "\x00", 2**70])
FILTERS = st.dictionaries(
    st.sampled_from([*KEYS, "missing", "n\x00"]),
    FILTER_SCALARS | st.lists(FILTER_SCALARS, min_size=1, max_size=3),
    min_size=1,
    max_size=2,
)
CORPORA = st.lists(METADATA, min_size=1, max_size=8)

Search = Callable[[Mapping[str, Any]], set[str]]


def documents(metadata: Sequence[dict[str, Any]]) -> list[Document]:
    # Every document has the word "common": searching it lists them all, so the filter decides.
    return [Document(f"d{i}", "common words", "", m) for i, m in enumerate(metadata)]


def ids(hits: Sequence[Any]) -> set[str]:
    return {hit.id for hit in hits}


def tantivy(docs: list[Document], root: Path) -> Search:
    index = TantivyRetriever.build(docs, root / uuid.uuid4().hex)
    return lambda filter: ids(index.search("common", len(docs), filter))


def tantivy_before_filter_terms(docs: list[Document], root: Path) -> Search:
    """An index as fanfuse wrote it before filter terms and versions: the metadata in a Tantivy JSON
    field, the files beside a manifest of format 1. Filtered by checking each match."""
    from fanfuse.retrievers import tantivy_index

    builder = tantivy_module.SchemaBuilder()
    builder.add_text_field("id", stored=True, tokenizer_name="raw")
    for field in tantivy_index.SEARCH_FIELDS:
        builder.add_text_field(field, stored=True, tokenizer_name=tantivy_index.TEXT_TOKENIZER)
    builder.add_json_field("metadata", stored=True, tokenizer_name="raw")
    directory = root / uuid.uuid4().hex
    directory.mkdir()
    writer = tantivy_module.Index(builder.build(), path=str(directory)).writer()
    for d in docs:
        metadata = {"metadata": dict(d.metadata)} if d.metadata else {}
        writer.add_document(tantivy_module.Document(id=d.id, title=d.title, text=d.text, **metadata))
    writer.commit()
    writer.wait_merging_threads()
    (directory / MANIFEST).write_text(json.dumps({"format": 1, "backend": "tantivy", "documents": len(docs)}))
    index = TantivyRetriever(directory)
    assert not index._filter_terms
    return lambda filter: ids(index.search("common", len(docs), filter))


def dense(docs: list[Document], _: Path) -> Search:
    retriever = DenseRetriever.from_documents(docs, lambda texts: np.ones((len(texts), 3), dtype=np.float32))
    return lambda filter: ids(retriever.search("common", len(docs), filter))


def dense_feedback(docs: list[Document], _: Path) -> Search:
    from fanfuse.retrievers.dense_feedback import DenseFeedback

    dense = DenseRetriever.from_documents(docs, lambda texts: np.ones((len(texts), 3), dtype=np.float32))
    retriever = DenseFeedback(dense)
    return lambda filter: ids(retriever.search("common", len(docs), filter))


def langchain(docs: list[Document], _: Path) -> Search:
    from fanfuse.integrations.langchain import LangChainRetriever, document_predicate
    from langchain_core.documents import Document as LCDocument
    from langchain_core.embeddings import DeterministicFakeEmbedding
    from langchain_core.vectorstores import InMemoryVectorStore

    store = InMemoryVectorStore(DeterministicFakeEmbedding(size=4))
    store.add_documents([LCDocument(d.text, id=d.id, metadata=dict(d.metadata)) for d in docs])
    adapter = LangChainRetriever(
        store.as_retriever(search_kwargs={"k": len(docs)}), filter_as=document_predicate
    )
    return lambda filter: ids(adapter.search("common", len(docs), filter))


def llamaindex(docs: list[Document], _: Path) -> Search:
    from fanfuse.integrations.llamaindex import LlamaIndexRetriever
    from llama_index.core import VectorStoreIndex
    from llama_index.core.embeddings import MockEmbedding
    from llama_index.core.schema import TextNode

    nodes = [TextNode(id_=d.id, text=d.text, metadata=dict(d.metadata)) for d in docs]
    index = VectorStoreIndex(nodes, embed_model=MockEmbedding(embed_dim=4))
    adapter = LlamaIndexRetriever.from_index(index)
    return lambda filter: ids(adapter.search("common", len(docs), filter))


def haystack(docs: list[Document], _: Path) -> Search:
    from fanfuse.integrations.haystack import HaystackRetriever
    from haystack import Document as HaystackDocument
    from haystack.components.retrievers.in_memory import InMemoryBM25Retriever
    from haystack.document_stores.in_memory import InMemoryDocumentStore

    store = InMemoryDocumentStore()
    store.write_documents([HaystackDocument(id=d.id, content=d.text, meta=dict(d.metadata)) for d in docs])
    adapter = HaystackRetriever(InMemoryBM25Retriever(document_store=store))
    return lambda filter: ids(adapter.search("common", len(docs), filter))


# Where a framework's own filter language cannot say fanfuse's rule, the adapter can only check what
# the framework returns: it never lets a wrong document through, but misses these (docs/retrievers.md).
def _lists_compared_whole(filter: Mapping[str, Any], docs: list[Document]) -> bool:
    return any(isinstance(d.metadata.get(key), list | tuple) for key in filter for d in docs)


def _dotted_key(filter: Mapping[str, Any], docs: list[Document]) -> bool:
    return any("." in key for key in filter)


def _bool_or_mixed(filter: Mapping[str, Any]) -> bool:
    for condition in conditions(filter):
        if any(isinstance(v, bool) for v in condition.values):
            return True
        if len({isinstance(v, str) for v in condition.values}) > 1:
            return True
    return False


# An index built before filter terms keeps the metadata in a Tantivy JSON field, which reads a string
# written as an RFC 3339 date as a date: no filter finds that value there (docs/retrievers.md).
_RFC_3339 = re.compile(r"\d{4}-\d\d-\d\d[Tt]\d\d:\d\d:\d\d(\.\d+)?([Zz]|[+-]\d\d:\d\d)")


def _date_in_json_field(filter: Mapping[str, Any], docs: list[Document]) -> bool:
    held = [d.metadata.get(key) for key in filter for d in docs]
    items = [item for value in held for item in (value if isinstance(value, list) else [value])]
    return any(isinstance(item, str) and _RFC_3339.fullmatch(item) for item in items)


FRAMEWORK_LIMITS: dict[str, Callable[[Mapping[str, Any], list[Document]], bool]] = {
    "tantivy built before filter terms": _date_in_json_field,
    "llamaindex": _lists_compared_whole,
    "haystack": lambda f, docs: _lists_compared_whole(f, docs) or _dotted_key(f, docs),
}


def _key_none_has(filter: Mapping[str, Any], docs: list[Document]) -> bool:
    """A key that no document's metadata has: a retriever that knows its documents' keys refuses it."""
    return any(all(key not in d.metadata for d in docs) for key in filter)


# The backends that refuse a filter (an InvalidFilter), where the predicate says, instead of matching.
REFUSED: dict[str, Callable[[Mapping[str, Any], list[Document]], bool]] = {
    "llamaindex": lambda f, docs: _bool_or_mixed(f),
    **dict.fromkeys(("tantivy", "dense", "dense vector feedback"), _key_none_has),
}
IN_PROCESS = {
    "tantivy": tantivy,
    "tantivy built before filter terms": tantivy_before_filter_terms,
    "dense": dense,
    "dense vector feedback": dense_feedback,
    "langchain": langchain,
    "llamaindex": llamaindex,
    "haystack": haystack,
}


@pytest.fixture(scope="module")
def postgres(postgres_server: Server) -> Iterator[tuple[Any, bool]]:
    """A pool on a table of the session's server, and whether it has pgvector (then a vector column,
    searched exactly: an HNSW scan applies filters after its candidates and may return fewer)."""
    psycopg_pool = pytest.importorskip("psycopg_pool")
    from fanfuse.retrievers.postgres import create_table

    vectors = postgres_server.installation.has_pgvector
    with (
        database(postgres_server) as conninfo,
        psycopg_pool.ConnectionPool(conninfo, min_size=1, max_size=2, open=True) as pool,
    ):
        create_table(pool, dimensions=3 if vectors else None, vector_index=False)
        yield pool, vectors


def same_vector(texts: Sequence[str]) -> Any:
    return np.ones((len(texts), 3), dtype=np.float32)


def postgres_searches(postgres: tuple[Any, bool]) -> Callable[[list[Document], Path], Search]:
    """Loads the documents once for both PostgreSQL retrievers; searches each, checking they agree."""
    from fanfuse.retrievers.postgres import PgvectorRetriever, PostgresFullTextRetriever, load_documents

    pool, vectors = postgres

    def load(docs: list[Document], _: Path) -> Search:
        with pool.connection() as conn:
            conn.execute("TRUNCATE documents")
        load_documents(pool, docs, embed=same_vector if vectors else None)
        text = PostgresFullTextRetriever(pool)
        vector = PgvectorRetriever(pool, same_vector) if vectors else None

        def search(filter: Mapping[str, Any]) -> set[str]:
            found = ids(text.search("common", len(docs), filter))
            if vector is not None:
                assert ids(vector.search("common", len(docs), filter)) == found, ("pgvector", filter)
            return found

        return search

    return load


@settings(max_examples=60, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(corpus=CORPORA, filters=st.lists(FILTERS, min_size=1, max_size=6))
def test_every_backend_means_the_same_filter(
    corpus: list[dict[str, Any]], filters: list[dict[str, Any]], postgres: tuple[Any, bool], tmp_path: Path
) -> None:
    docs = documents(corpus)
    backends = {**IN_PROCESS, "postgres": postgres_searches(postgres)}
    searches = {name: open_backend(docs, tmp_path) for name, open_backend in backends.items()}
    for filter in filters:
        expected = {d.id for d in docs if matches(filter, d.metadata)}
        for name, search in searches.items():
            if name in REFUSED and REFUSED[name](filter, docs):
                with pytest.raises(InvalidFilter):
                    search(filter)
                continue
            found = search(filter)
            if name in FRAMEWORK_LIMITS and FRAMEWORK_LIMITS[name](filter, docs):
                assert found <= expected, (name, filter, corpus)
            else:
                assert found == expected, (name, filter, corpus)


@pytest.mark.parametrize(
    ("filter", "metadata", "expected"),
    [
        ({"n": True}, {"n": 1}, False),  # a bool is not a number
        ({"flag": 1}, {"flag": True}, False),
        ({"n": 1}, {"n": 1.0}, True),  # numbers by value
        ({"n": 0}, {"n": -0.0}, True),
        ({"n": 2**63}, {"n": 9223372036854775808.0}, False),  # the float is written 9.223372036854776e18
        ({"tags": "x"}, {"tags": ["y", "x"]}, True),  # membership in a list field
        ({"tags": ["q", "x"]}, {"tags": ["x"]}, True),  # a list in the filter: any of
        ({"tags": "x"}, {"tags": [["x"]]}, False),  # nested lists match nothing
        ({"a": "x"}, {"a": {"b": "x"}}, False),
        ({"a": "x"}, {}, False),  # a missing key never matches
        ({"a": "é"}, {"a": "e\u0301"}, False),  # strings exactly
        ({"a": "x", "b": 1}, {"a": "x", "b": 2}, False),  # every key
        ({"d": "2020-01-01T00:00:00Z"}, {"d": "2020-01-01T01:00:00+01:00"}, False),
    ],
)
def test_the_written_rules(filter: dict[str, Any], metadata: dict[str, Any], expected: bool) -> None:
    assert matches(filter, metadata) is expected


@pytest.mark.parametrize(
    "filter",
    [
        {"": "x"},
        {"a": []},
        {"a": None},
        {"a": {"b": 1}},
        {"a": float("nan")},
        {"a": [1, float("inf")]},
        {"a": "\ud800"},
        {1: "x"},
    ],
)
def test_a_bad_filter_is_refused_naming_its_key(filter: dict[Any, Any]) -> None:
    key = next(iter(filter))
    with pytest.raises(InvalidFilter, match=rf"filter\[{__import__('re').escape(repr(key))}\]"):
        conditions(filter)
