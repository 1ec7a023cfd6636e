"""Comparison reports: every run against a baseline, per metric, with a significance test, a
multiple-comparison correction and win/tie/loss counts; rendered as a table, Markdown, LaTeX, CSV or
JSON (``fanfuse.report.rendering``) and plotted (``Report.plot``, needs matplotlib: ``fanfuse[plot]``).

The metrics and the four tests run in Rust (``fanfuse._core``), scipy is not needed: the t-test,
the randomization test, Wilcoxon's signed-rank test and Tukey's HSD (its studentized range
distribution by quadrature) equal scipy's to 1e-9 (tests/test_report_statistics.py).

Conventions:

- A run's mean is over its evaluated queries (those in both the run and the qrels), as `fanfuse eval`
  prints it. The paired tests and the win/tie/loss counts use the queries both the run and the
  baseline evaluated; Tukey's HSD compares all runs at once on the queries every run evaluated, as
  independent groups (one-way ANOVA, as scipy and ranx do), so it ignores the pairing by query.
- The correction is over the whole family of comparisons, (runs - 1) x metrics; with Tukey it comes
  on top of Tukey's own adjustment over the pairs of runs.
- A comparison is significant when its corrected p-value is at most ``alpha``; the table marks it
  ``▲`` (the run's mean is above the baseline's) or ``▼`` (below).
- A win is a query where the run scores above the baseline, a loss below, a tie exactly equal.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any, NamedTuple, get_args

from fanfuse._core import (
    Qrels,
    Run,
    paired_t,
    randomization_test,
    tukey_hsd,
    wilcoxon_test,
)
from fanfuse._renamed import refusing_old_keywords
from fanfuse.choices import RankFrom
from fanfuse.errors import InputError, InvalidSetting, OutOfRange, TooFewQueries
from fanfuse.limits import check_choice, check_float, check_int, check_sequence
from fanfuse.paths import utf8_path
from fanfuse.report import plot as report_plot
from fanfuse.report import rendering as report_format
from fanfuse.report.data import (
    TEST_NAMES,
    Comparison,
    Correction,
    ReportData,
    TestName,
    evaluated_runs,
    metric_names,
    sequence_of,
)
from fanfuse.report.rendering import FORMATS, ReportFormat
from fanfuse.run_scores import DEFAULT_METRICS, RunScores, score_run
from fanfuse.tables import read_any_qrels, read_any_run

__all__ = [
    "CORRECTIONS",
    "FORMATS",
    "TESTS",
    "Correction",
    "Report",
    "ReportFormat",
    "TestName",
    "adjust",
    "compare",
    "compare_scores",
]

_RUNS = "runs (Run) or paths (str or os.PathLike)"
# The core's RANK_SOURCES, typed as the parameter is (tests/test_name_lists.py holds them equal).
_RANK_SOURCES: tuple[RankFrom, ...] = get_args(RankFrom)
TESTS: tuple[TestName, ...] = tuple(TEST_NAMES)  # in the order the help lists them
CORRECTIONS: tuple[Correction, ...] = get_args(Correction)


class Report(ReportData):
    """The outcome of :func:`compare`: means per run and metric, and one :class:`Comparison` per
    non-baseline run and metric."""

    @refusing_old_keywords
    def render(self, format: ReportFormat = "table") -> str:
        return report_format.render(self, format)

    def to_table(self) -> str:
        return self.render("table")

    def to_markdown(self) -> str:
        return self.render("markdown")

    def to_latex(self) -> str:
        return self.render("latex")

    def to_csv(self) -> str:
        return self.render("csv")

    def to_json(self) -> str:
        return self.render("json")

    def to_dict(self) -> dict[str, Any]:
        return report_format.as_dict(self)

    def plot(self, path: str | os.PathLike[str]) -> None:
        """Writes the plot, PNG, PDF or SVG as the name's suffix says (else PNG): per metric, the means
        with 95% confidence intervals and the per-query differences from the baseline (needs
        matplotlib: ``pip install fanfuse[plot]``)."""
        report_plot.plot(self, path)


def compare(
    runs: Sequence[Run | str | os.PathLike[str]],
    qrels: Qrels | str | os.PathLike[str],
    metrics: Sequence[str] = DEFAULT_METRICS,
    *,
    baseline: int = 0,
    test: TestName = "t",
    correction: Correction = "holm",
    alpha: float = 0.05,
    names: Sequence[str] | None = None,
    iterations: int = 10_000,
    seed: int = 0,
    rank_from: RankFrom = "score",
) -> Report:
    """Evaluates every run and compares each with ``runs[baseline]`` (see the module documentation).

    Runs and qrels are objects or paths of any format ``fanfuse eval`` reads (TREC, MT-RAG JSONL,
    BEIR TSV qrels, Parquet); ``rank_from`` says where the ranks of a run read from a path come from,
    as `read_run`'s. ``iterations`` and ``seed`` are the randomization test's. Raises
    InvalidSetting for an unknown test or correction, no runs, or names not one per run; OutOfRange
    for a baseline, an alpha or an iteration count outside its range; TooFewQueries for a run sharing
    fewer than two evaluated queries with the baseline; FusionError for a run or qrels file the core
    cannot read; TypeError for a bare str (or a set) where a sequence is expected (runs, metrics,
    names) or an item of another type.
    """
    # Each item is a Run or a path, refused as every path argument is where it is read below.
    given = check_sequence(runs, "runs", _RUNS)
    metrics = metric_names(metrics)
    if names is not None:
        names = sequence_of(names, "names", "run names (str)", str, "a str, a run name")
    options = _options(len(given), baseline, test, correction, alpha, iterations, seed)
    # Checked here too: runs given as objects are never read, and the setting must not pass unread.
    rank_from = check_choice("rank_from", rank_from, _RANK_SOURCES)
    if names is not None and len(names) != len(given):
        raise InvalidSetting(f"names: {len(names)} names for {len(given)} runs: give one name per run")
    loaded_qrels = (
        qrels if isinstance(qrels, Qrels) else read_any_qrels(utf8_path(qrels, "qrels", InputError))
    )
    loaded = [
        run
        if isinstance(run, Run)
        else read_any_run(utf8_path(run, f"runs[{i}]", InputError), rank_from=rank_from)
        for i, run in enumerate(given)
    ]
    scores = [
        score_run(run, loaded_qrels, metrics, names[i] if names else None) for i, run in enumerate(loaded)
    ]
    return _compare(scores, metrics, options)


def compare_scores(
    scores: Sequence[RunScores],
    metrics: Sequence[str],
    *,
    baseline: int = 0,
    test: TestName = "t",
    correction: Correction = "holm",
    alpha: float = 0.05,
    iterations: int = 10_000,
    seed: int = 0,
) -> Report:
    """:func:`compare` of runs already evaluated (per-query values, as ``fanfuse.run_scores.score_run`` or
    a distributed evaluation gives them). Raises InvalidSetting for a metric some run has no values of."""
    scores, metrics = evaluated_runs(scores), metric_names(metrics)
    options = _options(len(scores), baseline, test, correction, alpha, iterations, seed)
    for run in scores:
        for metric in metrics:
            if metric not in run.values:
                raise InvalidSetting(
                    f"metrics: {run.name} has no values of {metric!r}; give metrics it was evaluated on: "
                    f"{', '.join(run.values) or 'none'}"
                )
    return _compare(scores, metrics, options)


class _Options(NamedTuple):
    """The options of a comparison, checked together (by :func:`compare` before it reads any run)."""

    baseline: int
    test: TestName
    correction: Correction
    alpha: float
    iterations: int
    seed: int


def _options(
    runs: int, baseline: int, test: TestName, correction: Correction, alpha: float, iterations: int, seed: int
) -> _Options:
    check_choice("test", test, TESTS)
    check_choice("correction", correction, CORRECTIONS)
    if not runs:
        raise InvalidSetting("runs: give at least one run")
    if check_int("baseline", baseline) >= runs:
        raise OutOfRange(
            f"baseline must be the index of a run, an int from 0 to {runs - 1} (got {baseline!r})"
        )
    check_float("alpha", alpha)
    check_int("iterations", iterations)  # whichever test runs: a bad value is refused alike
    check_int("seed", seed)
    return _Options(baseline, test, correction, float(alpha), iterations, seed)


def _compare(scores: Sequence[RunScores], metrics: Sequence[str], options: _Options) -> Report:
    baseline, test, correction, alpha, iterations, seed = options
    scores = list(scores)
    if len({s.name for s in scores}) < len(scores):
        scores = [RunScores(f"{i}:{s.name}", s.qids, s.values, s.means) for i, s in enumerate(scores)]
    raw = _raw_comparisons(scores, list(metrics), baseline, test, iterations, seed)
    adjusted = adjust(([p for *_, p in raw]), correction)
    comparisons = [
        Comparison(
            run=scores[i].name,
            metric=m,
            mean=scores[i].means[m],
            baseline_mean=scores[baseline].means[m],
            queries=len(pairs[0]),
            statistic=statistic,
            p_value=p,
            adjusted_p_value=q,
            significant=q <= alpha,
            wins=sum(x > y for x, y in zip(*pairs, strict=True)),
            ties=sum(x == y for x, y in zip(*pairs, strict=True)),
            losses=sum(x < y for x, y in zip(*pairs, strict=True)),
        )
        for (i, m, pairs, statistic, p), q in zip(raw, adjusted, strict=True)
    ]
    return Report(list(metrics), scores, baseline, test, correction, float(alpha), comparisons)


_Raw = tuple[int, str, tuple[list[float], list[float]], float, float]


def _raw_comparisons(
    scores: list[RunScores], metrics: list[str], baseline: int, test: TestName, iterations: int, seed: int
) -> list[_Raw]:
    """(run index, metric, (run values, baseline values) on shared queries, statistic, p) per
    non-baseline run and metric, runs outer, metrics inner."""
    base = scores[baseline]
    tukey = _tukey(scores, metrics, baseline) if test == "tukey" else {}
    raw: list[_Raw] = []
    for i, other in enumerate(scores):
        if i == baseline:
            continue
        index = {q: k for k, q in enumerate(base.qids)}
        shared = [(index[q], j) for j, q in enumerate(other.qids) if q in index]
        if len(shared) < 2:
            raise TooFewQueries(
                f"{other.name} shares {len(shared)} evaluated queries with the baseline {base.name}; the "
                "tests need at least 2 (check that the runs and qrels use the same qids)"
            )
        for m in metrics:
            a = [other.values[m][j] for _, j in shared]
            b = [base.values[m][k] for k, _ in shared]
            if test == "t":
                statistic, p = paired_t(a, b)
            elif test == "wilcoxon":
                statistic, p = wilcoxon_test(a, b)
            elif test == "fisher":
                statistic = (sum(a) - sum(b)) / len(a)
                p = randomization_test(a, b, iterations=iterations, seed=seed)
            else:
                statistic, p = tukey[i, m]
            raw.append((i, m, (a, b), statistic, p))
    return raw


def _tukey(
    scores: list[RunScores], metrics: list[str], baseline: int
) -> dict[tuple[int, str], tuple[float, float]]:
    """(mean difference, p) of every run against the baseline by Tukey's HSD over all runs, on the
    queries every run evaluated."""
    if len(scores) < 2:
        return {}
    common = set(scores[0].qids).intersection(*(s.qids for s in scores[1:]))
    if len(common) < 2:
        raise TooFewQueries(f"the runs share {len(common)} evaluated queries; Tukey's HSD needs at least 2")
    order = sorted(common)
    positions = [{q: k for k, q in enumerate(s.qids)} for s in scores]
    out = {}
    for m in metrics:
        groups = [[s.values[m][pos[q]] for q in order] for s, pos in zip(scores, positions, strict=True)]
        result = tukey_hsd(groups)
        for i in range(len(scores)):
            if i != baseline:
                out[i, m] = result[i][baseline]
    return out


def adjust(p_values: Sequence[float], correction: Correction) -> list[float]:
    """Adjusted p-values of one family: Bonferroni (p * n, at most 1) or Holm's step-down
    (the k-th smallest times n - k + 1, made non-decreasing, at most 1); "none" leaves them."""
    check_choice("correction", correction, CORRECTIONS)
    given = check_sequence(p_values, "p_values", "p-values")
    checked = [check_float("p_value", p, f"p_values[{i}]") for i, p in enumerate(given)]
    n = len(checked)
    if correction == "none":
        return checked
    if correction == "bonferroni":
        return [min(1.0, p * n) for p in checked]
    adjusted = [0.0] * n
    running = 0.0
    for rank, index in enumerate(sorted(range(n), key=lambda k: checked[k])):
        running = max(running, min(1.0, (n - rank) * checked[index]))
        adjusted[index] = running
    return adjusted
