"""Run files in Python: comparison of runs (means and paired p-values) and the data-frame interface.

Parsing, fusing and the metrics run in Rust (``fanfuse._core``); this module only arranges results.
pandas and pyarrow are optional (``pip install fanfuse[frames]``) and imported on first use.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from fanfuse._core import FusionError, Qrels, Run, evaluate, paired_t_test, randomization_test

DEFAULT_METRICS = ("recall@5", "recall@10", "ndcg@5", "ndcg@10")


@dataclass
class RunScores:
    """One run's evaluation: per-query values per metric, their means, and p-values against a baseline."""

    name: str
    qids: list[str]
    values: dict[str, list[float]]
    means: dict[str, float] = field(default_factory=dict)
    # Paired tests against the first run of the comparison (None for the first run): randomization
    # (sign-flip) and Student t, both two-sided, on the queries both runs evaluated.
    p_values: dict[str, float] | None = None
    t_test_p_values: dict[str, float] | None = None


def score_run(run: Run, qrels: Qrels, metrics: Sequence[str], name: str | None = None) -> RunScores:
    """Evaluates one run: the mean of a metric is over the queries in both the run and the qrels."""
    qids, values = evaluate(run, qrels, metrics=list(metrics))
    return with_means(name or run.name, qids, values)


def with_means(name: str, qids: list[str], values: dict[str, list[float]]) -> RunScores:
    """A run's per-query values (in run order: the order the means add them up in) and their means.

    Raises FusionError when no query was evaluated (no query of the run is judged): a mean over no
    query is no number, and printing 0 would pass for a result.
    """
    if not qids:
        raise FusionError(
            f"{name}: none of its queries is in the qrels, so there is nothing to average; check that "
            "the run and the qrels use the same query ids (and that this is the right qrels file)"
        )
    means = {m: sum(v) / len(v) for m, v in values.items()}
    return RunScores(name, qids, values, means)


def compare_runs(
    runs: Sequence[Run],
    qrels: Qrels,
    metrics: Sequence[str] = DEFAULT_METRICS,
    *,
    names: Sequence[str] | None = None,
    iterations: int = 10_000,
    seed: int = 0,
) -> list[RunScores]:
    """Scores every run and tests each one against the first on the queries both evaluated.

    Raises FusionError when a run shares fewer than two evaluated queries with the first: the t-test
    has no variance to test against, and no p-value is better than one that means nothing.
    """
    scored = [score_run(run, qrels, metrics, names[i] if names else None) for i, run in enumerate(runs)]
    return paired_tests_against_first(scored, metrics, iterations=iterations, seed=seed)


def paired_tests_against_first(
    scored: list[RunScores], metrics: Sequence[str], *, iterations: int = 10_000, seed: int = 0
) -> list[RunScores]:
    """Sets the p-values of every run but the first against the first (see ``compare_runs``)."""
    base = scored[0]
    base_index = {q: i for i, q in enumerate(base.qids)}
    for other in scored[1:]:
        shared = [(base_index[q], j) for j, q in enumerate(other.qids) if q in base_index]
        if len(shared) < 2:
            raise FusionError(
                f"{other.name} shares {len(shared)} evaluated queries with {base.name}; the paired tests "
                "need at least 2 (evaluate it alone, or check that the runs and qrels use the same qids)"
            )
        pairs = {
            m: ([other.values[m][j] for _, j in shared], [base.values[m][i] for i, _ in shared])
            for m in metrics
        }
        other.p_values = {
            m: randomization_test(a, b, iterations=iterations, seed=seed) for m, (a, b) in pairs.items()
        }
        other.t_test_p_values = {m: paired_t_test(a, b) for m, (a, b) in pairs.items()}
    return scored


def to_pandas(run: Run) -> Any:
    """The run as a pandas DataFrame with columns qid, docid, rank, score (needs pandas)."""
    import pandas as pd  # type: ignore[import-untyped,import-not-found,unused-ignore]

    qids, docids, ranks, scores = run.columns()
    return pd.DataFrame({"qid": qids, "docid": docids, "rank": ranks, "score": scores})


def to_arrow(run: Run) -> Any:
    """The run as a pyarrow Table with columns qid, docid, rank, score (needs pyarrow)."""
    import pyarrow as pa  # type: ignore[import-untyped,import-not-found,unused-ignore]

    qids, docids, ranks, scores = run.columns()
    return pa.table(
        {
            "qid": pa.array(qids, pa.string()),
            "docid": pa.array(docids, pa.string()),
            "rank": pa.array(ranks, pa.int64()),
            "score": pa.array(scores, pa.float64()),
        }
    )


def from_frame(frame: Any, *, name: str = "run", rank_from: str = "score") -> Run:
    """A run from any frame with qid, docid and score columns (pandas DataFrame or pyarrow Table).

    Ids are converted to str. ``rank_from="file"`` keeps the row order within each query.
    """
    columns = (
        frame.to_pydict() if hasattr(frame, "to_pydict") else {c: frame[c].tolist() for c in frame.columns}
    )
    missing = [c for c in ("qid", "docid", "score") if c not in columns]
    if missing:
        raise FusionError(f"frame lacks column(s) {', '.join(missing)}; a run frame needs qid, docid, score")
    return Run.from_columns(
        [str(q) for q in columns["qid"]],
        [str(d) for d in columns["docid"]],
        list(columns["score"]),  # the core checks each score and names the bad one (scores[i])
        name=name,
        rank_from=rank_from,
    )
