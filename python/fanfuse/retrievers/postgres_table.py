"""The PostgreSQL table the full-text and pgvector retrievers search, and the helpers that create it
and load documents into it (optional extra: `pip install 'fanfuse[postgres]'`).

One table holds both sides of a hybrid search: `id`, `title`, `text`, `metadata` (jsonb, for
filters), a generated `tsv` column (title weighted A, text B, in the table's text search
configuration) with a GIN index, and an optional pgvector `embedding` with an HNSW index. Names of
the table and its columns are checked against a strict pattern and always quoted as identifiers;
every value reaches the server as a bound parameter.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, fields
from typing import Any

import numpy as np
import numpy.typing as npt
from psycopg import Connection, sql
from psycopg.types.json import Jsonb
from psycopg_pool import ConnectionPool

from fanfuse.corpus import Document, Fields, as_documents
from fanfuse.errors import InvalidCorpus, InvalidSetting, OutOfRange
from fanfuse.limits import check_int, optional_int
from fanfuse.retrievers.dense import document_text

# One check of what an embedding function returns, for every backend that embeds.
from fanfuse.retrievers.query_vectors import embedded as embed_texts

__all__ = ["PostgresTable", "create_table", "embed_texts", "load_documents", "vector_literal"]

# What PostgreSQL accepts unquoted, and no more: letters, digits and _, not starting with a digit,
# at most 63 bytes (longer names are silently truncated by the server).
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,62}")
Embedder = Callable[[Sequence[str]], npt.ArrayLike]

# The most dimensions pgvector's HNSW index takes on a `vector` column (the column itself: 16,000).
HNSW_DIMENSIONS = 2000


def check_identifier(value: object, what: str) -> str:
    if not isinstance(value, str) or not _IDENTIFIER.fullmatch(value):
        raise InvalidSetting(
            f"{what} = {value!r}: expected a plain SQL name (letters, digits and _, not starting "
            f"with a digit, at most 63 characters)"
        )
    return value


@dataclass(frozen=True)
class PostgresTable:
    """Where the documents are: the table (optionally in `schema`), its column names, and the text
    search configuration (`language`: `english`, `simple`, `german`, ...) of its `tsv` column."""

    name: str = "documents"
    schema: str | None = None
    language: str = "english"
    id_column: str = "id"
    title_column: str = "title"
    text_column: str = "text"
    metadata_column: str = "metadata"
    tsvector_column: str = "tsv"
    embedding_column: str = "embedding"

    def __post_init__(self) -> None:
        for field in fields(self):
            value = getattr(self, field.name)
            if not (field.name == "schema" and value is None):
                check_identifier(value, field.name)

    @property
    def table(self) -> sql.Identifier:
        return sql.Identifier(self.schema, self.name) if self.schema else sql.Identifier(self.name)

    def column(self, role: str) -> sql.Identifier:
        """The quoted column of a role: id, title, text, metadata, tsvector or embedding."""
        name: str = getattr(self, f"{role}_column")
        return sql.Identifier(name)

    def index(self, role: str) -> sql.Identifier:
        return sql.Identifier(f"{self.name}_{getattr(self, f'{role}_column')}_idx"[:63])


def vector_literal(vector: npt.ArrayLike) -> str:
    """pgvector's text form of a vector (`[0.1,0.2]`), sent as a bound parameter cast to vector."""
    return "[" + ",".join(repr(float(x)) for x in np.asarray(vector, dtype=np.float64).ravel()) + "]"


@contextmanager
def _connection(target: Connection[Any] | ConnectionPool) -> Iterator[Connection[Any]]:
    if isinstance(target, ConnectionPool):
        with target.connection() as conn:
            yield conn
    elif isinstance(target, Connection):
        yield target
    else:
        raise TypeError(
            f"connection must be a psycopg Connection or ConnectionPool (got {type(target).__name__})"
        )


