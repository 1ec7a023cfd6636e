"""The executable specification of fanfuse's Reciprocal Rank Fusion, in plain Python.

This is the contract of ``docs/contract.md`` written as code: short, obvious and slow. The Rust core must
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
TIE_BREAKS = ("rank", "id")


def _check_options(
    n_lists: int, k: float, weights: Sequence[float] | None, top_k: int | None, tie_break: str
) -> list[float]:
    from fanfuse._core import FusionError  # the same exception family as the core

    if tie_break not in TIE_BREAKS:
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
            "give one weight per list, or none (each list then weighs 1)"
        )
    for i, w in enumerate(weights):
        if not (math.isfinite(w) and w >= 0):
            raise FusionError(f"weights[{i}] must be a finite number >= 0 (got {w})")
    _check_weight_total(weights)
    return weights


def _check_weight_total(weights: Sequence[float]) -> None:
    """A finite total bounds every RRF score (each term ``w / (k + rank)`` is at most ``w``)."""
    from fanfuse._core import FusionError

    total = _in_order_sum(weights)
    if not math.isfinite(total):
        raise FusionError(
            f"weights sum to {total}, beyond the largest float; only their ratios matter, so scale them down"
        )


def _check_finite(score: dict[Id, float], method: str) -> None:
    """Finite inputs can still sum (or normalise) beyond the largest float: refuse, never rank inf/NaN."""
    from fanfuse._core import FusionError

    for doc, value in score.items():
        if not math.isfinite(value):
            raise FusionError(f"the fused score of id {doc!r} is {value} under method {method!r}")


def _check_normalised(values: dict[Id, float], norm: str) -> None:
    """A normalisation whose range overflows leaves NaN, which max, min and median would hide: refuse."""
    from fanfuse._core import FusionError

    for doc, value in values.items():
        if math.isnan(value):
            raise FusionError(f"the normalised score of id {doc!r} is NaN under norm {norm!r}")


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
    _check_finite(score, "rrf")

    def order(doc: Id) -> tuple[float, Any]:
        tie = best[doc] if tie_break == "rank" else doc
        return (-score[doc], tie)

    fused = sorted(score, key=order)
    if top_k is not None:
        fused = fused[:top_k]
    return fused, [score[doc] for doc in fused]


# ---------------------------------------------------------------------------------------------
# fanfuse.fuse: every fusion method (the spec of rust/fusion/). The pipeline, as in the core:
# 1. per list, merge repeats by the duplicate policy (an id keeps its first rank);
# 2. give each (list, doc) a value: a rank term for rank methods, else the score, normalised per list;
# 3. turn values into per-list contributions; a doc's score is their sum in list order.
# Definitions are ranx's (ranx/fusion, ranx/normalization); dbsf is Qdrant's, relative_score Weaviate's.

# The names the spec accepts; tests/test_name_lists.py checks them against the core's tables.
RANK_METHODS = ("rrf", "isr", "log_isr", "logn_isr", "rbc", "bordafuse", "condorcet")
SCORE_METHODS = (
    *("combsum", "combmnz", "combmax", "combmin", "combmed", "combanz", "combgmnz", "mixed"),
    *("dbsf", "relative_score"),
)
ALIASES = {"wsum": "combsum", "wmnz": "combmnz", "w_bordafuse": "bordafuse", "w_condorcet": "condorcet"}
NORMS = ("none", "min-max", "min-max-inverted", "max", "sum", "zmuv", "rank", "borda")
DUPLICATE_POLICIES = ("first", "max", "sum")
FLOOR = 1e-9  # ranx's floor on normalisation denominators


def _in_order_sum(values: Iterable[float]) -> float:
    total = 0.0
    for v in values:  # plain left-to-right addition, as the core (builtin sum may compensate)
        total += v
    return total


def _split_run(run: Any) -> tuple[list[Id], list[float] | None]:
    """A run is ids, (id, score) pairs, or an (ids, scores) tuple."""
    if isinstance(run, tuple) and len(run) == 2 and not isinstance(run[0], (str, int, tuple)):
        return list(run[0]), [float(s) for s in run[1]]
    run = list(run)
    if run and isinstance(run[0], tuple):
        return [doc for doc, _ in run], [float(s) for _, s in run]
    return run, None


def _normalise(norm: str, values: list[float], ranks: list[int], length: int) -> list[float]:
    if not values or norm == "none":
        return values
    lo, hi, n = min(values), max(values), len(values)
    total = _in_order_sum(values)
    mean = total / n
    squares = _in_order_sum((v - mean) * (v - mean) for v in values)
    if norm == "min-max":
        return [(v - lo) / max(hi - lo, FLOOR) for v in values]
    if norm == "min-max-inverted":
        return [(hi - v) / max(hi - lo, FLOOR) for v in values]
    if norm == "max":
        return [v / max(hi, FLOOR) for v in values]
    if norm == "sum":
        return [(v - lo) / max(total - lo * n, FLOOR) for v in values]
    if norm == "zmuv":
        return [(v - mean) / max(math.sqrt(squares / n), FLOOR) for v in values]
    if norm == "rank":
        return [1.0 - (r - 1) / length for r in ranks]
    if norm == "dbsf":  # Qdrant: mean -/+ 3 sample standard deviations; 0.5 when degenerate
        std = math.sqrt(squares / (n - 1)) if n > 1 else 0.0
        low, high = mean - 3.0 * std, mean + 3.0 * std
        return [0.5 if high == low else (v - low) / (high - low) for v in values]
    if norm == "relative":  # Weaviate: min-max, 1 when all scores are equal
        return [1.0 if hi == lo else (v - lo) / (hi - lo) for v in values]
    raise ValueError(norm)


def _contribution(method: str, v: float, w: float, n: int, w_sum: float, sigma: float, gamma: float) -> float:
    """One list's term: value ``v`` of a doc found in ``n`` lists of total weight ``w_sum``.

    Each written exactly as the core writes it, so the floats agree to the bit.
    """
    if method == "rrf":
        return v  # the weight is already in the rank value
    if method == "isr":
        return v * n
    if method == "log_isr":
        return v * math.log(n)
    if method == "logn_isr":
        return v * math.log(n + sigma)
    if method == "combmnz":
        return v * w_sum
    if method == "combanz":
        return v / n
    if method == "combgmnz":
        try:
            power = math.pow(n, gamma)
        except OverflowError:  # the core's powf gives inf; the sum check then refuses the score
            power = math.inf
        return v * power
    if method == "mixed":
        return w * v * math.sqrt(n)
    return w * v  # combsum, rbc, bordafuse, dbsf, relative_score


def fuse(
    runs: Iterable[Any],
    /,
    *,
    method: str = "rrf",
    norm: str | None = None,
    k: float = 60.0,
    weights: Sequence[float] | None = None,
    top_k: int | None = None,
    tie_break: str = "rank",
    duplicates: str = "first",
    content_keys: Sequence[Sequence[Id]] | None = None,
    phi: float = 0.8,
    sigma: float = 0.01,
    gamma: float = 1.0,
) -> tuple[list[Id], list[float]]:
    """Any fusion method over ranked (optionally scored) runs; returns ``(ids, scores)`` best first."""
    from fanfuse._core import FusionError

    method = ALIASES.get(method, method)
    if method not in RANK_METHODS + SCORE_METHODS or (norm is not None and norm not in NORMS):
        raise FusionError(f"unknown method {method!r} or norm {norm!r}")
    if duplicates not in DUPLICATE_POLICIES:
        raise FusionError(f"unknown duplicates policy {duplicates!r}")
    split = [_split_run(run) for run in runs]
    weight_of = list(weights) if weights is not None else [1.0] * len(split)
    _check_weight_total(weight_of)
    if method not in RANK_METHODS and norm is None:
        norm = {"dbsf": "dbsf", "relative_score": "relative"}.get(method, "min-max")

    # 1. Merge repeats; content keys map every id to the first id read with the same key.
    canonical: dict[Id, Id] = {}
    lists: list[dict[Id, list[Any]]] = []  # per list: doc -> [rank, score, value, original id]
    for i, (ids, scores) in enumerate(split):
        merged: dict[Id, list[Any]] = {}
        if weight_of[i] != 0.0:
            for pos, original in enumerate(ids):
                key = content_keys[i][pos] if content_keys is not None else original
                doc = canonical.setdefault(key, original)
                raw = scores[pos] if scores is not None else math.nan
                rank = pos + 1
                value = raw
                if method == "rrf":
                    value = weight_of[i] / (k + rank)
                elif method in ("isr", "log_isr", "logn_isr"):
                    value = 1.0 / (rank * rank)
                elif method == "rbc":
                    value = (1.0 - phi) * phi ** (rank - 1)
                if doc not in merged:
                    merged[doc] = [rank, raw, value, original]
                elif duplicates == "max":
                    merged[doc][1] = max(merged[doc][1], raw)
                    merged[doc][2] = max(merged[doc][2], value)
                elif duplicates == "sum":
                    merged[doc][1] += raw
                    merged[doc][2] += value
        lists.append(merged)

    # Best occurrence (rank, list) of each doc: the tie-break key and the id reported for it.
    best: dict[Id, tuple[int, int, Id]] = {}
    for i, merged in enumerate(lists):
        for doc, (rank, _, _, original) in merged.items():
            if doc not in best or rank < best[doc][0]:
                best[doc] = (rank, i, original)
    candidates = list(best)  # first-seen order, list by list
    n_cands = len(candidates)

    # 2. Values: normalised scores, or Borda points for every candidate in every list.
    values: list[dict[Id, float]] = []
    for i, merged in enumerate(lists):
        docs = list(merged)
        if method == "bordafuse" or norm == "borda":
            if weight_of[i] == 0.0 or n_cands == 0:  # nothing to award points to
                values.append({})
                continue
            present = len(docs)
            if method == "bordafuse":
                ranked = {d: n_cands - (merged[d][0] - 1) for d in docs}
                missing = 0.5 * (n_cands - present + 1.0)
            else:
                ranked = {d: 1.0 - (merged[d][0] - 1) / n_cands for d in docs}
                missing = 0.5 - (present - 1.0) / (2.0 * n_cands)
            everyone = docs + [c for c in candidates if c not in merged]
            values.append({d: ranked.get(d, missing) for d in everyone})
        elif method in RANK_METHODS:
            values.append({d: merged[d][2] for d in docs})
        else:
            ranks = [merged[d][0] for d in docs]
            normed = _normalise(norm or "min-max", [merged[d][2] for d in docs], ranks, len(split[i][0]))
            _check_normalised(dict(zip(docs, normed, strict=True)), norm or "min-max")
            values.append(dict(zip(docs, normed, strict=True)))

    # 3. Contributions, summed in list order.
    count = {d: sum(d in v for v in values) for d in candidates}
    weight_sum = {d: _in_order_sum(weight_of[i] for i, v in enumerate(values) if d in v) for d in candidates}
    score: dict[Id, float] = {}
    for d in candidates:
        held = [(i, v[d]) for i, v in enumerate(values) if d in v]
        n = count[d]
        if method in ("combmax", "combmin"):
            pick = max if method == "combmax" else min
            score[d] = pick(value for _, value in held)
        elif method == "combmed":
            ordered = sorted(value for _, value in held)
            mid = len(ordered) // 2
            score[d] = ordered[mid] if n % 2 else ordered[mid - 1] / 2 + ordered[mid] / 2
        else:
            terms = (_contribution(method, v, weight_of[i], n, weight_sum[d], sigma, gamma) for i, v in held)
            score[d] = _in_order_sum(terms)

    if method == "condorcet":  # Copeland count: weighted pairwise wins minus losses
        rank_in = [{d: lst[d][0] for d in lst} for lst in lists]
        absent = math.inf
        for d in candidates:
            score[d] = 0.0
        for a_at, a in enumerate(candidates):
            for b in candidates[a_at + 1 :]:
                for_a = for_b = 0.0
                for i, rank_of in enumerate(rank_in):
                    ra, rb = rank_of.get(a, absent), rank_of.get(b, absent)
                    for_a += weight_of[i] if ra < rb else 0.0
                    for_b += weight_of[i] if rb < ra else 0.0
                if for_a != for_b:
                    winner, loser = (a, b) if for_a > for_b else (b, a)
                    score[winner] += 1.0
                    score[loser] -= 1.0
    _check_finite(score, method)

    def order(doc: Id) -> tuple[float, Any]:
        return (-score[doc], best[doc][:2] if tie_break == "rank" else doc)

    fused = sorted(candidates, key=order)
    if method == "condorcet":  # the score is the position: N for the first, N - 1 next, ...
        score = {doc: float(n_cands - at) for at, doc in enumerate(fused)}
    if top_k is not None:
        fused = fused[:top_k]
    return [best[doc][2] for doc in fused], [score[doc] for doc in fused]
