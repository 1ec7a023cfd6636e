"""The paired t-test equals scipy.stats.ttest_rel; eval reports it next to the randomization test."""

from __future__ import annotations

import math
import random
from pathlib import Path

import fanfuse
import pytest
from fanfuse.runs import compare_runs

stats = pytest.importorskip("scipy.stats")


@pytest.mark.parametrize("n", [2, 3, 5, 30, 208, 2000])
@pytest.mark.parametrize("seed", range(5))
def test_paired_t_test_equals_scipy(n: int, seed: int) -> None:
    rng = random.Random(seed * 7919 + n)
    # Metric-like values in [0, 1] with many ties and zeros, as per-query nDCG or recall are.
    a = [rng.choice([0.0, 0.25, 0.5, 1.0, rng.random()]) for _ in range(n)]
    b = [min(1.0, max(0.0, x + rng.gauss(0.02 * seed, 0.2))) for x in a]
    expected = float(stats.ttest_rel(a, b).pvalue)
    ours = fanfuse.paired_t_test(a, b)
    if math.isnan(expected):  # zero variance of the differences: scipy gives NaN, we give 1 or 0
        assert ours in (0.0, 1.0)
    else:
        assert ours == pytest.approx(expected, rel=1e-9, abs=1e-14)


def test_paired_t_test_far_tail_and_edge_cases() -> None:
    a = [0.9 + 0.001 * i for i in range(50)]
    b = [0.1 + 0.0013 * (i % 7) for i in range(50)]
    assert fanfuse.paired_t_test(a, b) == pytest.approx(float(stats.ttest_rel(a, b).pvalue), rel=1e-6)
    assert fanfuse.paired_t_test([0.3, 0.4], [0.3, 0.4]) == 1.0
    assert fanfuse.paired_t_test([0.5, 0.6], [0.3, 0.4]) == 0.0
    assert math.isnan(fanfuse.paired_t_test([1.0], [0.0]))
    with pytest.raises(fanfuse.FusionError, match="equal lengths"):
        fanfuse.paired_t_test([1.0, 2.0], [1.0])


def test_compare_runs_reports_t_test_on_shared_queries(tmp_path: Path) -> None:
    directory = tmp_path
    rng = random.Random(3)
    qrels = directory / "qrels"
    qrels.write_text("".join(f"q{q} 0 d{q}_{d} 1\n" for q in range(40) for d in range(3)))
    paths = []
    for r in range(2):
        path = directory / f"run{r}.trec"
        with path.open("w") as f:
            for q in range(40 - 5 * r):  # the second run lacks 5 queries: the test pairs the shared ones
                docs = rng.sample(range(20), 10)
                f.writelines(f"q{q} Q0 d{q}_{d} {i + 1} {10 - i} r{r}\n" for i, d in enumerate(docs))
        paths.append(str(path))
    runs = [fanfuse.read_run(p) for p in paths]
    base, other = compare_runs(runs, fanfuse.read_qrels(str(qrels)), ["ndcg@10", "recall@5"], iterations=100)
    assert base.t_test_p_values is None
    assert other.t_test_p_values is not None
    for metric in ("ndcg@10", "recall@5"):
        paired = [base.values[metric][base.qids.index(q)] for q in other.qids]
        expected = float(stats.ttest_rel(other.values[metric], paired).pvalue)
        assert other.t_test_p_values[metric] == pytest.approx(expected, rel=1e-9)
