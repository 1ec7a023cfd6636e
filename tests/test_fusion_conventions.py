"""Golden tests: other systems' RRF, written as each documents it, reproduced with fanfuse parameters.

Each `system_*` function below is the system's formula as its documentation or source states it
(0-based or 1-based rank, its constant, how weights act); the test shows which fanfuse call gives
exactly the same scores. The table in docs/fusion-methods.md is this file in prose.
"""

from __future__ import annotations

from collections.abc import Callable

import fanfuse
import pytest

LISTS = [["a", "b", "c", "d"], ["c", "a", "e"], ["e", "f", "a", "b", "g"]]
WEIGHTS = [1.0, 0.5, 2.0]
Term = Callable[[int, float], float]  # (0-based position, weight) -> the list's term


def fuse_by_formula(lists: list[list[str]], term: Term, weights: list[float]) -> dict[str, float]:
    scores: dict[str, float] = {}
    for lst, w in zip(lists, weights, strict=True):
        for position, doc in enumerate(lst):
            scores[doc] = scores.get(doc, 0.0) + term(position, w)
    return scores


# 1-based rank r = position + 1, constant 60, weight multiplies the term.
def elasticsearch(position: int, w: float) -> float:  # also OpenSearch, Milvus, ranx, pyserini
    return w * (1.0 / (60 + (position + 1)))


def langchain(position: int, w: float) -> float:  # EnsembleRetriever: weight / (rank + c), rank from 1
    return w / ((position + 1) + 60)


def llamaindex(position: int, w: float) -> float:  # also Weaviate, RAG-Fusion: 0-based rank + 60
    return w / (position + 60)


def qdrant_default(position: int, w: float) -> float:  # Qdrant, k = 2: 1 / (position + k)
    return 1.0 / (position + 2)


def llmemory(position: int, w: float) -> float:  # 0-based rank + 50 + 1
    return 1.0 / (50 + position + 1)


@pytest.mark.parametrize(
    ("term", "k", "weighted"),
    [
        (elasticsearch, 60.0, True),
        (langchain, 60.0, True),
        (llamaindex, 59.0, True),
        (qdrant_default, 1.0, False),
        (llmemory, 50.0, False),
    ],
)
def test_other_systems_rrf_with_fanfuse_parameters(term: Term, k: float, weighted: bool) -> None:
    weights = WEIGHTS if weighted else [1.0] * len(LISTS)
    expected = fuse_by_formula(LISTS, term, weights)
    fused = fanfuse.rrf(LISTS, k=k, weights=weights if weighted else None)
    assert dict(fused) == pytest.approx(expected, rel=1e-15)
    assert fanfuse.fuse(LISTS, k=k, weights=weights if weighted else None, explain=True) == fused


def qdrant_weighted(position: int, w: float) -> float:
    # Qdrant >= 1.15 weighted RRF stretches the rank instead of multiplying the term:
    # 1 / ((position + 1) / w + k - 1) with k = 2, i.e. w / (r + w * 1) for 1-based r.
    return 1.0 / ((position + 1) / w + 2 - 1)


def test_qdrant_weighted_rrf_is_combsum_of_its_own_terms() -> None:
    # No single k reproduces it (its constant becomes w * k per list), so pass Qdrant's terms as
    # scores and add them: combsum without normalisation is exactly Qdrant's sum.
    expected = fuse_by_formula(LISTS, qdrant_weighted, WEIGHTS)
    runs = [
        [(doc, qdrant_weighted(p, w)) for p, doc in enumerate(lst)]
        for lst, w in zip(LISTS, WEIGHTS, strict=True)
    ]
    fused = fanfuse.fuse(runs, method="combsum", norm="none")
    assert dict(fused) == pytest.approx(expected, rel=1e-15)
    # ... and it is not the multiplying weighted RRF: the orders differ on these lists.
    assert fused.ids != fanfuse.rrf(LISTS, k=1.0, weights=WEIGHTS).ids
