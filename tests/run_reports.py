"""What `fanfuse eval` and `fanfuse tune` should report, computed from the library's own pieces, for
the tests of the commands on generated and on real runs."""

from __future__ import annotations

from typing import Any

import fanfuse
import pytest

# The uncorrected randomization test that expected_eval_row computes.
FISHER = ["--test", "fisher", "--correction", "none", "--iterations", "200"]


def per_query(run_path: str, qrels_path: str, metric: str) -> dict[str, float]:
    qids, values = fanfuse.evaluate(
        fanfuse.read_run(run_path), fanfuse.read_qrels(qrels_path), metrics=[metric]
    )
    return dict(zip(qids, values[metric], strict=True))


def expected_eval_row(
    base: str, other: str, qrels: str, metric: str, *, iterations: int, seed: int = 0
) -> dict[str, Any]:
    """`other`'s row of `fanfuse eval --json --test fisher --correction none` for `metric` against the
    baseline `base` (as `eval_row` reads it): its evaluated queries, its mean, and the randomization
    test's p-value over the queries both runs evaluated."""
    base_values, values = per_query(base, qrels, metric), per_query(other, qrels, metric)
    shared = [q for q in values if q in base_values]
    a, b = [values[q] for q in shared], [base_values[q] for q in shared]
    return {
        "queries": len(values),
        "mean": pytest.approx(sum(values.values()) / len(values), rel=1e-12),
        "p_value": fanfuse.randomization_test(a, b, iterations=iterations, seed=seed),
    }


def eval_row(report: dict[str, Any], index: int, metric: str) -> dict[str, Any]:
    """The same fields read from `fanfuse eval --json` output."""
    row = report["runs"][index]
    (compared,) = (c for c in report["comparisons"] if c["run"] == row["run"] and c["metric"] == metric)
    return {"queries": row["queries"], "mean": row["means"][metric], "p_value": compared["p_value"]}


def fold_weighted_means(report: dict[str, Any]) -> tuple[float, float]:
    """`fanfuse tune`'s overall held-out means from its folds': query i of the shuffled list is in fold
    i % folds, so fold f holds len(range(f, queries, folds)) queries."""
    folds, queries = report["folds"], report["queries"]
    sizes = [len(range(f, queries, len(folds))) for f in range(len(folds))]
    fused = sum(n * f["fused_heldout"] for n, f in zip(sizes, folds, strict=True)) / queries
    single = sum(n * f["single_heldout"] for n, f in zip(sizes, folds, strict=True)) / queries
    return fused, single


def scipy_wilcoxon(a: list[float], b: list[float]) -> Any:
    """scipy's Wilcoxon test with the ties fanfuse sees: differences equal but for rounding (0.3 - 0.1
    and 0.5 - 0.3) are one magnitude, which scipy, comparing floats exactly, ranks apart."""
    stats = pytest.importorskip("scipy.stats")
    return stats.wilcoxon([round(x - y, 12) for x, y in zip(a, b, strict=True)])
