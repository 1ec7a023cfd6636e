"""`TantivyRetriever`: the embedded default backend, a persistent BM25 index in a directory.

Nothing to run and no key: `TantivyRetriever.build(documents, "DIR")` writes the index once,
`TantivyRetriever("DIR")` reopens it. Queries use Tantivy's syntax over title and text, so the
variants an expander writes mean something: `a OR b`, `"exact phrase"`, `+must -not`, `title:word`.
Text that is not valid syntax (a stray quote, a colon, a lone `-`) is searched as plain words instead
of failing.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import re
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import tantivy

from fanfuse._core import FusionError
from fanfuse._panics import is_rust_panic
from fanfuse.corpus import Document, Fields, as_documents
from fanfuse.errors import InputError, InvalidIndex, OutOfRange
from fanfuse.limits import TANTIVY_ARENA, check_int
from fanfuse.paths import utf8_path
from fanfuse.retrievers import index_versions
from fanfuse.retrievers.base import Hit
from fanfuse.retrievers.dense import checked_query
from fanfuse.retrievers.filters import Condition, check_known_keys, conditions, matches
from fanfuse.retrievers.index_copy import private_copy
from fanfuse.retrievers.index_versions import MANIFEST
from fanfuse.retrievers.tantivy_metadata import (
    FILTER_FIELD,
    METADATA_FIELD,
    json_field,
    json_field_metadata,
    listed_keys,
    metadata_keys,
    stored_metadata,
)
from fanfuse.retrievers.tantivy_writer import kept, write_index
from fanfuse.text import check_strs

SEARCH_FIELDS = ["title", "text"]
# Words only: what a query falls back to when it is not valid query syntax.
_WORD = re.compile(r"\w+")
_OPERATORS = {"AND", "OR", "NOT"}
# The analyzer of the title and text fields, and the same chain without its last step: Tantivy's
# built-in en_stem is the simple tokenizer, tokens over 40 bytes dropped, lower case, English stemmer.
TEXT_TOKENIZER = "en_stem"
_MAX_TOKEN_BYTES = 40


def _schema() -> tantivy.Schema:
    builder = tantivy.SchemaBuilder()
    builder.add_text_field("id", stored=True, tokenizer_name="raw")
    # en_stem: lower case + English stemming, so "parsing" finds "parse".
    builder.add_text_field("title", stored=True, tokenizer_name=TEXT_TOKENIZER)
    builder.add_text_field("text", stored=True, tokenizer_name=TEXT_TOKENIZER)
    # The metadata as stored and returned; filters read FILTER_FIELD.
    builder.add_bytes_field(METADATA_FIELD, stored=True)
    builder.add_text_field(FILTER_FIELD, stored=False, tokenizer_name="raw", index_option="basic")
    return builder.build()


class TantivyRetriever:
    """BM25 search over a Tantivy index directory built by `build` (or `fanfuse index`)."""

    def __init__(self, directory: str | os.PathLike[str], *, private_copy: bool = False) -> None:
        """Open the index built in `directory`.

        `private_copy=True` searches a copy of the current version made now, each Tantivy file
        checked against its checksum (`index_copy`): for a long-running process (`fanfuse serve`),
        which then neither dies of a file truncated under it (SIGBUS) nor answers from a file
        overwritten in place, and refuses a damaged index at open. `private_directory` is then the
        copy (an index directory itself, which other processes of the same server may open in place)
        and `data_directory` its version. An index on a read-only file system is searched from such
        a copy in any case: Tantivy takes a lock file to open one in place.
        """
        self.private_directory: Path | None = None
        self._remove_copy: Callable[[], object] | None = None
        self._closed = False
        self._readers = 0  # the reads running (`_in_use`): the index's files go when the last ends
        self._lock = threading.Lock()
        self.directory = Path(utf8_path(directory, "directory", InvalidIndex))
        self.manifest, self.data_directory, self._index, self._searcher = index_versions.open_current(
            self.directory, lambda manifest, data: self._open(manifest, data, private_copy)
        )
        self._schema = self._index.schema
        self._filter_terms = _has_field(self._schema, FILTER_FIELD, "")
        #: The keys of the documents' metadata, which a filter may name (None: not listed).
        self.metadata_keys = metadata_keys(self.manifest, self.directory)
        self._metadata = (
            stored_metadata if _has_field(self._schema, METADATA_FIELD, b"") else json_field_metadata
        )

    @classmethod
    def build(
        cls,
        documents: Iterable[Document | Mapping[str, Any]],
        directory: str | os.PathLike[str],
        *,
        fields: Fields | None = None,
        progress: Callable[[int], None] | None = None,
        heap_size: int = 128_000_000,
        threads: int = 1,
        then: Callable[[Path, Sequence[Document]], None] | None = None,
    ) -> TantivyRetriever:
        """Index `documents` into `directory` and open it.

        The index is built as a new version beside the current one and swapped in only when
        complete (see `index_versions`), so an existing index stays intact if anything fails (a bad
        line, a duplicate id, a full disk, a signal) and readers never find it half-done. A directory
        that is neither empty nor a fanfuse index is refused, never replaced.
        `progress` is called with the number of documents indexed so far. `threads` > 1 indexes
        faster but lays documents out in segments nondeterministically, so equal BM25 scores may
        then come back in a different order from one build to the next. `then(version_directory,
        documents)` runs once the index is written and before it becomes current, so that what it
        adds to the version (stored vectors) appears with the index, or neither does.
        """

        directory = utf8_path(directory, "directory", InvalidIndex)
        threads = check_int("index_threads", threads)
        heap_size = check_int("heap_size", heap_size)
        low, high = TANTIVY_ARENA
        if not low <= heap_size // threads <= high:
            raise OutOfRange(
                f"heap_size / threads must be from {low} to {high} bytes per thread "
                f"(got heap_size={heap_size}, threads={threads})"
            )

        def write(version: Path) -> dict[str, Any]:
            seen: list[Document] = []
            docs = as_documents(documents, fields)
            if then is not None:
                docs = kept(docs, seen)
            keys: set[str] = set()
            count = write_index(_schema(), docs, version, progress, heap_size, threads, keys)
            if then is not None:
                then(version, seen)
            return {"backend": "tantivy", "documents": count, **listed_keys(keys)}

        index_versions.build(directory, write)
        return cls(directory)

    def _open(
        self, manifest: dict[str, Any], data: Path, copy: bool
    ) -> tuple[dict[str, Any], Path, tantivy.Index, tantivy.Searcher]:
        if copy:
            self.private_directory, self._remove_copy = private_copy(self.directory, data, self)
        opened = (
            data
            if self.private_directory is None
            else self.private_directory / data.relative_to(self.directory)
        )
        try:
            index = tantivy.Index.open(str(opened))
            return manifest, opened, index, index.searcher()
        except BaseException as error:
            if not (isinstance(error, ValueError) or is_rust_panic(error)):
                raise
            if not copy and "Lockfile" in str(error):  # a read-only file system
                return self._open(manifest, data, copy=True)
            raise InvalidIndex(
                f"index {str(self.directory)!r} is corrupt ({error}); rebuild it with `fanfuse index`"
            ) from None

    @property
    def version(self) -> str:
        """Names the contents this retriever searches: every build of the directory is a new one
        (a cache of results over the index keys on it)."""
        return str(self.data_directory)

    def __len__(self) -> int:
        with self._in_use():
            return int(self._searcher.num_docs)

    def search(self, query: str, k: int, filter: Mapping[str, Any] | None = None) -> list[Hit]:
        """The `k` best documents for `query`, BM25 over title and text, best first.

        `filter` as every backend reads it (`filters`: a value, or any of a list, equal to the
        metadata's or one of its items; every key). It restricts the hits without changing their
        scores.
        """
        query = checked_query(query)
        k = check_int("retriever_k", k)
        checked = conditions(filter) if filter else []
        if checked and self.metadata_keys is not None:
            check_known_keys(checked, self.metadata_keys)
        with self._in_use():
            return self._search(query, k, checked)

    def _search(self, query: str, k: int, checked: list[Condition]) -> list[Hit]:
        parsed = self._parse(query)
        documents = int(self._searcher.num_docs)  # within this search's read (`_in_use`)
        if parsed is None or documents == 0:
            return []
        with self._reading():
            if checked and not self._filter_terms:
                # An index built before filter terms: every match of the query, checked one by one.
                found = self._searcher.search(parsed, documents).hits
                stored = ((score, self._searcher.doc(address)) for score, address in found)
                # Its metadata as Tantivy reads it: a date-like string is a date there, which no filter
                # value equals (never a wrong document; such a value is not found).
                kept = ((score, doc) for score, doc in stored if matches(checked, json_field(doc)))
                return [self._hit(score, doc) for score, doc in itertools.islice(kept, k)]
            if checked:
                # Score 0 for the filter clause: filtering must not reorder the BM25 ranking.
                restriction = tantivy.Query.const_score_query(self._filter_query(checked), 0.0)
                parsed = tantivy.Query.boolean_query(
                    [(tantivy.Occur.Must, parsed), (tantivy.Occur.Must, restriction)]
                )
            # Tantivy sizes its top-k buffer by the limit: ask for no more than the index holds.
            found = self._searcher.search(parsed, min(k, documents)).hits
            return [self._hit(score, self._searcher.doc(address)) for score, address in found]

    def close(self) -> None:
        """Ends the retriever's reads: a later one raises RuntimeError. A retriever that searches a
        private copy (``private_copy=True``, or an index on a read-only file system) removes it now,
        not when it is garbage-collected or the process exits (Tantivy opens segment files lazily,
        hence no read after); one that searches the index in place removes nothing. A server over the
        index (``fanfuse.service.app_for_index``) closes the one it opened when it shuts down."""
        with self._lock:
            self._closed = True
            if self._readers == 0:
                self._let_go()
        if self._remove_copy is not None:
            self._remove_copy()

    def _let_go(self) -> None:
        """Drops the index and its searcher, and with them the maps of the index's files (once)."""
        if hasattr(self, "_searcher"):
            del self._searcher, self._index

    @contextlib.contextmanager
    def _in_use(self) -> Iterator[None]:
        """One read of the index: refused once closed; a close() meanwhile lets the files go when
        the last running read ends, not under it."""
        with self._lock:
            self._check_open()
            self._readers += 1
        try:
            yield
        finally:
            with self._lock:
                self._readers -= 1
                if self._closed and self._readers == 0:
                    self._let_go()

    def _check_open(self) -> None:
        if self._closed:
            raise RuntimeError(f"this TantivyRetriever of {str(self.directory)!r} is closed (close())")

    @contextlib.contextmanager
    def _reading(self) -> Iterator[None]:
        """Tantivy reads segment files lazily: damage surfaces in a search as an error or a panic,
        which become one InvalidIndex (a failed branch, never a dead request)."""
        try:
            yield
        except BaseException as error:
            tantivy_error = isinstance(error, ValueError) and not isinstance(error, FusionError | InputError)
            if not (tantivy_error or is_rust_panic(error)):
                raise
            raise InvalidIndex(
                f"index {str(self.directory)!r} could not be read ({error}); it may be corrupt: "
                f"rebuild it with `fanfuse index`"
            ) from None

    def _hit(self, score: float, stored: tantivy.Document) -> Hit:
        payload: dict[str, Any] = dict(self._metadata(stored))
        payload["title"] = stored.get_first("title") or ""
        payload["text"] = stored.get_first("text") or ""
        return Hit(str(stored.get_first("id")), float(score), payload)

    def search_batch(
        self, queries: Sequence[str], k: int, filter: Mapping[str, Any] | None = None
    ) -> list[list[Hit]]:
        """`[search(q, k, filter) for q in queries]`. A search here takes a fraction of a millisecond,
        less than handing it to a thread of its own costs, so `MultiQueryRetriever` gives this index
        all its variants of a search in one call (one thread hand-off instead of one per variant)."""
        self._check_open()
        return [self.search(query, k, filter) for query in check_strs(queries, "queries")]

    def analyze(self, text: str) -> list[tuple[str, str]]:
        """The words of `text` as the index sees them: (word in lower case, indexed term) pairs, in
        order. Writing the word in a query finds the term: the query parser stems it the same way."""
        words = _WORDS_ANALYZER.analyze(text)
        distinct = list(dict.fromkeys(words))
        # Stemming is per token: stemming each distinct word once is a third faster than the text.
        term = dict(zip(distinct, _TERMS_ANALYZER.analyze(" ".join(distinct)), strict=True))
        return [(word, term[word]) for word in words]

    def document_frequency(self, term: str) -> int:
        """How many documents hold the indexed `term` (a term of `analyze`): the larger of its counts
        in the title and the text field (Tantivy counts per field)."""
        with self._in_use():
            return max(int(self._searcher.doc_freq(field, term)) for field in SEARCH_FIELDS)

    def documents(self) -> Iterator[Document]:
        """Every stored document (for building a dense index over the same corpus)."""
        with self._in_use(), self._reading():
            total = int(self._searcher.num_docs)
            addresses = (
                [address for _, address in self._searcher.search(tantivy.Query.all_query(), total).hits]
                if total
                else []
            )
        for address in addresses:
            # A generator started before close() reads nothing after it.
            with self._in_use(), self._reading():
                stored = self._searcher.doc(address)
            yield Document(
                str(stored.get_first("id")),
                stored.get_first("text") or "",
                stored.get_first("title") or "",
                self._metadata(stored),
            )

    def _parse(self, query: str) -> tantivy.Query | None:
        if not query.strip():
            return None
        try:
            return self._index.parse_query(query, SEARCH_FIELDS)
        except ValueError:
            # Not valid syntax (or only exclusions, or an unknown `field:`): search its words.
            # The operator words that made it invalid ("x AND") are dropped; lower case keeps the
            # remaining words from being read as operators again.
            words = [word.lower() for word in _WORD.findall(query) if word not in _OPERATORS]
            if not words:
                return None
            return self._index.parse_query(" ".join(words), SEARCH_FIELDS)

    def _filter_query(self, checked: Sequence[Condition]) -> tantivy.Query:
        clauses = []
        for condition in checked:
            terms = [
                tantivy.Query.term_query(self._schema, FILTER_FIELD, token) for token in condition.tokens
            ]
            either = tantivy.Query.boolean_query([(tantivy.Occur.Should, term) for term in terms])
            clauses.append((tantivy.Occur.Must, either))
        return tantivy.Query.boolean_query(clauses)

    def __repr__(self) -> str:
        if self._closed:
            return f"TantivyRetriever({str(self.directory)!r}, closed)"
        return f"TantivyRetriever({str(self.directory)!r}, documents={len(self)})"


def _text_analyzer(*, stem: bool) -> tantivy.TextAnalyzer:
    builder = (
        tantivy.TextAnalyzerBuilder(tantivy.Tokenizer.simple())
        .filter(tantivy.Filter.remove_long(_MAX_TOKEN_BYTES))
        .filter(tantivy.Filter.lowercase())
    )
    return (builder.filter(tantivy.Filter.stemmer("english")) if stem else builder).build()


# The same chain with and without the stemmer: a word of the first is one token of the second.
_WORDS_ANALYZER = _text_analyzer(stem=False)
_TERMS_ANALYZER = _text_analyzer(stem=True)


def _has_field(schema: tantivy.Schema, name: str, value: str | bytes) -> bool:
    """Whether ``schema`` has the field ``name``, whose terms are of ``value``'s type."""
    try:
        tantivy.Query.term_query(schema, name, value)
    except ValueError:
        return False
    return True


def open_or_none(directory: str | os.PathLike[str]) -> TantivyRetriever | None:
    """The index at `directory` if it opens cleanly, else None (for caches that rebuild)."""
    try:
        return TantivyRetriever(directory)
    except InvalidIndex:
        return None


__all__: Sequence[str] = ["MANIFEST", "TantivyRetriever", "open_or_none"]
