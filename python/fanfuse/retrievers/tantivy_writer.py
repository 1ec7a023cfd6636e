"""Writing a Tantivy index: each document added once (its id unique, its metadata stored as JSON
text and as filter terms), then committed; on any failure the writer is rolled back and its threads
stopped, so that the caller can remove its staging directory."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

import tantivy

from fanfuse.corpus import Document
from fanfuse.errors import InvalidCorpus
from fanfuse.retrievers.filters import index_terms
from fanfuse.retrievers.tantivy_metadata import FILTER_FIELD, METADATA_FIELD, metadata_json

__all__ = ["kept", "write_index"]


def write_index(
    schema: tantivy.Schema,
    documents: Iterable[Document],
    directory: Path,
    progress: Callable[[int], None] | None,
    heap_size: int,
    threads: int,
    keys: set[str],
) -> int:
    index = tantivy.Index(schema, path=str(directory), reuse=False)
    writer = index.writer(heap_size=heap_size, num_threads=threads)
    try:
        count = _add_all(writer, documents, progress, keys)
        if count == 0:
            raise InvalidCorpus(
                "no documents to index; an index needs at least one (an existing index is kept)"
            )
        writer.commit()
    except BaseException:
        # Stop the writer's threads before the caller deletes the staging directory.
        writer.rollback()
        raise
    finally:
        writer.wait_merging_threads()
    if progress is not None:
        progress(count)
    return count


def _add_all(
    writer: tantivy.IndexWriter,
    documents: Iterable[Document],
    progress: Callable[[int], None] | None,
    keys: set[str],
) -> int:
    """Adds every document, and the keys of their metadata to ``keys``."""
    first_seen: dict[str, str] = {}
    count = 0
    for document in documents:
        if document.id in first_seen:
            raise InvalidCorpus(
                f"{document.source}: duplicate document id {document.id!r} "
                f"(first at {first_seen[document.id]}); ids must be unique"
            )
        first_seen[document.id] = document.source
        fields: dict[str, Any] = {"id": document.id, "title": document.title, "text": document.text}
        try:
            if document.metadata:
                keys.update(document.metadata)
                fields[METADATA_FIELD] = metadata_json(document.metadata)
                if terms := index_terms(document.metadata):
                    fields[FILTER_FIELD] = terms
            writer.add_document(tantivy.Document(**fields))
        except (TypeError, ValueError) as error:
            raise InvalidCorpus(
                f"{document.source}: document {document.id!r} cannot be indexed ({error}); metadata "
                f"holds JSON values: str, finite numbers, bool, null, lists and objects of them"
            ) from None
        count += 1
        if progress is not None and count % 1000 == 0:
            progress(count)
    return count


def kept(documents: Iterable[Document], seen: list[Document]) -> Iterator[Document]:
    """`documents`, each appended to `seen` as it is read (for what the build does after it)."""
    for document in documents:
        seen.append(document)
        yield document
