"""Per-query scores of fusion configurations for `tune`, each computed once (fusion and metric in
the core), and the fold means read from them.

An untrained method's configuration is fused once over every query; its mean on a fold's training
queries chooses it, its values on the held-out fold report it. A trained method is fitted: the
model that reports fold f is trained on the other folds' qrels only, and the model whose values
choose its configuration for fold f on training query q (of fold g) is trained without folds f and
g, so that neither the choice nor the report ever reads a judgment of the query it scores.
"""

from __future__ import annotations

from array import array
from collections.abc import Callable, Sequence
from typing import Any, cast

from fanfuse._core import FUSION_OPTIONS, Qrels, Run, evaluate, fuse_runs, metric_depth, train_fusion
from fanfuse.choices import AnyMethod, TrainedMethod
from fanfuse.errors import OutOfRange, TooFewQueries
from fanfuse.report.data import sequence_of
from fanfuse.tune.search import Params, params_key


def checked_runs(value: object) -> list[Run]:
    """The runs a tuning fuses, a sequence of ``fanfuse.Run`` (``sequence_of``): a str, a set or a
    path among them is a TypeError naming it, not an AttributeError deep in the search."""
    return sequence_of(value, "runs", "runs (fanfuse.Run)", Run, "a fanfuse.Run")


class FoldScores:
    """Values of configurations on the judged queries, with their fold split."""

    def __init__(
        self,
        runs: Sequence[Run],
        qrels: Qrels,
        *,
        method: AnyMethod,
        metric: str,
        trained: bool,
        queries: Sequence[str],
        fold_of: dict[str, int],
        folds: int,
        top_k: int | None,
        on_fusion: Callable[[], None] | None = None,
    ) -> None:
        self.runs, self.qrels, self.method, self.metric = checked_runs(runs), qrels, method, metric
        self.queries = sequence_of(queries, "queries", "query ids (str)", str, "a str, a query id")
        self.trained, self.fold_of, self.folds = trained, fold_of, folds
        # A run fused deeper than its metric reads evaluates the same: fuse only as deep as it reads.
        depth = metric_depth(metric)
        self.top_k = top_k if depth is None or (top_k is not None and top_k <= depth) else depth
        self.on_fusion = on_fusion
        self.position = {q: i for i, q in enumerate(self.queries)}
        self.fold_queries = [[q for q in self.queries if fold_of[q] == f] for f in range(folds)]
        self._values: dict[Any, array[float]] = {}
        self._fold_sums: dict[Any, list[float]] = {}

    @property
    def fusions(self) -> int:
        """Fusions run so far (each a fusion of the runs and one evaluation)."""
        return len(self._values)

    def values(self, params: Params, held_out: frozenset[int] = frozenset()) -> array[float]:
        """Per-query values aligned with `queries` (0 where the fused run lacks the query). Trained:
        a model fitted without the folds of `held_out`, valid on those folds' queries only."""
        key = (params_key(params), held_out)
        found = self._values.get(key)
        if found is None:
            found = self._values[key] = self._compute(params, held_out)
            if self.on_fusion:
                self.on_fusion()
        return found

    def _compute(self, params: Params, held_out: frozenset[int]) -> array[float]:
        runs = self.runs
        if self.trained:
            scored = [q for f in sorted(held_out) for q in self.fold_queries[f]]
            training = [q for q in self.queries if self.fold_of[q] not in held_out]
            # Trained: tune took the method from TRAINED_METHODS.
            method = cast("TrainedMethod", self.method)
            # The fusion options (segfuse's norm) go to the fusion, the rest (segments, window) to training.
            options = {k: v for k, v in params.items() if k in FUSION_OPTIONS}
            training_params = {k: v for k, v in params.items() if k not in FUSION_OPTIONS}
            model = train_fusion(runs, self.qrels.subset(training), method=method, **training_params)
            fused = fuse_runs([r.subset(scored) for r in runs], model=model, top_k=self.top_k, **options)
        else:
            fused = fuse_runs(runs, method=self.method, top_k=self.top_k, **params)
        return self.run_values(fused)

    def run_values(self, run: Run) -> array[float]:
        qids, values = evaluate(run, self.qrels, metrics=[self.metric])
        out = array("d", bytes(8 * len(self.queries)))
        for qid, value in zip(qids, values[self.metric], strict=True):
            at = self.position.get(qid)
            if at is not None:
                out[at] = value
        return out

    def fold_sums(self, params: Params, held_out: frozenset[int] = frozenset()) -> list[float]:
        key = (params_key(params), held_out)
        sums = self._fold_sums.get(key)
        if sums is None:
            sums = [0.0] * self.folds
            for q, value in zip(self.queries, self.values(params, held_out), strict=True):
                sums[self.fold_of[q]] += value
            self._fold_sums[key] = sums
        return sums

    def training_mean(self, params: Params, fold: int) -> float:
        """The score that chooses a configuration for `fold`: its mean over the other folds' queries."""
        n_training = len(self.queries) - len(self.fold_queries[fold])
        if not self.trained:
            return (sum(self.fold_sums(params)) - self.fold_sums(params)[fold]) / n_training
        if self.folds < 3:
            raise OutOfRange(
                f"folds: choosing a {self.method} configuration trains without two folds, so it needs "
                f"folds >= 3 (got {self.folds})"
            )
        total = 0.0
        for other in range(self.folds):
            if other != fold:
                total += self.fold_sums(params, frozenset((fold, other)))[other]
        return total / n_training

    def held_out(self, params: Params, fold: int) -> list[float]:
        """Per-query values of `fold`'s queries, by a configuration (a model) that never saw them."""
        values = self.values(params, frozenset((fold,)) if self.trained else frozenset())
        return [values[self.position[q]] for q in self.fold_queries[fold]]


def check_every_fold_trains(runs: Sequence[Run], fold_of: dict[str, int]) -> None:
    """A trained method is fitted once per fold, on the other folds' queries, and the core refuses a
    run that holds none of them: refuse such a run before the first fold, naming it."""
    for run in checked_runs(runs):
        held = {fold_of[q] for q in run.qids() if q in fold_of}
        if len(held) == 1:
            raise TooFewQueries(
                f"{run.name}: its judged queries all fall in one fold, so with that fold held out there "
                "is nothing to train its part on; use fewer folds, or a run of more judged queries"
            )
