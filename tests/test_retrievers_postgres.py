"""PostgreSQL full-text and pgvector retrievers against a real server (the session's throwaway
cluster, tests/postgres_server.py): what they match and how they rank, filters as bound parameters,
identifiers checked and quoted, loading in one transaction, sync and async alike, and hybrid
multi-query search equal to fusing the branches' own lists."""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest

pytest.importorskip("psycopg")
pytest.importorskip("psycopg_pool")

import psycopg
from fanfuse import MultiQueryRetriever, OutOfRange, fuse
from fanfuse.errors import InvalidCorpus, InvalidEncoder, InvalidFilter, InvalidSetting
from fanfuse.retrievers.dense import DenseRetriever
from fanfuse.retrievers.postgres import (
    MAX_QUERY_TERMS,
    AsyncPgvectorRetriever,
    AsyncPostgresFullTextRetriever,
    PgvectorRetriever,
    PostgresFullTextRetriever,
    PostgresTable,
    create_table,
    load_documents,
    query_pieces,
)
from generated_corpus import corpus, queries, vocabulary
from psycopg_pool import AsyncConnectionPool, ConnectionPool

DOCS = corpus()
WORDS = vocabulary(300)
DIMENSIONS = 32
DOCS_MD = Path(__file__).resolve().parents[1] / "docs" / "retrievers.md"


WORD_VECTORS = np.random.default_rng(0).normal(size=(len(WORDS), DIMENSIONS)).astype(np.float32)
WORD_INDEX = {word: i for i, word in enumerate(WORDS)}


def embed(texts: list[str]) -> npt.NDArray[np.float32]:
    """Local deterministic embedding: the sum of a fixed random vector per vocabulary word (no model,
    no network; real-valued, so cosine ties do not happen); zero for text outside the vocabulary."""
    out = np.zeros((len(texts), DIMENSIONS), dtype=np.float32)
    for row, text in enumerate(texts):
        for word in text.split():
            if word in WORD_INDEX:
                out[row] += WORD_VECTORS[WORD_INDEX[word]]
    return out


@pytest.fixture()
def pool(postgres_db: str) -> Iterator[ConnectionPool]:
    with ConnectionPool(postgres_db, min_size=1, max_size=4, open=True) as opened:
        create_table(opened)
        load_documents(opened, DOCS)
        yield opened


@pytest.fixture()
def vector_pool(pgvector_db: str) -> Iterator[ConnectionPool]:
    with ConnectionPool(pgvector_db, min_size=1, max_size=4, open=True) as opened:
        create_table(opened, dimensions=DIMENSIONS)
        load_documents(opened, DOCS, embed=embed)
        yield opened


def words_of(hit_payload: dict[str, Any]) -> set[str]:
    return set(f"{hit_payload['title']} {hit_payload['text']}".split())


def test_full_text_hits_contain_the_query_terms(pool: ConnectionPool) -> None:
    any_words, all_words = PostgresFullTextRetriever(pool), PostgresFullTextRetriever(pool, match="all")
    for query in queries():
        terms = set(query.split())
        hits = any_words.search(query, 10)
        assert hits, query
        assert all(terms & words_of(dict(h.payload)) for h in hits), query
        # Every document with any term is a candidate: the hits are the best of all of them.
        matching = [d for d in DOCS if terms & set(f"{d['title']} {d['text']}".split())]
        assert len(hits) == min(10, len(matching))
        assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
        assert all(terms <= words_of(dict(h.payload)) for h in all_words.search(query, 10)), query


def test_query_syntax_phrases_negation_and_operators(pool: ConnectionPool) -> None:
    retriever = PostgresFullTextRetriever(pool)
    first, second = DOCS[0]["text"].split()[3:5]
    phrase = f'"{first} {second}"'
    for hit in retriever.search(phrase, 20):
        assert f" {first} {second} " in f" {hit.payload['title']} {hit.payload['text']} "
    rare, common = WORDS[40], WORDS[5]
    without = {d["id"] for d in DOCS if rare in f"{d['title']} {d['text']}".split()} - {
        d["id"] for d in DOCS if common in f"{d['title']} {d['text']}".split()
    }
    assert without  # the corpus has documents with the rare word and without the common one
    assert {h.id for h in retriever.search(f"{rare} -{common}", 400)} == without
    assert {h.id for h in retriever.search(f"{rare} NOT {common}", 400)} == without
    assert [h.id for h in retriever.search(f"{first} OR {second}", 10)] == [
        h.id for h in retriever.search(f"{first} {second}", 10)
    ]
    assert query_pieces('a +b OR "c d" -e NOT f AND g') == (["a", "b", '"c d"', "g"], ["e", "f"])
    assert retriever.search("   ", 5) == [] and retriever.search("-only", 5) == []
    assert retriever.search("the and of", 5) == []  # stopwords only: nothing to search for


