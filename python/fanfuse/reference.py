"""The executable specification of fanfuse's Reciprocal Rank Fusion, in plain Python.

This is the contract of ``DESIGN.md`` written as code: short, obvious and slow. The Rust core must
return exactly what this returns (ids, and scores to the last bit, because the terms are summed in
the same order). Tests compare the two; read this file to know what ``fanfuse.rrf`` does.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Iterable, Sequence
from typing import Any

__all__ = ["rrf"]

Id = str | int


def _check_options(
    n_lists: int, k: float, weights: Sequence[float] | None, top_k: int | None, tie_break: str
) -> list[float]:
    from fanfuse import FusionError  # the same exception family as the core

    if tie_break not in ("rank", "id"):
        raise FusionError(f"tie_break must be 'rank' or 'id' (got {tie_break!r})")
    if not (math.isfinite(k) and k > 0):
        raise FusionError(f"k must be a finite number > 0 (got {k}); 60 is the usual value")
    if top_k is not None and top_k < 0:
        raise FusionError(f"top_k must be None or an int >= 0 (got {top_k})")
    if weights is None:
        return [1.0] * n_lists
    weights = [float(w) for w in weights]
    if len(weights) != n_lists:
        raise FusionError(
            f"weights has {len(weights)} entries but there are {n_lists} lists; "
            "pass one weight per list, or None"
        )
    for i, w in enumerate(weights):
        if not (math.isfinite(w) and w >= 0):
            raise FusionError(f"weights[{i}] must be a finite number >= 0 (got {w})")
    return weights


def _check_ids(lists: list[list[Any]]) -> None:
    kinds = set()
    for lst in lists:
        for item in lst:
            if isinstance(item, bool) or not isinstance(item, (str, numbers.Integral)):
                raise TypeError(f"ids must be str, or int (got {type(item).__name__})")
            kinds.add(str if isinstance(item, str) else int)
    if len(kinds) > 1:
        raise TypeError("all ids in one call must be str, or all int")


def rrf(
    lists: Iterable[Iterable[Id]],
    /,
    *,
    k: float = 60.0,
    weights: Sequence[float] | None = None,
    top_k: int | None = None,
    tie_break: str = "rank",
) -> tuple[list[Id], list[float]]:
    """Weighted RRF: ``score(d) = sum_i weights[i] / (k + rank_i(d))``.

    Returns ``(ids, scores)``, best first.
    """
    materialized = [[x if isinstance(x, str) else int(x) for x in lst] for lst in lists]
    _check_ids(materialized)
    weight_of = _check_options(len(materialized), k, weights, top_k, tie_break)

    score: dict[Id, float] = {}
    best: dict[Id, tuple[int, int]] = {}  # id -> (best rank, index of the list where it was first reached)
    for i, ranked in enumerate(materialized):
        if weight_of[i] == 0.0:
            continue  # a weight-0 list is ignored entirely
        seen: set[Id] = set()
        for position, doc in enumerate(ranked):
            if doc in seen:
                continue  # a repeat counts once, at its first position; later ranks are not renumbered
            seen.add(doc)
            rank = position + 1
            # Terms are added list by list, i = 0, 1, ..., so the float sum matches the core bit for bit.
            score[doc] = score.get(doc, 0.0) + weight_of[i] / (k + rank)
            if doc not in best or rank < best[doc][0]:
                best[doc] = (rank, i)

    def order(doc: Id) -> tuple[float, Any]:
        tie = best[doc] if tie_break == "rank" else doc
        return (-score[doc], tie)

    fused = sorted(score, key=order)
    if top_k is not None:
        fused = fused[:top_k]
    return fused, [score[doc] for doc in fused]
