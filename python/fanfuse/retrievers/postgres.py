"""PostgreSQL as fanfuse retrievers: full text (`tsvector`, `websearch_to_tsquery`, `ts_rank_cd`) and
pgvector (cosine distance), each sync (a psycopg `ConnectionPool`, searched in fanfuse's thread pool)
or async (an `AsyncConnectionPool`, on the event loop). Optional extra: `pip install 'fanfuse[postgres]'`.

Hybrid multi-query search over one database::

    pool = ConnectionPool("host=... dbname=...", open=True)
    hybrid = MultiQueryRetriever(
        {"text": PostgresFullTextRetriever(pool), "vector": PgvectorRetriever(pool, embed)}
    )

The table is the one `postgres_table.create_table` makes (or any with the same columns: name them in
a `PostgresTable`). Filters use the convention of the built-in backends (`{"key": value}`,
`{"key": [v1, v2]}`) over the jsonb metadata column, as SQL with bound parameters.
"""

from __future__ import annotations

import asyncio
import inspect
import itertools
import re
from collections.abc import Mapping, Sequence
from typing import Any, Literal, get_args

import numpy as np
from psycopg import sql
from psycopg.types.json import Jsonb
from psycopg_pool import AsyncConnectionPool, ConnectionPool

from fanfuse.limits import check_choice, check_int
from fanfuse.retrievers.base import Hit
from fanfuse.retrievers.dense import checked_query
from fanfuse.retrievers.filters import conditions
from fanfuse.retrievers.postgres_table import (
    Embedder,
    PostgresTable,
    create_table,
    embed_texts,
    load_documents,
    vector_literal,
)

__all__ = [
    "MATCH_MODES",
    "AsyncPgvectorRetriever",
    "AsyncPostgresFullTextRetriever",
    "Match",
    "PgvectorRetriever",
    "PostgresFullTextRetriever",
    "PostgresTable",
    "create_table",
    "load_documents",
]

#: Whether a full-text search needs any of the query's words or all of them.
Match = Literal["any", "all"]
MATCH_MODES: tuple[Match, ...] = get_args(Match)
# The most query pieces (words, phrases) one statement sends: each is a parsed expression of the
# statement, and thousands of them exceed the server's stack depth (StatementTooComplex). A longer
# query is searched by its first distinct pieces, the positive ones before the negated ones.
MAX_QUERY_TERMS = 256
# A quoted phrase or one whitespace-separated word, each optionally negated with a leading "-".
_TOKEN = re.compile(r'(-?)"([^"]*)"?|(-?)(\S+)')
_JOINERS = {"OR", "AND"}


def query_pieces(query: str) -> tuple[list[str], list[str]]:
    """The positive and negated pieces of a query in `any` mode: words and `"quoted phrases"`;
    `OR`/`AND` are dropped (any piece matches), `NOT x` and `-x` exclude x, `+x` is x."""
    positive: list[str] = []
    negative: list[str] = []
    negate_next = False
    for match in _TOKEN.finditer(query):
        minus_phrase, phrase, minus_word, word = match.groups()
        if phrase is not None:
            piece, negated = f'"{phrase}"', bool(minus_phrase)
        elif word in _JOINERS:
            continue
        elif word == "NOT":
            negate_next = True
            continue
        else:
            piece, negated = word.lstrip("+"), bool(minus_word)
        if not piece.strip('"+-'):
            continue
        (negative if negated or negate_next else positive).append(piece)
        negate_next = False
    return positive, negative


def _check_pool(pool: object, expected: type, other: str) -> None:
    if not isinstance(pool, expected):
        other_pool = "ConnectionPool" if expected is AsyncConnectionPool else "AsyncConnectionPool"
        raise TypeError(
            f"pool must be a psycopg_pool.{expected.__name__} (got {type(pool).__name__}); "
            f"for a {other_pool} use {other}"
        )


def _filter_sql(
    table: PostgresTable, filter: Mapping[str, Any] | None
) -> tuple[sql.Composable, dict[str, Any]]:
    """` AND metadata @> ANY(...)` per filter key, with the values as bound parameters.

    The meaning of `filters`, in jsonb containment: `{key: v}` holds where the metadata's key is v,
    `{key: [v]}` where it is a list with the item v; jsonb compares numbers by value and keeps
    true apart from 1. jsonb cannot hold a NUL character, so a value with one matches nothing.
    """
    if not filter:
        return sql.SQL(""), {}
    clauses: list[sql.Composable] = []
    params: dict[str, Any] = {}
    for i, condition in enumerate(conditions(filter)):
        key = condition.key
        storable = [v for v in condition.values if "\0" not in key and not (isinstance(v, str) and "\0" in v)]
        if not storable:
            clauses.append(sql.SQL(" AND FALSE"))
            continue
        params[f"filter{i}"] = [
            Jsonb(shape) for value in storable for shape in ({key: value}, {key: [value]})
        ]
        clauses.append(
            sql.SQL(" AND d.{} @> ANY({}::jsonb[])").format(
                table.column("metadata"), sql.Placeholder(f"filter{i}")
            )
        )
    return sql.Composed(clauses), params


