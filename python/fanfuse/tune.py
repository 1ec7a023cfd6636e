"""Choosing RRF's k and per-run weights by k-fold cross-validation over queries.

For every configuration of the grid the runs are fused (in Rust) and scored per query (in Rust).
The queries are shuffled with a fixed seed and split into folds; for each fold the configuration with
the best mean on the other folds is scored on the held-out fold. The same is done for "pick the best
single run", so the reported gain is held-out against held-out, never against a number seen in training.
"""

from __future__ import annotations

import itertools
import math
import numbers
import random
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from fanfuse._core import FusionError, Qrels, Run, evaluate, fuse_runs, randomization_test

DEFAULT_KS = (1.0, 5.0, 10.0, 20.0, 40.0, 60.0, 100.0)
DEFAULT_WEIGHTS = (0.0, 0.25, 0.5, 1.0, 2.0)


@dataclass(frozen=True)
class Config:
    """One candidate: a single run (``single`` is its index) or a weighted RRF of all runs."""

    k: float
    weights: tuple[float, ...]
    single: int | None = None

    def describe(self, names: Sequence[str]) -> str:
        if self.single is not None:
            return f"single run {names[self.single]}"
        return f"rrf k={self.k:g} weights={','.join(f'{w:g}' for w in self.weights)}"


@dataclass
class FoldResult:
    fold: int
    fused: Config
    single: Config
    fused_heldout: float
    single_heldout: float


@dataclass
class TuneReport:
    metric: str
    folds: list[FoldResult]
    queries: int
    fused_heldout: float  # mean over all queries of the held-out values (each query is held out once)
    single_heldout: float
    p_value: float  # paired randomization test of the two held-out per-query series


def weight_grid(n_runs: int, levels: Sequence[float]) -> list[tuple[float, ...]]:
    """Every weight vector over ``levels`` with at least two non-zero runs, without scaled duplicates
    (RRF ranks are unchanged when all weights are multiplied by the same factor)."""
    seen: set[tuple[float, ...]] = set()
    grid = []
    for weights in itertools.product(levels, repeat=n_runs):
        nonzero = [w for w in weights if w > 0]
        if len(nonzero) < 2:
            continue
        top = max(nonzero)
        key = tuple(round(w / top, 9) for w in weights)
        if key not in seen:
            seen.add(key)
            grid.append(tuple(weights))
    return grid


def _check_int(value: object, name: str, low: int, high: int | None = None) -> int:
    """An int (NumPy integers too; not a bool) in [low, high]."""
    accepted = f"an int >= {low}" if high is None else f"an int from {low} to {high}"
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be {accepted} (got {type(value).__name__})")
    number = int(value)
    if number < low or (high is not None and number > high):
        raise FusionError(f"{name} must be {accepted} (got {number})")
    return number


def _check_numbers(values: Iterable[float], name: str, *, positive: bool) -> list[float]:
    """A non-empty list (or array) of finite numbers, each > 0 (``positive``) or >= 0."""
    accepted = "a finite number > 0" if positive else "a finite number >= 0"
    if isinstance(values, (str, bytes)) or not isinstance(values, Iterable):
        raise TypeError(f"{name} must be a list of numbers, each {accepted} (got {type(values).__name__})")
    checked = list(values)
    if not checked:
        raise FusionError(f"{name} is empty: give at least one value, each {accepted}")
    for i, value in enumerate(checked):
        if isinstance(value, bool) or not isinstance(value, numbers.Real):
            raise TypeError(f"{name}[{i}] must be a number (got {type(value).__name__})")
        if not (math.isfinite(value) and (value > 0 if positive else value >= 0)):
            raise FusionError(f"{name}[{i}] must be {accepted} (got {value})")
    return [float(v) for v in checked]


def tune(
    runs: Sequence[Run],
    qrels: Qrels,
    *,
    metric: str = "ndcg@10",
    ks: Iterable[float] = DEFAULT_KS,
    weight_levels: Iterable[float] = DEFAULT_WEIGHTS,
    folds: int = 5,
    seed: int = 0,
    top_k: int | None = 1000,
    on_step: Callable[[int, int], None] | None = None,
) -> TuneReport:
    """Cross-validated search over ``ks`` x ``weight_grid``; see the module docstring."""
    if len(runs) < 2:
        raise FusionError("tune needs at least two runs to fuse")
    folds = _check_int(folds, "folds", 2)
    seed = _check_int(seed, "seed", 0, 2**64 - 1)
    ks = _check_numbers(ks, "ks", positive=True)
    weight_levels = _check_numbers(weight_levels, "weight_levels", positive=False)
    if not any(w > 0 for w in weight_levels):
        raise FusionError(
            f"weight_levels has no level > 0 (got {weight_levels}); fusion needs two weighted runs"
        )
    configs = [Config(k, w) for k in ks for w in weight_grid(len(runs), weight_levels)]
    configs += [Config(0.0, (), single=i) for i in range(len(runs))]
    judged = set(qrels.qids())
    queries = sorted({q for run in runs for q in run.qids() if q in judged})
    if len(queries) < folds:
        raise FusionError(f"{len(queries)} judged queries cannot be split into {folds} folds")
    # A query a run lacks scores 0 for that run (the run retrieved nothing for it).
    table: list[dict[str, float]] = []
    for step, config in enumerate(configs):
        if config.single is not None:
            run = runs[config.single]
        else:
            run = fuse_runs(list(runs), k=config.k, weights=list(config.weights), top_k=top_k)
        qids, values = evaluate(run, qrels, metrics=[metric])
        table.append(dict(zip(qids, values[metric], strict=False)))
        if on_step:
            on_step(step + 1, len(configs))
    shuffled = list(queries)
    random.Random(seed).shuffle(shuffled)
    fold_of = {q: i % folds for i, q in enumerate(shuffled)}

    def mean(c: int, qs: Sequence[str]) -> float:
        return sum(table[c].get(q, 0.0) for q in qs) / len(qs)

    fused_ids = [i for i, c in enumerate(configs) if c.single is None]
    single_ids = [i for i, c in enumerate(configs) if c.single is not None]
    results, fused_series, single_series = [], [], []
    for fold in range(folds):
        train = [q for q in queries if fold_of[q] != fold]
        test = [q for q in queries if fold_of[q] == fold]
        # max() keeps the first of equal means: grid order breaks ties, deterministically.
        best_fused = max(fused_ids, key=lambda c: mean(c, train))
        best_single = max(single_ids, key=lambda c: mean(c, train))
        fused_series += [table[best_fused].get(q, 0.0) for q in test]
        single_series += [table[best_single].get(q, 0.0) for q in test]
        results.append(
            FoldResult(
                fold,
                configs[best_fused],
                configs[best_single],
                mean(best_fused, test),
                mean(best_single, test),
            )
        )
    return TuneReport(
        metric=metric,
        folds=results,
        queries=len(queries),
        fused_heldout=sum(fused_series) / len(fused_series),
        single_heldout=sum(single_series) / len(single_series),
        p_value=randomization_test(fused_series, single_series, seed=seed),
    )
