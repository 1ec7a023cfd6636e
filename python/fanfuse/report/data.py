"""The numbers of a comparison report, below the modules that compute, render and plot it
(``fanfuse.report``, ``fanfuse.report.rendering``, ``fanfuse.report.plot``): each of them imports this one."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal, TypeVar, cast

from fanfuse.limits import check_choice, check_sequence
from fanfuse.run_scores import RunScores

#: The paired tests a comparison offers, in the order the help lists them.
TestName = Literal["t", "fisher", "wilcoxon", "tukey"]
#: How the p-values of one family are adjusted for multiple comparisons.
Correction = Literal["none", "bonferroni", "holm"]
TEST_NAMES: dict[TestName, str] = {
    "t": "two-sided paired Student t-test",
    "fisher": "two-sided paired randomization (Fisher) test",
    "wilcoxon": "two-sided Wilcoxon signed-rank test",
    "tukey": "Tukey's HSD over all runs",
}
BETTER, WORSE = "▲", "▼"

_Item = TypeVar("_Item")


def sequence_of(
    value: object, name: str, what: str, kind: type[_Item] | tuple[type[_Item], ...], one: str
) -> list[_Item]:
    """`value`, a sequence of `what` (``check_sequence``), as a list; an item that is not `kind` is
    refused (`one` says what an item must be)."""
    items = check_sequence(value, name, what)
    for i, item in enumerate(items):
        if not isinstance(item, kind):
            raise TypeError(f"{name}[{i}] must be {one} (got {type(item).__name__})")
    return cast("list[_Item]", items)


def metric_names(value: object) -> list[str]:
    """The metric names of a report, checked by `sequence_of`."""
    return sequence_of(value, "metrics", "metric names (str)", str, "a str, a metric name")


def evaluated_runs(value: object) -> list[RunScores]:
    """The evaluated runs of a report, checked by `sequence_of`."""
    return sequence_of(
        value, "scores", "evaluated runs (RunScores)", RunScores, "a RunScores, an evaluated run"
    )


@dataclass(frozen=True)
class Comparison:
    """One run against the baseline on one metric.

    ``statistic`` is the test's own: t for the t-test, min(R+, R-) for Wilcoxon, the difference of
    means (run - baseline) for the randomization test and Tukey's HSD.
    """

    run: str
    metric: str
    mean: float
    baseline_mean: float
    queries: int
    statistic: float
    p_value: float
    adjusted_p_value: float
    significant: bool
    wins: int
    ties: int
    losses: int

    @property
    def marker(self) -> str:
        if not self.significant:
            return ""
        return BETTER if self.mean > self.baseline_mean else WORSE


@dataclass
class ReportData:
    """The numbers of a comparison report: means per run and metric, and one :class:`Comparison` per
    non-baseline run and metric. ``fanfuse.report.Report`` adds its renderings."""

    metrics: list[str]
    scores: list[RunScores]
    baseline: int
    test: TestName
    correction: Correction
    alpha: float
    comparisons: list[Comparison]

    def __post_init__(self) -> None:
        # What every rendering reads: checked where a report is made, not where it is first shown.
        self.metrics = metric_names(self.metrics)
        self.scores = evaluated_runs(self.scores)

    @property
    def names(self) -> list[str]:
        return [s.name for s in self.scores]

    def comparison(self, run: str, metric: str) -> Comparison | None:
        """The comparison of `run` with the baseline on `metric` (None for the baseline itself). A run
        or a metric the report does not have raises InvalidSetting listing the ones it has (TypeError
        for a name that is no str), as every name fanfuse looks up does: None would read as the
        baseline."""
        check_choice("run", run, self.names)
        check_choice("metric", metric, self.metrics)
        return next((c for c in self.comparisons if c.run == run and c.metric == metric), None)

    @property
    def compared(self) -> bool:
        """Whether any run is compared with the baseline: false for a report of one run, which
        shows neither a baseline nor what the markers mean."""
        return len(self.scores) > 1

    def label(self, run: int) -> str:
        """How tables and plots name run `run`: its name, marked when it is the baseline of a comparison."""
        name = self.scores[run].name
        return f"{name} (baseline)" if self.compared and run == self.baseline else name

    def legend(self, shown: Callable[[str], str] = str) -> str:
        """What the markers mean, in one sentence; empty when nothing is compared. `shown` writes
        the baseline's name as the format needs it (Markdown escapes it)."""
        if not self.compared:
            return ""
        family = (len(self.scores) - 1) * len(self.metrics)
        correction = (
            "uncorrected"
            if self.correction == "none"
            else f"{self.correction.capitalize()}-corrected over {family} comparisons"
        )
        baseline = shown(self.names[self.baseline])
        return (
            f"{BETTER}/{WORSE}: significantly above/below the baseline ({baseline}) by the "
            f"{TEST_NAMES[self.test]}, {correction}, p <= {self.alpha:g}; W/T/L: queries won/tied/lost "
            "against the baseline."
        )
