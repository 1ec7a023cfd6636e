"""Choosing a fusion method's parameters by k-fold cross-validation over queries.

The judged queries are shuffled with a fixed seed and split into folds; for each fold the
configuration with the best mean on the other folds (found by the full grid or by coordinate
ascent, `tune.search`) is scored on the held-out fold. The same is done for "pick the best single
run", so the reported gain is held-out against held-out, never against a number seen in training.
Fusion and metrics run in the core; `tune.scores` computes each configuration once. A method with
nothing to search is still cross-validated (trained methods are trained per fold) as its one
configuration against the best single run.
"""

from __future__ import annotations

import functools
import math
import random
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from fanfuse import _renamed
from fanfuse._core import RUN_FILE_TOP_K, FusionError, Qrels, Run, randomization_test
from fanfuse.choices import AnyMethod
from fanfuse.errors import TooFewQueries
from fanfuse.limits import check_int, optional_int
from fanfuse.tune.scores import FoldScores, check_every_fold_trains, checked_runs
from fanfuse.tune.search import Search, chosen_search, coordinate_search, grid_search
from fanfuse.tune.space import DEFAULT_KS, DEFAULT_WEIGHTS, check_numbers, search_space, shown_level

__all__ = ["DEFAULT_KS", "DEFAULT_WEIGHTS", "Config", "FoldResult", "Search", "TuneReport", "tune"]

if not TYPE_CHECKING:  # at run time only: a type checker still refuses any name the module lacks
    __getattr__ = _renamed.module_getattr(__name__)  # an old name is refused naming its new spelling


@dataclass(frozen=True)
class Config:
    """A fusion configuration: the method and its parameters (the core's keyword names)."""

    method: AnyMethod
    params: dict[str, Any]

    def describe(self) -> str:
        """The method and its parameters, each value exactly (``rrf k=60 weights=1,0.5``)."""
        shown = [
            f"{name}={','.join(map(shown_level, value)) if name == 'weights' else shown_level(value)}"
            for name, value in self.params.items()
        ]
        return " ".join([self.method, *shown])


@dataclass
class FoldResult:
    fold: int
    fused: Config
    single_run: int  # index of the run chosen as the best single run on the training folds
    fused_heldout: float
    single_heldout: float


@dataclass
class TuneReport:
    method: AnyMethod
    metric: str
    search: Search  # "grid" or "coordinate" ("grid" with one configuration when nothing is searched)
    levels: dict[str, list[Any]]  # the levels searched per parameter
    fusions: int  # configurations fused and evaluated (per fold model for trained methods)
    folds: list[FoldResult]
    queries: int
    fused_heldout: float  # mean over all queries of the held-out values (each query is held out once)
    single_heldout: float
    p_value: float  # paired randomization test of the two held-out per-query series


def tune(
    runs: Sequence[Run],
    qrels: Qrels,
    *,
    method: AnyMethod = "rrf",
    metric: str = "ndcg@10",
    ks: Iterable[float] | None = None,
    weight_levels: Iterable[float] | None = None,
    phis: Iterable[float] | None = None,
    sigmas: Iterable[float] | None = None,
    gammas: Iterable[float] | None = None,
    norms: Iterable[str] | None = None,
    segment_counts: Iterable[int] | None = None,
    windows: Iterable[int] | None = None,
    search: Search = "auto",
    folds: int = 5,
    seed: int = 0,
    top_k: int | None = RUN_FILE_TOP_K,
    on_step: Callable[[int, int | None], None] | None = None,
) -> TuneReport:
    """Cross-validated search of `method`'s parameters; see the module docstring and `tune.space`.

    A level list left None searches the method's default levels of that parameter (norm: not
    searched); one given for a parameter the method lacks is an error. `search`: "grid",
    "coordinate" or "auto" (the grid up to `tune.search.GRID_LIMIT` configurations)."""
    runs = checked_runs(runs)
    if len(runs) < 2:
        raise FusionError("tune needs at least two runs to fuse")
    folds = check_int("folds", folds)
    seed = check_int("seed", seed)
    top_k = optional_int("fused_top_k", top_k)
    given = {
        "ks": ks,
        "weight_levels": weight_levels,
        "phis": phis,
        "sigmas": sigmas,
        "gammas": gammas,
        "norms": norms,
        "segment_counts": segment_counts,
        "windows": windows,
    }
    # Checked whatever the method, so that a bad list fails as clearly for rrf as for the rest.
    for keyword, key in (("ks", "k"), ("weight_levels", "weight")):
        if given[keyword] is not None:
            given[keyword] = check_numbers(given[keyword], keyword, key)  # type: ignore[arg-type]
    judged = set(qrels.qids())
    for run in runs:
        if not any(q in judged for q in run.qids()):
            raise TooFewQueries(
                f"{run.name}: none of its queries is in the qrels, so nothing tunes its part; check that "
                "the runs and the qrels use the same query ids (and that this is the right qrels file)"
            )
    queries = sorted({q for run in runs for q in run.qids() if q in judged})
    if len(queries) < folds:
        raise TooFewQueries(f"folds must be at most the judged queries, {len(queries)} (got {folds})")
    space = search_space(method, len(runs), given)
    how = chosen_search(search, space)
    shuffled = list(queries)
    random.Random(seed).shuffle(shuffled)
    fold_of = {q: i % folds for i, q in enumerate(shuffled)}
    if space.trained:
        check_every_fold_trains(runs, fold_of)
    estimate = space.grid_size() if how == "grid" else None
    scores = FoldScores(
        runs,
        qrels,
        method=method,
        metric=metric,
        trained=space.trained,
        queries=queries,
        fold_of=fold_of,
        folds=folds,
        top_k=top_k,
        on_fusion=(lambda: on_step(scores.fusions, estimate)) if on_step else None,
    )
    singles = [scores.run_values(run) for run in runs]
    single_sums = [[0.0] * folds for _ in runs]
    for r, values in enumerate(singles):
        for q, value in zip(queries, values, strict=True):
            single_sums[r][fold_of[q]] += value
    configurations = space.configurations() if how == "grid" else None
    results, fused_series, single_series = [], [], []
    for fold in range(folds):
        if configurations is not None and len(configurations) == 1:
            best = configurations[0]  # nothing to choose: no training-fold scoring
        else:
            search_of = grid_search if how == "grid" else coordinate_search
            best = search_of(space, functools.partial(scores.training_mean, fold=fold))
        best_single = max(range(len(runs)), key=lambda r: sum(single_sums[r]) - single_sums[r][fold])
        test = scores.fold_queries[fold]
        fused = scores.held_out(best, fold)
        single = [singles[best_single][scores.position[q]] for q in test]
        fused_series += fused
        single_series += single
        results.append(
            FoldResult(
                fold,
                Config(method, best),
                best_single,
                math.fsum(fused) / len(test),
                math.fsum(single) / len(test),
            )
        )
    return TuneReport(
        method=method,
        metric=metric,
        search=how,
        levels=space.levels,
        fusions=scores.fusions,
        folds=results,
        queries=len(queries),
        fused_heldout=sum(fused_series) / len(fused_series),
        single_heldout=sum(single_series) / len(single_series),
        p_value=randomization_test(fused_series, single_series, seed=seed),
    )
