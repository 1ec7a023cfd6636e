"""Documents to index: the record type and a JSONL reader whose errors name file:line.

A corpus line is a JSON object with an id and a text (field names configurable), an optional title,
and any other fields, which become the document's metadata (filterable, returned in hit payloads).
Plain or gzip-compressed files (recognised by their bytes) are read by the core's line reader, as the
run files are: UTF-8, lines ending at a newline, a byte-order mark at the start skipped, a line of at
most 16 MiB.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fanfuse._core import FusionError, _internal
from fanfuse.errors import InvalidCorpus
from fanfuse.jsonl import json_line
from fanfuse.paths import unreadable, utf8_path


@dataclass(frozen=True, slots=True)
class Document:
    """One document: `id` is what hits and fusion deduplicate on; `metadata` must be JSON-serializable."""

    id: str
    text: str
    title: str = ""
    metadata: Mapping[str, Any] = field(default_factory=dict)
    # Where the document came from ("corpus.jsonl:12"), so later errors (a duplicate id) can point at it.
    source: str = field(default="", compare=False, repr=False)


@dataclass(frozen=True, slots=True)
class Fields:
    """Which keys of a record hold the id, the text and the title."""

    id: str = "id"
    text: str = "text"
    title: str = "title"


def document_from_mapping(record: Mapping[str, Any], fields: Fields, source: str) -> Document:
    """Convert one record; `source` names it in errors ("file.jsonl:3" or "document #3")."""
    if not isinstance(record, Mapping):
        raise InvalidCorpus(f"{source}: expected a JSON object with {fields.id!r} and {fields.text!r} fields")
    doc_id = record.get(fields.id)
    # Integer ids are common in exported corpora; they are stored as their decimal string.
    if isinstance(doc_id, int) and not isinstance(doc_id, bool):
        doc_id = str(doc_id)
    if not isinstance(doc_id, str) or not doc_id:
        raise InvalidCorpus(
            f"{source}: missing or empty id field {fields.id!r} (a non-empty string or an integer); "
            f"choose the field with --id-field / Fields(id=...)"
        )
    text = record.get(fields.text)
    if not isinstance(text, str):
        raise InvalidCorpus(
            f"{source}: document {doc_id!r} has no text field {fields.text!r} (a string); "
            f"choose the field with --text-field / Fields(text=...)"
        )
    title = record.get(fields.title, "")
    if title is None:
        title = ""
    if not isinstance(title, str):
        raise InvalidCorpus(f"{source}: title field {fields.title!r} of {doc_id!r} must be a string")
    metadata = {
        key: value for key, value in record.items() if key not in (fields.id, fields.text, fields.title)
    }
    return Document(doc_id, text, title, metadata, source)


# What a blank line may hold, as for the run readers: field separators and the line end (not every
# Unicode space: a line of U+00A0 is not JSON, and is reported as such).
_BLANK = " \t\v\f\r\n"


def _existing(path: str | Path) -> Path:
    path = Path(path)
    problem = unreadable(path)
    if problem is not None:
        raise InvalidCorpus(f"corpus file {str(path)!r}: {problem} (expected a JSONL file, plain or .gz)")
    return path


def read_lines(path: str | Path) -> Iterator[tuple[int, str]]:
    """The numbered lines of a corpus file, ``(line_number, line)`` without the line end, read by the
    core's line reader; a line it refuses (not UTF-8, longer than ``READER_LIMITS["line"]``) raises
    ``InvalidCorpus`` naming file:line."""
    try:
        yield from _internal._Lines(utf8_path(path, "corpus file", InvalidCorpus))
    except FusionError as error:
        raise InvalidCorpus(str(error)) from None


def read_jsonl(path: str | Path, fields: Fields | None = None) -> Iterator[Document]:
    """Stream the documents of a JSONL corpus; blank lines are skipped, errors name file:line. A file
    with no document is refused, as an empty run or qrels file is: it is a mistake, and indexing it
    would replace an index with an empty one."""
    path = _existing(path)
    fields = fields or Fields()
    documents = 0
    for number, line in read_lines(path):
        if not line.strip(_BLANK):
            continue
        source = f"{path}:{number}"
        record = json_line(line, source, "one object per line", InvalidCorpus)
        documents += 1
        yield document_from_mapping(record, fields, source)
    if documents == 0:
        raise InvalidCorpus(
            f"{path}: no documents (the file is empty or holds only blank lines); a corpus needs at least one"
        )


def as_documents(
    items: Iterable[Document | Mapping[str, Any]], fields: Fields | None = None
) -> Iterator[Document]:
    """Accept `Document`s or plain mappings (converted with `fields`), numbered for error messages."""
    fields = fields or Fields()
    for number, item in enumerate(items, start=1):
        if isinstance(item, Document):
            yield (
                item
                if item.source
                else Document(item.id, item.text, item.title, item.metadata, f"document #{number}")
            )
        else:
            yield document_from_mapping(item, fields, f"document #{number}")


def count_lines(path: str | Path) -> int | None:
    """Number of non-blank lines (the progress bar's total); cheap next to indexing them. None for a
    pipe: it is read once, and counting would take the documents away from the reader that follows."""
    if not _existing(path).is_file():
        return None
    return sum(1 for _, line in read_lines(path) if line.strip(_BLANK))
