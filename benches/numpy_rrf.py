"""RRF in vectorised NumPy, to the same contract as fanfuse.reference (docs/contract.md): a baseline to
compare against, not part of the library. benches/test_numpy_rrf.py checks it equals the reference."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np


def rrf_numpy(
    lists: Sequence[Any],
    *,
    k: float = 60.0,
    weights: Sequence[float] | None = None,
    top_k: int | None = None,
    tie_break: str = "rank",
) -> tuple[list[Any], list[float]]:
    """Returns ``(ids, scores)`` best first, exactly as ``fanfuse.reference.rrf`` does."""
    w = np.ones(len(lists)) if weights is None else np.asarray(weights, dtype=np.float64)
    kept = [i for i, lst in enumerate(lists) if w[i] != 0.0 and len(lst) > 0]
    if not kept:
        return [], []
    ids = np.concatenate([np.asarray(lists[i]) for i in kept])
    list_of = np.concatenate([np.full(len(lists[i]), i) for i in kept])
    rank = np.concatenate([np.arange(1, len(lists[i]) + 1) for i in kept])
    unique_ids, code = np.unique(ids, return_inverse=True)  # codes ascend with the ids
    # A repeat inside a list counts once, at its first position: keep the first (list, id) occurrence,
    # in input order (list by list), so that np.add.at sums the terms in the contract's order.
    _, first = np.unique(list_of * len(unique_ids) + code, return_index=True)
    first.sort()
    code, list_of, rank = code[first], list_of[first], rank[first]
    scores = np.zeros(len(unique_ids))
    np.add.at(scores, code, w[list_of] / (k + rank))
    if tie_break == "rank":
        # Each id's best (rank, list): the first entry per code when sorted by code, rank, list.
        by_best = np.lexsort((list_of, rank, code))
        is_first = np.r_[True, code[by_best][1:] != code[by_best][:-1]]
        best = by_best[is_first]  # one entry per code, in code order
        order = np.lexsort((list_of[best], rank[best], -scores))
    else:
        order = np.lexsort((np.arange(len(unique_ids)), -scores))
    order = order[:top_k] if top_k is not None else order
    return unique_ids[order].tolist(), scores[order].tolist()