def test_filters_are_bound_parameters(pool: ConnectionPool) -> None:
    retriever = PostgresFullTextRetriever(pool)
    query = " ".join(WORDS[:3])
    hits = retriever.search(query, 50, {"team": "y", "year": [2021, 2023]})
    assert hits and all(h.payload["team"] == "y" and h.payload["year"] in (2021, 2023) for h in hits)
    unfiltered = [h.id for h in retriever.search(query, 400)]
    assert [h.id for h in hits] == [i for i in unfiltered if i in {h.id for h in hits}]  # same order
    hostile = {"team": "x'; DROP TABLE documents; --", "te'am": "x"}
    assert retriever.search(query, 5, hostile) == []
    assert len(retriever.search(query, 5)) == 5  # the table is still there
    with pytest.raises(InvalidFilter, match=r"filter\['team'\] = \{'nested': 1\}"):
        retriever.search(query, 5, {"team": {"nested": 1}})


@pytest.mark.parametrize("match", ["any", "all"])
def test_a_nul_in_a_query_or_filter_is_no_database_error(pool: ConnectionPool, match: str) -> None:
    # PostgreSQL text cannot hold NUL: sent as it was, the query failed with psycopg.DataError.
    retriever = PostgresFullTextRetriever(pool, match=match)
    words = WORDS[:2]
    spaced = [h.id for h in retriever.search(" ".join(words), 10)]
    assert spaced and [h.id for h in retriever.search("\x00".join(words), 10)] == spaced
    assert [h.id for h in asyncio.run(_async_search(pool, match, "\x00".join(words)))] == spaced
    assert retriever.search("\x00", 10) == []
    assert retriever.search(" ".join(words), 10, {"team": ["y\x00", "x\x00"]}) == []
    assert retriever.search(" ".join(words), 10, {"te\x00am": "y"}) == []


async def _async_search(pool: ConnectionPool, match: str, query: str) -> list[Any]:
    async with AsyncConnectionPool(pool.conninfo, min_size=1, max_size=1, open=False) as async_pool:
        return await AsyncPostgresFullTextRetriever(async_pool, match=match).search(query, 10)


def test_identifiers_are_checked_and_quoted(postgres_db: str) -> None:
    with pytest.raises(InvalidSetting, match=r"name = 'docs; DROP TABLE x': expected a plain SQL name"):
        PostgresTable(name="docs; DROP TABLE x")
    with pytest.raises(InvalidSetting, match=r"text_column = 'body\"': expected a plain SQL name"):
        PostgresTable(text_column='body"')
    with pytest.raises(InvalidSetting, match=r"language = '1english'"):
        PostgresTable(language="1english")
    table = PostgresTable(name="Select", schema="public", text_column="Order", language="simple")
    with ConnectionPool(postgres_db, min_size=1, open=True) as pool:
        create_table(pool, table)
        load_documents(pool, DOCS[:20], table)
        hits = PostgresFullTextRetriever(pool, table).search(DOCS[3]["text"].split()[0], 20)
        with pool.connection() as conn:
            tables = conn.execute("SELECT tablename FROM pg_tables WHERE schemaname = 'public'").fetchall()
    assert "g0003" in {h.id for h in hits}
    assert tables == [("Select",)]  # a reserved word, mixed case: quoted everywhere


def test_load_is_one_transaction(postgres_db: str) -> None:
    with ConnectionPool(postgres_db, min_size=1, open=True) as pool:
        create_table(pool)
        assert load_documents(pool, DOCS[:10]) == 10
        replaced = {**DOCS[0], "text": "replacement words only"}
        assert load_documents(pool, [replaced]) == 1
        retriever = PostgresFullTextRetriever(pool)
        assert [h.id for h in retriever.search("replacement", 5)] == ["g0000"]
        with pytest.raises(
            InvalidCorpus, match=r"document #3: duplicate id 'g0001' \(first at document #2\)"
        ):
            load_documents(pool, [DOCS[20], DOCS[1], DOCS[1]])
        with pytest.raises(InvalidCorpus, match=r"document #1: missing or empty id field 'id'"):
            load_documents(pool, [{"text": "no id"}])
        with pool.connection() as conn:
            count = conn.execute("SELECT count(*) FROM documents").fetchone()
        assert count == (10,)  # nothing of the failed loads: not even DOCS[20]


