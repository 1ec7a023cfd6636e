"""`DenseRetriever`: exact cosine search in NumPy over vectors from any embedding function.

The embedding function maps a list of texts to a float matrix (one row per text): a local model
(`OnnxEncoder`), an embeddings API, or `TfidfSvdEmbedder` (scikit-learn, fitted on the corpus, no
download). Exact search is a matrix-vector product, linear in the corpus: about 1 ms per query at
10^4 vectors of 384 dimensions, 10 ms at 10^5, 0.2-0.3 s at 10^6 (docs/retrievers.md). Past some
10^5 vectors an ANN service (Qdrant, pgvector, ...) plugs into the same protocol.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from fanfuse.corpus import Document, Fields, as_documents
from fanfuse.errors import InvalidCorpus, InvalidEncoder, MissingExtra
from fanfuse.limits import check_int
from fanfuse.output_guard import OutputFile
from fanfuse.retrievers.base import Hit
from fanfuse.retrievers.filters import check_known_keys, conditions, value_terms
from fanfuse.retrievers.query_vectors import QueryVectors, cache_size_from_env, embedded
from fanfuse.text import check_strs

Embedder = Callable[[Sequence[str]], npt.ArrayLike]
# Sublinear tf and English stopwords: the usual LSA setting; float32 halves memory and time.
_TFIDF_OPTIONS: dict[str, Any] = {"sublinear_tf": True, "stop_words": "english", "dtype": np.float32}


def checked_query(query: object) -> str:
    """A query as every backend's ``search`` takes it: a str (a blank one finds nothing). One message
    for all of them, so that a caller learns the same thing whichever it searched."""
    if not isinstance(query, str):
        raise TypeError(f"query must be a str (got {type(query).__name__})")
    return query


def document_text(document: Document) -> str:
    """What gets embedded for a document: its title, then its text."""
    return f"{document.title}\n{document.text}" if document.title else document.text


def payload(document: Document) -> dict[str, Any]:
    """What a hit carries: the document's metadata, title and text."""
    return {**document.metadata, "title": document.title, "text": document.text}


def unique_documents(
    documents: Iterable[Document | Mapping[str, Any]], fields: Fields | None = None
) -> list[Document]:
    """The documents as a list; a repeated id is an error naming both places."""
    docs = list(as_documents(documents, fields))
    seen: dict[str, str] = {}
    for doc in docs:
        if doc.id in seen:
            raise InvalidCorpus(f"{doc.source}: duplicate document id {doc.id!r} (first at {seen[doc.id]})")
        seen[doc.id] = doc.source
    return docs