def _hits(rows: Sequence[tuple[Any, ...]]) -> list[Hit]:
    return [
        Hit(str(doc_id), float(score), {**(metadata or {}), "title": title or "", "text": text or ""})
        for doc_id, score, title, text, metadata in rows
    ]


class _FullText:
    """The full-text statement of one search; the sync and async retrievers only run it."""

    def __init__(self, table: PostgresTable | None, match: Match, normalization: int, name: str) -> None:
        self.match = check_choice("match", match, MATCH_MODES)
        self.table = table or PostgresTable()
        self.normalization = check_int("normalization", normalization)
        self.name = name

    def statement(
        self, query: str, k: int, filter: Mapping[str, Any] | None
    ) -> tuple[sql.Composed, dict[str, Any]] | None:
        """The SQL and its parameters; None when the query has nothing to search for."""
        query = checked_query(query)
        # PostgreSQL text cannot hold NUL, and no document holds one: it parts words, as in Tantivy.
        query = query.replace("\0", " ")
        params: dict[str, Any] = {
            "language": self.table.language,
            "k": check_int("retriever_k", k),
            "norm": self.normalization,
        }
        parse = sql.SQL("websearch_to_tsquery(%(language)s::regconfig, {})")
        if self.match == "all":
            if not query.strip():
                return None
            # Its first pieces as written (the web-search syntax read by the server, not here).
            first = itertools.islice(_TOKEN.finditer(query), MAX_QUERY_TERMS)
            params["query"] = " ".join(match.group(0) for match in first)
            tsquery: sql.Composable = parse.format(sql.Placeholder("query"))
        else:
            pieces = query_pieces(query)
            positive = list(dict.fromkeys(pieces[0]))[:MAX_QUERY_TERMS]
            negative = list(dict.fromkeys(pieces[1]))[: MAX_QUERY_TERMS - len(positive)]
            if not positive:
                return None
            tsquery = sql.SQL("({})").format(sql.SQL(" || ").join(self._parsed("p", positive, params)))
            if negative:  # none of them: one flat expression, not one nesting per piece
                excluded = sql.SQL(" || ").join(self._parsed("n", negative, params))
                tsquery = sql.SQL("{} && !!({})").format(tsquery, excluded)
        where, filter_params = _filter_sql(self.table, filter)
        t = self.table
        statement = sql.SQL(
            "WITH q AS (SELECT {tsquery} AS query) "
            "SELECT d.{id}, ts_rank_cd(d.{tsv}, q.query, %(norm)s) AS score, d.{title}, d.{text}, "
            "d.{metadata} FROM {table} AS d, q WHERE d.{tsv} @@ q.query{where} "
            "ORDER BY score DESC, d.{id} LIMIT %(k)s"
        ).format(
            tsquery=tsquery, table=t.table, where=where, id=t.column("id"), tsv=t.column("tsvector"),
            title=t.column("title"), text=t.column("text"), metadata=t.column("metadata"),
        )  # fmt: skip
        return statement, {**params, **filter_params}

    def _parsed(self, prefix: str, pieces: list[str], params: dict[str, Any]) -> list[sql.Composable]:
        """Each piece as a bound parameter parsed by `websearch_to_tsquery`."""
        parse = sql.SQL("websearch_to_tsquery(%(language)s::regconfig, {})")
        for i, piece in enumerate(pieces):
            params[f"{prefix}{i}"] = piece
        return [parse.format(sql.Placeholder(f"{prefix}{i}")) for i in range(len(pieces))]


class PostgresFullTextRetriever(_FullText):
    """Full-text search of a PostgreSQL table, ranked by `ts_rank_cd` (cover density).

    `match="any"` (default, like BM25 engines): a document matches if it has any query word or
    `"quoted phrase"`; `-word` and `NOT word` exclude, `OR`/`AND` are ignored (every piece is
    optional), so the variants an expander writes for Tantivy mean the same here.
    `match="all"`: the query is `websearch_to_tsquery`'s web-search syntax as is: every word is
    required, `or` between words, `"phrase"`, `-word`.
    `normalization` is `ts_rank_cd`'s flags; the default, 4 (divide by the mean harmonic distance
    between extents), ranked best and agreed most with BM25 of 0, 1, 2, 4, 5, 6, 12 and 32 on the
    MT-RAG cloud pool (docs/retrievers.md).
    Ties are broken by id. `pool` is a psycopg `ConnectionPool`.
    """

    def __init__(
        self,
        pool: ConnectionPool,
        table: PostgresTable | None = None,
        *,
        match: Match = "any",
        normalization: int = 4,
        name: str = "postgres-text",
    ) -> None:
        _check_pool(pool, ConnectionPool, "AsyncPostgresFullTextRetriever")
        super().__init__(table, match, normalization, name)
        self.pool = pool

    def search(self, query: str, k: int, filter: Mapping[str, Any] | None = None) -> list[Hit]:
        planned = self.statement(query, k, filter)
        if planned is None:
            return []
        with self.pool.connection() as conn:
            return _hits(conn.execute(*planned).fetchall())


