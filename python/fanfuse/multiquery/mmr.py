"""Maximal marginal relevance over the dense vectors an index stores: the fused window reordered so
that each hit is chosen for its relevance less its likeness to the hits chosen before it.

``MaximalMarginalRelevance(vectors, mmr_lambda)`` is a reranker (``reranker(query, hits) -> scores``,
``rerank.py``): at each step it takes the hit with the largest

    mmr_lambda * relevance - (1 - mmr_lambda) * (its largest cosine to a hit already taken)

where relevance is the fused score scaled to [0, 1] over the window (the fusion already weighed every
list; the query is not embedded again) and the cosines are the documents' stored vectors (a hit
without one is like no other). ``mmr_lambda`` 1 keeps the fused order; lower trades relevance for
variety. Its scores are the positions it chose, counted down, so the reranked order is its choice.

A search asks for it by name, ``rerank="mmr"`` (``RERANKS``): ``fanfuse.open_index(..., rerank="mmr")``,
``fanfuse search --rerank mmr``, the service's ``rerank`` field; each takes ``mmr_lambda``.
"""

from __future__ import annotations

import weakref
from collections.abc import Mapping, Sequence
from typing import Any, Literal, get_args

import numpy as np

from fanfuse.errors import InvalidSetting
from fanfuse.limits import check_choice, check_float
from fanfuse.multiquery.diagnostics import FusedHit
from fanfuse.retrievers.dense import DenseRetriever

__all__ = ["DEFAULT_MMR_LAMBDA", "RERANKS", "MaximalMarginalRelevance", "RerankName", "named_reranker"]

#: The rerankers a search may ask for by name.
RerankName = Literal["mmr"]
RERANKS: tuple[RerankName, ...] = get_args(RerankName)
# Relevance's weight: at 0.9 only a near-copy of a hit already taken gives up its place, the one
# setting that lost nothing measurable on MT-RAG (docs/mtrag-retrieval.md, "Diversity").
DEFAULT_MMR_LAMBDA = 0.9


class MaximalMarginalRelevance:
    """The fused hits in maximal-marginal-relevance order (see the module)."""

    def __init__(self, vectors: DenseRetriever, mmr_lambda: float = DEFAULT_MMR_LAMBDA) -> None:
        if not isinstance(vectors, DenseRetriever):
            raise TypeError(f"vectors must be a DenseRetriever (got {type(vectors).__name__})")
        self.vectors = vectors
        self.mmr_lambda = check_float("mmr_lambda", mmr_lambda)

    def __call__(self, query: str, hits: Sequence[FusedHit]) -> list[float]:
        rows = _rows_by_id(self.vectors)
        matrix = self.vectors.vectors
        found = np.zeros((len(hits), matrix.shape[1]), dtype=np.float32)
        for i, hit in enumerate(hits):
            row = rows.get(hit.id)
            if row is not None:
                found[i] = matrix[row]
        likeness = found @ found.T
        scores = np.array([hit.score for hit in hits], dtype=np.float64)
        spread = scores.max() - scores.min()
        relevance = (scores - scores.min()) / spread if spread > 0 else np.ones(len(hits))
        closest = np.zeros(len(hits))  # each hit's largest cosine to a hit taken
        taken = np.zeros(len(hits), dtype=bool)
        out = [0.0] * len(hits)
        for position in range(len(hits)):
            value = self.mmr_lambda * relevance - (1.0 - self.mmr_lambda) * closest
            value[taken] = -np.inf
            best = int(np.argmax(value))  # the first of equals: the fused order breaks ties
            taken[best] = True
            closest = np.maximum(closest, likeness[best])
            out[best] = float(len(hits) - position)
        return out

    def __repr__(self) -> str:
        return f"MaximalMarginalRelevance(mmr_lambda={self.mmr_lambda:g})"


# Each retriever's id -> row, made once: a service builds a reranker per request.
_ROWS: weakref.WeakKeyDictionary[DenseRetriever, dict[str, int]] = weakref.WeakKeyDictionary()


def _rows_by_id(vectors: DenseRetriever) -> dict[str, int]:
    rows = _ROWS.get(vectors)
    if rows is None:
        rows = _ROWS[vectors] = {doc_id: row for row, doc_id in enumerate(vectors.ids)}
    return rows


def named_reranker(
    name: str | None, retrievers: Mapping[str, Any], mmr_lambda: float | None = None
) -> MaximalMarginalRelevance | None:
    """The reranker `name` (one of ``RERANKS``, or None: none) over `retrievers` (a search's, by
    name: the dense one's vectors); each error begins with the argument it is about."""
    if name is None:
        if mmr_lambda is not None:
            raise InvalidSetting("mmr_lambda is a setting of the mmr reranker: give it with rerank mmr")
        return None
    check_choice("rerank", name, RERANKS)
    vectors = getattr(retrievers.get("dense"), "retriever", retrievers.get("dense"))
    if not isinstance(vectors, DenseRetriever):
        raise InvalidSetting(
            "rerank mmr reads the document vectors of the dense retriever, and this search has none: "
            "build the index with `fanfuse index --dense` (or search with the dense half on)"
        )
    return MaximalMarginalRelevance(vectors, DEFAULT_MMR_LAMBDA if mmr_lambda is None else mmr_lambda)
