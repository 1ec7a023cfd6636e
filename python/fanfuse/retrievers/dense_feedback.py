"""`DenseFeedback`: vector pseudo-relevance feedback (Rocchio) over a dense retriever, no model.

The query vector is moved toward its first search's top documents, and the documents are ranked by
the moved vector:

    q' = q + feedback_weight * mean(d_1 .. d_m),   m = feedback_docs (5), feedback_weight 0.5

Found documents pull in their neighbours: passages about the same thing worded unlike the question.
It is computed from one search of the dense retriever itself (same filter, same query embedding):
its top `max(100, 5 k)` candidates are ranked again by their cosine with q', which is q.d (the first
search's score) + feedback_weight * (centroid . d), over |q'|. A document outside those candidates
is not found, however close to q' it is: with the default settings the top 20 so ranked equal those
of moving the query over the whole corpus on every MT-RAG clapnq question; a larger weight moves the
query further than the candidates reach.

`fanfuse.open_index` adds it to a hybrid index's retrievers as `dense-feedback`, its lists weighing a
quarter of the others'; the settings were chosen on MT-RAG clapnq and tested on cloud.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

from fanfuse.limits import check_float, check_int, derived_int
from fanfuse.retrievers.base import Hit
from fanfuse.retrievers.dense import checked_query
from fanfuse.retrievers.filters import known_metadata_keys
from fanfuse.text import check_strs

__all__ = ["DenseFeedback", "VectorIndex"]

DEFAULT_FEEDBACK_DOCS = 5
DEFAULT_FEEDBACK_WEIGHT = 0.5
# The first search's candidates ranked again: at least this many, and 5 per hit asked for.
MIN_CANDIDATES = 100
CANDIDATES_PER_HIT = 5


class VectorIndex(Protocol):
    """What feedback needs of a dense retriever (`DenseRetriever` has it): a search whose scores are
    the cosine of the query with each document, and the unit document vectors by id."""

    ids: list[str]

    @property
    def vectors(self) -> npt.NDArray[np.float32]: ...

    def search(self, query: str, k: int, filter: Mapping[str, Any] | None = None) -> Sequence[Hit]: ...


class DenseFeedback:
    """`dense` searched with the query vector moved toward its top documents (see the module)."""

    def __init__(
        self,
        dense: VectorIndex,
        *,
        feedback_docs: int = DEFAULT_FEEDBACK_DOCS,
        feedback_weight: float = DEFAULT_FEEDBACK_WEIGHT,
    ) -> None:
        if not callable(getattr(dense, "search", None)) or not hasattr(dense, "vectors"):
            raise TypeError(
                f"dense must have search(query, k, filter), vectors and ids, as DenseRetriever does "
                f"(got {type(dense).__name__})"
            )
        self.dense = dense
        self.feedback_docs = check_int("feedback_docs", feedback_docs)
        self.feedback_weight = check_float("feedback_weight", feedback_weight)
        self._rows: dict[str, int] | None = None

    @property
    def metadata_keys(self) -> frozenset[str] | None:
        """The dense retriever's (what a filter may name), where it says."""
        return known_metadata_keys(self.dense)

    def search(self, query: str, k: int, filter: Mapping[str, Any] | None = None) -> list[Hit]:
        return self.search_batch([checked_query(query)], k, filter)[0]

    def search_batch(
        self, queries: Sequence[str], k: int, filter: Mapping[str, Any] | None = None
    ) -> list[list[Hit]]:
        """`[search(q, k, filter) for q in queries]`, the first searches in one call where the dense
        retriever takes several queries at once (its queries embedded together)."""
        queries = check_strs(queries, "queries")
        k = check_int("retriever_k", k)
        candidates = derived_int("retriever_k", max(MIN_CANDIDATES, CANDIDATES_PER_HIT * k))
        batch = getattr(self.dense, "search_batch", None)
        if callable(batch):
            pools: Sequence[Sequence[Hit]] = batch(list(queries), candidates, filter)
        else:
            pools = [self.dense.search(query, candidates, filter) for query in queries]
        return [self._moved(list(pool), k) for pool in pools]

    def _moved(self, pool: list[Hit], k: int) -> list[Hit]:
        """The first search's candidates ranked by their cosine with the moved query vector."""
        if not pool:
            return []
        rows = self._row_of()
        vectors = self.dense.vectors[[rows[hit.id] for hit in pool]]
        first = np.array([hit.score for hit in pool], dtype=np.float64)
        top = min(self.feedback_docs, len(pool))
        centroid = vectors[:top].mean(axis=0, dtype=np.float64)
        beta = self.feedback_weight
        # |q'| from what is known: q is a unit vector and q.c is the mean of the top documents' scores.
        squared = 1.0 + 2.0 * beta * float(first[:top].mean()) + beta**2 * float(centroid @ centroid)
        norm = math.sqrt(max(squared, 0.0))
        scores = (first + beta * (vectors @ centroid)) / (norm or 1.0)
        # Equal scores keep the first search's order.
        order = np.lexsort((np.arange(len(pool)), -scores))[:k]
        return [Hit(pool[i].id, float(scores[i]), pool[i].payload) for i in order]

    def _row_of(self) -> dict[str, int]:
        if self._rows is None:  # built on the first search, once
            self._rows = {doc_id: row for row, doc_id in enumerate(self.dense.ids)}
        return self._rows

    def __repr__(self) -> str:
        return (
            f"DenseFeedback({self.dense!r}, feedback_docs={self.feedback_docs}, "
            f"feedback_weight={self.feedback_weight:g})"
        )