class AsyncPostgresFullTextRetriever(_FullText):
    """`PostgresFullTextRetriever` over an `AsyncConnectionPool`, searched on the event loop."""

    def __init__(
        self,
        pool: AsyncConnectionPool,
        table: PostgresTable | None = None,
        *,
        match: Match = "any",
        normalization: int = 4,
        name: str = "postgres-text",
    ) -> None:
        _check_pool(pool, AsyncConnectionPool, "PostgresFullTextRetriever")
        super().__init__(table, match, normalization, name)
        self.pool = pool

    async def search(self, query: str, k: int, filter: Mapping[str, Any] | None = None) -> list[Hit]:
        planned = self.statement(query, k, filter)
        if planned is None:
            return []
        async with self.pool.connection() as conn:
            cursor = await conn.execute(*planned)
            return _hits(await cursor.fetchall())


class _Vector:
    """The pgvector statement of one search; the sync and async retrievers only run it."""

    def __init__(self, embed: Any, table: PostgresTable | None, name: str) -> None:
        if not callable(embed):
            raise TypeError(f"embed must be a function texts -> vectors (got {type(embed).__name__})")
        self.embed = embed
        self.table = table or PostgresTable()
        self.name = name

    def statement(
        self, vector: Any, k: int, filter: Mapping[str, Any] | None
    ) -> tuple[sql.Composed, dict[str, Any]] | None:
        """The SQL and its parameters; None for a zero query vector (similar to nothing)."""
        if not np.any(vector):
            return None
        where, filter_params = _filter_sql(self.table, filter)
        t = self.table
        # The inner ORDER BY is the distance alone, so an HNSW index serves it; the outer one puts
        # equal scores in id order.
        statement = sql.SQL(
            "SELECT * FROM (SELECT d.{id}, 1 - (d.{embedding} <=> %(vector)s::vector) AS score, d.{title}, "
            "d.{text}, d.{metadata} FROM {table} AS d WHERE d.{embedding} IS NOT NULL{where} "
            "ORDER BY d.{embedding} <=> %(vector)s::vector LIMIT %(k)s) AS nearest ORDER BY score DESC, 1"
        ).format(
            table=t.table, where=where, id=t.column("id"), embedding=t.column("embedding"),
            title=t.column("title"), text=t.column("text"), metadata=t.column("metadata"),
        )  # fmt: skip
        return statement, {
            "vector": vector_literal(vector),
            "k": check_int("retriever_k", k),
            **filter_params,
        }


class PgvectorRetriever(_Vector):
    """Nearest neighbours by cosine distance in pgvector; the score is the cosine similarity.

    `embed(texts) -> array` embeds the query (the same function that embedded the documents).
    Documents without an embedding are never returned. With the HNSW index of `create_table` the
    search is approximate (pgvector's `hnsw.ef_search`, 40 by default, bounds how many come back).
    """

    def __init__(
        self,
        pool: ConnectionPool,
        embed: Embedder,
        table: PostgresTable | None = None,
        *,
        name: str = "pgvector",
    ) -> None:
        _check_pool(pool, ConnectionPool, "AsyncPgvectorRetriever")
        super().__init__(embed, table, name)
        self.pool = pool

    def search(self, query: str, k: int, filter: Mapping[str, Any] | None = None) -> list[Hit]:
        planned = self.statement(embed_texts(self.embed, [checked_query(query)])[0], k, filter)
        if planned is None:
            return []
        with self.pool.connection() as conn:
            return _hits(conn.execute(*planned).fetchall())


class AsyncPgvectorRetriever(_Vector):
    """`PgvectorRetriever` over an `AsyncConnectionPool`. `embed` may be an `async def`; a sync one
    runs in a worker thread so the event loop is not blocked by the model."""

    def __init__(
        self,
        pool: AsyncConnectionPool,
        embed: Any,
        table: PostgresTable | None = None,
        *,
        name: str = "pgvector",
    ) -> None:
        _check_pool(pool, AsyncConnectionPool, "PgvectorRetriever")
        super().__init__(embed, table, name)
        self.pool = pool

    async def search(self, query: str, k: int, filter: Mapping[str, Any] | None = None) -> list[Hit]:
        query = checked_query(query)
        if inspect.iscoroutinefunction(self.embed):
            vectors = await self.embed([query])
            vector = embed_texts(lambda _: vectors, [query])[0]
        else:
            vector = (await asyncio.to_thread(embed_texts, self.embed, [query]))[0]
        planned = self.statement(vector, k, filter)
        if planned is None:
            return []
        async with self.pool.connection() as conn:
            cursor = await conn.execute(*planned)
            return _hits(await cursor.fetchall())