def create_table(
    connection: Connection[Any] | ConnectionPool,
    table: PostgresTable | None = None,
    *,
    dimensions: int | None = None,
    vector_index: bool = True,
) -> None:
    """Create the table and its indexes if they do not exist (one transaction).

    With `dimensions`, the table gets a `vector(dimensions)` embedding column, with an HNSW cosine
    index unless `vector_index=False` (then every vector search is exact: a scan of all rows), and
    the pgvector extension is created if it is not already.
    """
    table = table or PostgresTable()
    dimensions = optional_int("vector_dimensions", dimensions)
    if dimensions is not None and vector_index and dimensions > HNSW_DIMENSIONS:
        raise OutOfRange(
            f"dimensions must be at most {HNSW_DIMENSIONS} with vector_index=True, pgvector's most for an "
            f"HNSW index; pass vector_index=False for a wider column (got {dimensions})"
        )
    names = {
        role: table.column(role) for role in ("id", "title", "text", "metadata", "tsvector", "embedding")
    }
    # DDL takes no bound parameters: the configuration is a literal, quoted by psycopg.
    language = sql.Literal(table.language)
    tsvector = sql.SQL(
        "setweight(to_tsvector({lang}::regconfig, {title}), 'A') || "
        "setweight(to_tsvector({lang}::regconfig, {text}), 'B')"
    ).format(lang=language, title=names["title"], text=names["text"])
    columns = [
        sql.SQL("{} text PRIMARY KEY").format(names["id"]),
        sql.SQL("{} text NOT NULL DEFAULT ''").format(names["title"]),
        sql.SQL("{} text NOT NULL").format(names["text"]),
        sql.SQL("{} jsonb NOT NULL DEFAULT '{{}}'").format(names["metadata"]),
        sql.SQL("{} tsvector GENERATED ALWAYS AS ({}) STORED").format(names["tsvector"], tsvector),
    ]
    statements: list[sql.SQL | sql.Composed] = []
    if dimensions is not None:
        statements.append(sql.SQL("CREATE EXTENSION IF NOT EXISTS vector"))
        columns.append(sql.SQL("{} vector({})").format(names["embedding"], sql.Literal(dimensions)))
    statements.append(
        sql.SQL("CREATE TABLE IF NOT EXISTS {} ({})").format(table.table, sql.SQL(", ").join(columns))
    )
    indexes = [("tsvector", "gin ({})"), ("metadata", "gin ({} jsonb_path_ops)")]
    if dimensions is not None and vector_index:
        indexes.append(("embedding", "hnsw ({} vector_cosine_ops)"))
    for role, method in indexes:
        statements.append(
            sql.SQL("CREATE INDEX IF NOT EXISTS {} ON {} USING " + method).format(
                table.index(role), table.table, names[role]
            )
        )
    with _connection(connection) as conn, conn.transaction():
        for statement in statements:
            conn.execute(statement)


def load_documents(
    connection: Connection[Any] | ConnectionPool,
    documents: Iterable[Document | Mapping[str, Any]],
    table: PostgresTable | None = None,
    *,
    embed: Embedder | None = None,
    fields: Fields | None = None,
    batch_size: int = 256,
) -> int:
    """Insert or update `documents` (a document already in the table is replaced); returns how many.

    With `embed`, each document's title and text are embedded (`embed(texts) -> array`, one row per
    text, in batches of `batch_size`) into the embedding column; an all-zero vector is stored as
    NULL, so the document is never a vector hit (as in `DenseRetriever`). Everything is one
    transaction: a bad document (errors name it), a duplicate id in the input or a failing embedding
    leaves the table as it was.
    """
    table = table or PostgresTable()
    batch_size = check_int("batch_size", batch_size)
    columns = ["id", "title", "text", "metadata"] + (["embedding"] if embed is not None else [])
    names = [table.column(role) for role in columns]
    values = [sql.Placeholder()] * 4 + ([sql.SQL("{}::vector").format(sql.Placeholder())] if embed else [])
    statement = sql.SQL(
        "INSERT INTO {table} ({columns}) VALUES ({values}) ON CONFLICT ({id}) DO UPDATE SET {updates}"
    ).format(
        table=table.table,
        columns=sql.SQL(", ").join(names),
        values=sql.SQL(", ").join(values),
        id=names[0],
        updates=sql.SQL(", ").join(sql.SQL("{0} = EXCLUDED.{0}").format(name) for name in names[1:]),
    )
    seen: dict[str, str] = {}
    count = 0
    with _connection(connection) as conn, conn.transaction(), conn.cursor() as cursor:
        for batch in _batches(as_documents(documents, fields), batch_size):
            for document in batch:
                if document.id in seen:
                    raise InvalidCorpus(
                        f"{document.source}: duplicate id {document.id!r} (first at {seen[document.id]})"
                    )
                seen[document.id] = document.source
            rows: list[tuple[Any, ...]] = [(d.id, d.title, d.text, Jsonb(dict(d.metadata))) for d in batch]
            if embed is not None:
                vectors = embed_texts(embed, [document_text(d) for d in batch])
                rows = [
                    (*row, vector_literal(vector) if np.any(vector) else None)
                    for row, vector in zip(rows, vectors, strict=True)
                ]
            cursor.executemany(statement, rows)
            count += len(rows)
    return count


def _batches(documents: Iterable[Document], size: int) -> Iterator[list[Document]]:
    batch: list[Document] = []
    for document in documents:
        batch.append(document)
        if len(batch) == size:
            yield batch
            batch = []
    if batch:
        yield batch