def test_full_text_sync_and_async_agree(postgres_db: str, pool: ConnectionPool) -> None:
    async def searches() -> list[list[tuple[str, float]]]:
        async with AsyncConnectionPool(postgres_db, min_size=1, max_size=4) as async_pool:
            retriever = AsyncPostgresFullTextRetriever(async_pool)
            results = await asyncio.gather(*(retriever.search(q, 10, {"team": "x"}) for q in queries()))
        return [[(h.id, h.score) for h in hits] for hits in results]

    sync = PostgresFullTextRetriever(pool)
    assert asyncio.run(searches()) == [
        [(h.id, h.score) for h in sync.search(q, 10, {"team": "x"})] for q in queries()
    ]


def test_pgvector_matches_exact_cosine(vector_pool: ConnectionPool) -> None:
    exact = DenseRetriever.from_documents(
        [{"id": d["id"], "title": d["title"], "text": d["text"]} for d in DOCS], embed
    )
    retriever = PgvectorRetriever(vector_pool, embed)
    for query in queries()[:10]:
        hits = retriever.search(query, 5)
        expected = exact.search(query, 5)
        assert [h.score for h in hits] == pytest.approx([h.score for h in expected], abs=1e-5)
        assert hits[0].id == expected[0].id or hits[0].score == pytest.approx(expected[0].score, abs=1e-6)
    assert retriever.search("words outside the vocabulary", 5) == []  # zero vector: similar to nothing


def test_pgvector_filters_zero_vectors_and_async(pgvector_db: str, vector_pool: ConnectionPool) -> None:
    load_documents(vector_pool, [{"id": "blank", "text": "nothing from the vocabulary"}], embed=embed)
    retriever = PgvectorRetriever(vector_pool, embed)
    assert "blank" not in {h.id for h in retriever.search(WORDS[0], 400)}  # stored as NULL
    query = " ".join(WORDS[3:6])
    filtered = retriever.search(query, 10, {"team": ["y", "z"]})
    assert filtered and all(h.payload["team"] in ("y", "z") for h in filtered)

    async def embed_async(texts: list[str]) -> npt.NDArray[np.float32]:
        return embed(texts)

    async def searches() -> tuple[list[str], list[str]]:
        async with AsyncConnectionPool(pgvector_db, min_size=1, max_size=2) as async_pool:
            sync_embed = AsyncPgvectorRetriever(async_pool, embed)
            async_embed = AsyncPgvectorRetriever(async_pool, embed_async)
            a = await sync_embed.search(query, 10, {"team": ["y", "z"]})
            b = await async_embed.search(query, 10, {"team": ["y", "z"]})
        return [h.id for h in a], [h.id for h in b]

    assert searches_equal(asyncio.run(searches()), [h.id for h in filtered])


def searches_equal(results: tuple[list[str], list[str]], expected: list[str]) -> bool:
    return results[0] == expected and results[1] == expected


def test_hybrid_multi_query_equals_fusing_the_branch_lists(pgvector_db: str) -> None:
    # Exact vector search (no HNSW index): an approximate index scan with a filter may return fewer
    # rows, and not always the same ones, so the branch lists would not be reproducible.
    with ConnectionPool(pgvector_db, min_size=1, max_size=4, open=True) as pool:
        create_table(pool, dimensions=DIMENSIONS, vector_index=False)
        load_documents(pool, DOCS, embed=embed)
        text, vector = PostgresFullTextRetriever(pool), PgvectorRetriever(pool, embed)
        team = {"team": ["x", "z"]}
        with MultiQueryRetriever({"text": text, "vector": vector}, top_k=10) as hybrid:
            # Phrased as questions, so the heuristic expander adds the content words as a variant.
            for query in (f"what is the {words}" for words in queries()[:8]):
                result = hybrid.search(query, filter=team)
                variants = [v.text for v in result.diagnostics.variants]
                assert len(variants) > 1
                lists = [
                    [h.id for h in retriever.search(variant, 20, team)]
                    for variant in variants
                    for retriever in (text, vector)
                ]
                expected = fuse(lists, method="rrf", k=60, top_k=10)
                assert result.ids == expected.ids
                assert [h.score for h in result.hits] == pytest.approx(expected.scores)
                assert {p.retriever for h in result.hits for p in h.provenance} == {"text", "vector"}
                assert all(h.payload["team"] in ("x", "z") for h in result.hits)


