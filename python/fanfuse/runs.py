"""Run files in Python: a run's evaluation (per-query values and means) and the data-frame interface.

Parsing, fusing and the metrics run in Rust (``fanfuse._core``); this module only arranges results.
pandas and pyarrow are optional (``pip install fanfuse[frames]``) and imported on first use; a run
goes to Arrow through ``fanfuse.tables.to_arrow`` only.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from fanfuse._core import FusionError, Qrels, Run, evaluate

DEFAULT_METRICS = ("recall@5", "recall@10", "ndcg@5", "ndcg@10")


@dataclass
class RunScores:
    """One run's evaluation: per-query values per metric and their means (compared by ``fanfuse.report``)."""

    name: str
    qids: list[str]
    values: dict[str, list[float]]
    means: dict[str, float] = field(default_factory=dict)


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


def to_pandas(run: Run) -> Any:
    """The run as a pandas DataFrame with columns qid, docid, rank, score (needs pandas and pyarrow:
    ``pip install fanfuse[frames]``); the frame of ``fanfuse.tables.to_arrow``, the one conversion."""
    from fanfuse.tables import to_arrow

    return to_arrow(run).to_pandas()


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