def unit_rows(vectors: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    # A zero vector (a text with no known term) stays zero: similar to nothing, never a NaN.
    unit: npt.NDArray[np.float32] = np.divide(vectors, norms, out=np.zeros_like(vectors), where=norms > 0)
    return unit


class DenseRetriever:
    """Cosine similarity between the embedded query and every document vector, best first."""

    def __init__(
        self,
        embed: Embedder,
        ids: Sequence[str],
        vectors: npt.ArrayLike,
        payloads: Sequence[Mapping[str, Any]] | None = None,
        *,
        normalized: bool = False,
        query_cache_size: int | None = None,
        metadata: Sequence[Mapping[str, Any]] | None = None,
    ) -> None:
        """`normalized=True`: the rows already have unit length (or are zero) and are used as they
        are, without a copy, so a memory-mapped matrix stays mapped. `query_cache_size`: query
        vectors kept for repeated queries (default `FANFUSE_QUERY_CACHE_SIZE`, else 4096; 0: none);
        the queries of concurrent searches are embedded together (`query_vectors.py`). `metadata`:
        what filters match, one mapping per id (default: the payloads). A NaN or infinite value in
        any row is refused: such a row would silently never be returned."""
        ids = check_strs(ids, "ids")
        matrix = np.asarray(vectors, dtype=np.float32)
        if matrix.ndim != 2 or matrix.shape[0] != len(ids):
            raise InvalidEncoder(
                f"vectors must be a 2-D array with one row per id ({len(ids)}), got {matrix.shape}"
            )
        for name, given in (("payloads", payloads), ("metadata", metadata)):
            if given is not None and len(given) != len(ids):
                raise InvalidCorpus(f"{name} must have one entry per id ({len(ids)}), got {len(given)}")
        if len(set(ids)) != len(ids):
            raise InvalidCorpus("ids must be unique")
        self._queries = QueryVectors(
            embed, cache_size_from_env() if query_cache_size is None else query_cache_size
        )
        self.ids = list(ids)
        if not normalized:
            _check_finite(matrix, self.ids)
        self._matrix = matrix if normalized else unit_rows(matrix)
        self._closed = False
        # Row by row, without a temporary the size of the matrix (which may be a 1 GB mapped file).
        squared_norms = np.einsum("ij,ij->i", self._matrix, self._matrix)
        _check_finite(squared_norms, self.ids)
        self._has_vector = squared_norms > 0
        self._payloads: list[Mapping[str, Any]] = list(payloads) if payloads is not None else [{}] * len(ids)
        self._metadata = list(metadata) if metadata is not None else self._payloads
        # Per filtered key, the rows holding each value's term (filters.value_terms), made once.
        self._rows_by_term: dict[str, dict[str, npt.NDArray[np.intp]]] = {}
        self._metadata_keys: frozenset[str] | None = None

    @classmethod
    def from_documents(
        cls,
        documents: Iterable[Document | Mapping[str, Any]],
        embed: Embedder,
        *,
        fields: Fields | None = None,
        batch_size: int = 512,
        embed_documents: Embedder | None = None,
    ) -> DenseRetriever:
        """Embed every document (title + text) in batches; payloads are title, text and metadata.

        `embed` embeds the queries, and the documents too unless `embed_documents` is given (for
        models that mark the two differently, as E5 does: `encoder.embed_queries` and
        `encoder.embed_passages` of an `OnnxEncoder`).
        """
        batch_size = check_int("batch_size", batch_size)
        docs = unique_documents(documents, fields)
        texts = [document_text(doc) for doc in docs]
        embed_text = embed_documents or embed
        parts = [embedded(embed_text, texts[i : i + batch_size]) for i in range(0, len(texts), batch_size)]
        vectors = np.vstack(parts) if parts else np.zeros((0, 1), dtype=np.float32)
        return cls.of_documents(docs, vectors, embed)

    @classmethod
    def of_documents(
        cls,
        documents: Sequence[Document],
        vectors: npt.ArrayLike,
        embed: Embedder,
        *,
        normalized: bool = False,
    ) -> DenseRetriever:
        """Over `vectors` already made, one row per document: hits carry each document's payload,
        filters read its metadata."""
        ids = [doc.id for doc in documents]
        payloads = [payload(doc) for doc in documents]
        metadata = [doc.metadata for doc in documents]
        return cls(embed, ids, vectors, payloads, normalized=normalized, metadata=metadata)

    def __len__(self) -> int:
        return len(self.ids)

    @property
    def vectors(self) -> npt.NDArray[np.float32]:
        """The document vectors, normalized to unit length, one row per id (read-only by contract)."""
        if self._closed:
            raise RuntimeError("this DenseRetriever is closed (close())")
        return self._matrix

    def close(self) -> None:
        """Lets the vectors go (a matrix mapped from an index's file is unmapped once no running
        search holds it); a later search raises RuntimeError."""
        self._closed = True
        self._matrix = np.empty((0, self._matrix.shape[1]), dtype=np.float32)

    @property
    def query_cache_size(self) -> int:
        """Query vectors kept for repeated queries (0: none); settable."""
        return self._queries.cache_size

    @query_cache_size.setter
    def query_cache_size(self, size: int) -> None:
        self._queries.cache_size = size

    def search(self, query: str, k: int, filter: Mapping[str, Any] | None = None) -> list[Hit]:
        """The `k` most similar documents; `filter` as every backend reads it (`filters`), over the
        documents' metadata."""
        return self.search_batch([checked_query(query)], k, filter)[0]

    def search_batch(
        self, queries: Sequence[str], k: int, filter: Mapping[str, Any] | None = None
    ) -> list[list[Hit]]:
        """`[search(q, k, filter) for q in queries]` with the queries embedded in one encoder call
        (what `MultiQueryRetriever` calls with a search's variants)."""
        queries = check_strs(queries, "queries")
        k = check_int("retriever_k", k)
        asked = [i for i, query in enumerate(queries) if query.strip()]
        results: list[list[Hit]] = [[] for _ in queries]
        matrix = self.vectors  # this search's, whatever a close() meanwhile does
        if not asked or not self.ids:
            return results
        query_vectors = unit_rows(self._queries([queries[i] for i in asked]))
        if query_vectors.shape[1] != matrix.shape[1]:
            raise InvalidEncoder(
                f"query vector has {query_vectors.shape[1]} dimensions, the documents {matrix.shape[1]}"
            )
        candidates = self._has_vector & self._filter_mask(filter) if filter else self._has_vector
        for i, query_vector in zip(asked, query_vectors, strict=True):
            results[i] = self._ranked(matrix, query_vector, candidates, k)
        return results

    def _ranked(
        self,
        matrix: npt.NDArray[np.float32],
        query_vector: npt.NDArray[np.float32],
        candidates: npt.NDArray[np.bool_],
        k: int,
    ) -> list[Hit]:
        if not query_vector.any():
            return []  # nothing in the query the embedding knows: no similarity is meaningful
        # einsum, not `@`: a matrix-vector product is too small to gain from BLAS threads, and once
        # those threads are awake (after an SVD fit, or from parallel branches) `@` measured 10-100x
        # slower on 2 cores while einsum's single-threaded loop stays at ~0.2 ms per 10^6 floats.
        scores = np.einsum("ij,j->i", matrix, query_vector)
        positions = np.flatnonzero(candidates)
        if len(positions) > k:
            best = np.argpartition(-scores[positions], k - 1)[:k]
            positions = positions[best]
        # Stable order: score descending, then corpus order, so equal scores rank reproducibly.
        order = np.lexsort((positions, -scores[positions]))
        return [Hit(self.ids[i], float(scores[i]), self._payloads[i]) for i in positions[order]]

    @property
    def metadata_keys(self) -> frozenset[str]:
        """The keys of the documents' metadata, which a filter may name (read once, when first asked)."""
        if self._metadata_keys is None:
            self._metadata_keys = frozenset(key for metadata in self._metadata for key in metadata)
        return self._metadata_keys

    def _filter_mask(self, filter: Mapping[str, Any]) -> npt.NDArray[np.bool_]:
        mask = np.ones(len(self.ids), dtype=bool)
        checked = conditions(filter)
        check_known_keys(checked, self.metadata_keys)
        for condition in checked:
            rows = self._rows_by_term.get(condition.key)
            if rows is None:
                rows = self._rows_by_term[condition.key] = self._index_key(condition.key)
            matching = np.zeros(len(self.ids), dtype=bool)
            for term in condition.terms:
                matching[rows.get(term, [])] = True
            mask &= matching
        return mask

    def _index_key(self, key: str) -> dict[str, npt.NDArray[np.intp]]:
        found: dict[str, list[int]] = {}
        for row, metadata in enumerate(self._metadata):
            if key in metadata:
                for term in set(value_terms(metadata[key])):
                    found.setdefault(term, []).append(row)
        return {term: np.array(rows, dtype=np.intp) for term, rows in found.items()}


def _check_finite(values: npt.NDArray[np.float32], ids: Sequence[str]) -> None:
    finite = np.isfinite(values)
    if not finite.all():
        rows = np.flatnonzero(~finite.reshape(len(ids), -1).all(axis=1))
        named = ", ".join(repr(ids[i]) for i in rows[:3]) + (", ..." if len(rows) > 3 else "")
        raise InvalidEncoder(
            f"{len(rows)} document vector(s) hold NaN or infinite values (ids {named}); such a "
            f"vector is similar to nothing: embed those documents again"
        )


class TfidfSvdEmbedder:
    """A real embedding that needs no download: TF-IDF, then truncated SVD (latent semantic analysis).

    Fit it on the corpus, then pass it as the embedding function. Needs scikit-learn
    (`pip install 'fanfuse[dense]'`).
    """

    def __init__(self, dimensions: int = 256, *, seed: int = 0) -> None:
        self.dimensions = check_int("dimensions", dimensions)
        self.seed = check_int("svd_seed", seed)
        self._parts: tuple[Any, Any] | None = None

    def fit(self, texts: Sequence[str]) -> TfidfSvdEmbedder:
        texts = check_strs(texts, "texts")
        try:
            from sklearn.decomposition import TruncatedSVD
            from sklearn.feature_extraction.text import TfidfVectorizer
        except ImportError:
            raise MissingExtra(
                "TfidfSvdEmbedder needs scikit-learn: pip install 'fanfuse[dense]'", extra="dense"
            ) from None
        vectorizer = TfidfVectorizer(**_TFIDF_OPTIONS)
        weights = vectorizer.fit_transform(texts)
        # SVD needs fewer components than terms and documents.
        dimensions = max(1, min(self.dimensions, weights.shape[1] - 1, weights.shape[0] - 1))
        svd = TruncatedSVD(dimensions, random_state=self.seed).fit(weights)
        # TruncatedSVD.transform(X) is X @ components_.T; keeping the transpose contiguous once saves
        # a copy of the whole (terms x dimensions) matrix on every query.
        projection = np.ascontiguousarray(svd.components_.T, dtype=np.float32)
        self._parts = (vectorizer, projection)
        return self

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write the fitted model (vocabulary, idf, projection) to one `.npz` file, atomically (see
        docs/run-files.md, "Output paths", for links, FIFOs and devices)."""
        if self._parts is None:
            raise InvalidEncoder("TfidfSvdEmbedder is not fitted; call .fit(corpus_texts) first")
        vectorizer, projection = self._parts
        terms = sorted(vectorizer.vocabulary_, key=vectorizer.vocabulary_.get)
        with OutputFile(path) as stream:
            np.savez(stream, terms=np.array(terms), idf=vectorizer.idf_, projection=projection)

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> TfidfSvdEmbedder:
        """A model written by `save`, ready to embed (needs scikit-learn)."""
        from sklearn.feature_extraction.text import TfidfVectorizer

        try:
            with np.load(path, allow_pickle=False) as saved:
                terms, idf, projection = list(saved["terms"]), saved["idf"], saved["projection"]
        except (OSError, ValueError, KeyError) as error:
            raise InvalidEncoder(f"{path}: not a saved TfidfSvdEmbedder ({error})") from None
        vectorizer = TfidfVectorizer(**_TFIDF_OPTIONS, vocabulary=terms)
        vectorizer.idf_ = idf  # the fitted weights; with a fixed vocabulary nothing else is learned
        embedder = cls(dimensions=projection.shape[1])
        embedder._parts = (vectorizer, np.ascontiguousarray(projection, dtype=np.float32))
        return embedder

    def __call__(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        if self._parts is None:
            raise InvalidEncoder("TfidfSvdEmbedder is not fitted; call .fit(corpus_texts) first")
        vectorizer, projection = self._parts
        return np.asarray(vectorizer.transform(check_strs(texts, "texts")) @ projection, dtype=np.float32)