def test_docs_hybrid_snippet_runs(pgvector_db: str, tmp_path: Path) -> None:
    section = DOCS_MD.read_text(encoding="utf-8").split("### PostgreSQL: full text and pgvector", 1)[1]
    code = re.search(r"```python\n(.*?)```", section, re.DOTALL)
    assert code is not None
    corpus_file = tmp_path / "corpus.jsonl"
    corpus_file.write_text("".join(json.dumps(d) + "\n" for d in DOCS), encoding="utf-8")
    replacements = {  # the snippet's placeholders: this server, this corpus, its embedding and words
        '"host=127.0.0.1 dbname=app"': repr(pgvector_db),
        '"corpus.jsonl"': repr(str(corpus_file)),
        "dimensions=384": f"dimensions={DIMENSIONS}",
        '"how do I rotate the logs"': repr(" ".join(WORDS[4:7])),
        '{"product": "cloud"}': '{"team": "x"}',
    }
    source = code.group(1)
    for placeholder, value in replacements.items():
        assert placeholder in source
        source = source.replace(placeholder, value)
    namespace: dict[str, Any] = {"embed": embed}
    exec(source, namespace)
    result = namespace["result"]
    namespace["pool"].close()
    assert result.hits and all(h.payload["team"] == "x" for h in result.hits)
    assert {p.retriever for h in result.hits for p in h.provenance} == {"text", "vector"}


def test_bad_arguments_are_clear_errors(pool: ConnectionPool) -> None:
    with pytest.raises(TypeError, match=r"pool must be a psycopg_pool\.ConnectionPool"):
        PostgresFullTextRetriever("host=localhost")  # type: ignore[arg-type]
    with pytest.raises(
        TypeError,
        match=r"AsyncConnectionPool \(got ConnectionPool\); for a ConnectionPool use PgvectorRetriever",
    ):
        AsyncPgvectorRetriever(pool, embed)  # type: ignore[arg-type]
    with pytest.raises(InvalidSetting, match=r"match must be one of any, all \(got 'some'\)"):
        PostgresFullTextRetriever(pool, match="some")
    with pytest.raises(OutOfRange, match=r"normalization must be an int from 0 to 63 \(got 64\)"):
        PostgresFullTextRetriever(pool, normalization=64)
    with pytest.raises(OutOfRange, match=r"k must be an int from 1 to 10000 \(got 0\)"):
        PostgresFullTextRetriever(pool).search("x", 0)
    with pytest.raises(InvalidEncoder, match=r"embedding function returned shape \(2,\)"):
        PgvectorRetriever(pool, lambda texts: np.zeros(2)).search("x", 3)
    with pytest.raises(psycopg.errors.UndefinedTable):
        PostgresFullTextRetriever(pool, PostgresTable(name="missing")).search("x", 3)
    with pytest.raises(
        OutOfRange, match=r"dimensions must be at most 2000 with vector_index=True.*\(got 2001\)"
    ):
        create_table(pool, PostgresTable(name="wide"), dimensions=2001)
    create_table(pool, PostgresTable(name="wide"), dimensions=2001, vector_index=False)  # a column only


@pytest.mark.parametrize("match", ["any", "all"])
def test_a_query_of_thousands_of_words_is_searched_by_its_first_distinct_terms(
    pool: ConnectionPool, match: str
) -> None:
    """A 5,000-word query (35 KB) exceeded the server's stack depth (psycopg's StatementTooComplex):
    the query sent holds at most MAX_QUERY_TERMS distinct terms, the first ones, in both modes and
    negated terms included."""
    retriever = PostgresFullTextRetriever(pool, match=match)
    words = [f"filler{i}" for i in range(5_000)]
    head = WORDS[:2]
    long_query = " ".join([*head, *words, *(f"-{w}" for w in words)])
    assert len(long_query) > 35_000
    expected = [(h.id, h.score) for h in retriever.search(" ".join(head), 10)]
    if match == "all":  # every word is required: the filler words leave nothing
        expected = []
    assert [(h.id, h.score) for h in retriever.search(long_query, 10)] == expected
    assert [(h.id, h.score) for h in asyncio.run(_async_search(pool, match, long_query))] == expected
    statement = retriever.statement(long_query, 10, None)
    assert statement is not None and len(statement[1]) <= MAX_QUERY_TERMS + 3  # + language, k, norm
