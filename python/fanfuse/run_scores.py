"""A run's evaluation scores: per-query values per metric and their means, what ``fanfuse eval``
prints and ``fanfuse.report`` compares.

The metrics run in Rust (``fanfuse._core.evaluate``); this module only arranges their results.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from fanfuse._core import Qrels, Run, evaluate
from fanfuse.errors import TooFewQueries

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
    qids, values = evaluate(run, qrels, metrics=metrics)
    return with_means(name or run.name, qids, values)


def with_means(name: str, qids: list[str], values: dict[str, list[float]]) -> RunScores:
    """A run's per-query values (in run order: the order the means add them up in) and their means.

    Raises TooFewQueries when no query was evaluated (no query of the run is judged): a mean over no
    query is no number, and printing 0 would pass for a result.
    """
    if not qids:
        raise TooFewQueries(
            f"{name}: none of its queries is in the qrels, so there is nothing to average; check that "
            "the run and the qrels use the same query ids (and that this is the right qrels file)"
        )
    means = {m: sum(v) / len(v) for m, v in values.items()}
    return RunScores(name, qids, values, means)


def unranked_queries(scores: RunScores, judged: Sequence[str]) -> str | None:
    """What to tell of a run that ranks no documents for some of the ``judged`` queries, or None: its
    means leave those out (trec_eval's rule, fanfuse's), where ranx and ``trec_eval -c`` count each
    as 0, so the same run's number depends on whether its file could hold an empty ranking (a TREC
    line cannot; MT-RAG's JSONL can)."""
    missing = len(set(judged).difference(scores.qids))
    if not missing:
        return None
    return (
        f"{scores.name} ranks nothing for {missing} of the {len(set(judged))} judged queries: its means are "
        f"over the {len(scores.qids)} it ranks (as trec_eval's); ranx and trec_eval -c count each missing "
        "query as 0"
    )
