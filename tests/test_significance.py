"""The paired t-test equals scipy.stats.ttest_rel; the randomization test is exact for small samples;
eval reports both."""

from __future__ import annotations

import itertools
import math
import random
from pathlib import Path

import fanfuse
import pytest

stats = pytest.importorskip("scipy.stats")


@pytest.mark.parametrize("n", [2, 3, 5, 30, 208, 2000])
@pytest.mark.parametrize("seed", range(5))
def test_paired_t_p_value_equals_scipy(n: int, seed: int) -> None:
    rng = random.Random(seed * 7919 + n)
    # Metric-like values in [0, 1] with many ties and zeros, as per-query nDCG or recall are.
    a = [rng.choice([0.0, 0.25, 0.5, 1.0, rng.random()]) for _ in range(n)]
    b = [min(1.0, max(0.0, x + rng.gauss(0.02 * seed, 0.2))) for x in a]
    expected = float(stats.ttest_rel(a, b).pvalue)
    ours = fanfuse.paired_t(a, b)[1]
    if math.isnan(expected):  # all differences zero: scipy's t is 0/0, ours is "identical systems"
        assert a == b
        assert ours == 1.0
    else:
        assert ours == pytest.approx(expected, rel=1e-9, abs=1e-14)


@pytest.mark.filterwarnings("ignore:Precision loss occurred:RuntimeWarning")  # scipy on equal differences
def test_paired_t_far_tail_and_edge_cases() -> None:
    a = [0.9 + 0.001 * i for i in range(50)]
    b = [0.1 + 0.0013 * (i % 7) for i in range(50)]
    assert fanfuse.paired_t(a, b)[1] == pytest.approx(float(stats.ttest_rel(a, b).pvalue), rel=1e-6)
    assert fanfuse.paired_t([0.3, 0.4], [0.3, 0.4])[1] == 1.0
    # Equal non-zero differences: t is infinite, p is 0, as scipy gives it.
    assert fanfuse.paired_t([0.5, 0.75], [0.25, 0.5])[1] == 0.0
    assert float(stats.ttest_rel([0.5, 0.75], [0.25, 0.5]).pvalue) == 0.0
    assert fanfuse.paired_t([0.5, 0.6], [0.3, 0.4])[1] == 0.0
    with pytest.raises(fanfuse.FusionError, match="equal lengths"):
        fanfuse.paired_t([1.0, 2.0], [1.0])[1]


def metric_like_pairs(rng: random.Random, n: int) -> tuple[list[float], list[float]]:
    """Per-query scores in [0, 1] as nDCG or recall give them: many ties, zeros and equal pairs."""
    pool = [0.0, 0.25, 0.5, 1.0]
    a = [rng.choice([*pool, rng.random()]) for _ in range(n)]
    b = [x if rng.random() < 0.3 else rng.choice([*pool, rng.random()]) for x in a]
    return a, b


def every_flip_p_value(a: list[float], b: list[float]) -> float:
    """The share of all 2^n sign flips of the differences whose |sum| reaches the observed one, the
    observed sample included; "reaches" allows the core's rounding slack, 1e-12 of sum |d| (at least
    1e-12), so that flips equal in exact arithmetic count whatever order the sums are taken in."""
    diffs = [x - y for x, y in zip(a, b, strict=True)]
    observed = abs(math.fsum(diffs))
    slack = 1e-12 * max(math.fsum(abs(d) for d in diffs), 1.0)
    flips = list(itertools.product((1.0, -1.0), repeat=len(diffs)))
    sums = [abs(math.fsum(s * d for s, d in zip(signs, diffs, strict=True))) for signs in flips]
    reaching = sum(total >= observed - slack for total in sums)
    return reaching / len(flips)


@pytest.mark.parametrize("n", range(1, 13))
def test_randomization_test_enumerates_every_flip_of_a_small_sample(n: int) -> None:
    rng = random.Random(n)
    samples = [metric_like_pairs(rng, n) for _ in range(6)]
    samples += [([0.5] * n, [0.5] * n), ([0.75] * n, [0.5] * n)]  # all differences zero; all equal
    for a, b in samples:
        expected = every_flip_p_value(a, b)
        # The default 10 000 iterations cover all 2^12 flips: the p-value is exact, the seed unused.
        assert fanfuse.randomization_test(a, b) == expected, (a, b)
        assert fanfuse.randomization_test(a, b, iterations=2**n, seed=12345) == expected
    assert fanfuse.randomization_test([0.5] * n, [0.5] * n) == 1.0
    assert fanfuse.randomization_test([0.75] * n, [0.5] * n) == 2 / 2**n  # the sample and its mirror


def test_randomization_test_draws_flips_when_there_are_more_than_iterations() -> None:
    a, b = metric_like_pairs(random.Random(0), 12)
    drawn = {fanfuse.randomization_test(a, b, iterations=999, seed=seed) for seed in range(4)}
    # (count + 1) / (999 + 1): on the thousandths, and the seed matters.
    assert all(p * 1000 == pytest.approx(round(p * 1000), abs=1e-9) for p in drawn) and len(drawn) > 1
    assert fanfuse.randomization_test(a, b, iterations=999, seed=3) == fanfuse.randomization_test(
        a, b, iterations=999, seed=3
    )


TESTS = {
    "randomization_test": lambda a, b: fanfuse.randomization_test(a, b, iterations=200),
    "paired_t": lambda a, b: fanfuse.paired_t(a, b)[1],
}


@pytest.mark.parametrize("test", TESTS)
@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
@pytest.mark.parametrize("side", ["a", "b"])
def test_a_value_that_is_not_finite_is_refused(test: str, bad: float, side: str) -> None:
    # A NaN difference never counts as "at least as extreme", which made p the minimum, 1/(n+1).
    a, b = [0.2, 0.5, 0.4, 0.9], [0.1, 0.3, 0.4, 0.2]
    (a if side == "a" else b)[2] = bad
    with pytest.raises(fanfuse.FusionError, match=rf"{test}: {side}\[2\] is (NaN|inf|-inf); every value"):
        TESTS[test](a, b)


@pytest.mark.parametrize(("test", "n", "needed"), [("randomization_test", 0, 1), ("paired_t", 1, 2)])
def test_too_few_pairs_are_refused(test: str, n: int, needed: int) -> None:
    with pytest.raises(fanfuse.FusionError, match=rf"{test} needs at least {needed} pairs? \(got {n}\)"):
        TESTS[test]([0.5] * n, [0.25] * n)


def test_a_difference_beyond_the_float_range_is_refused() -> None:
    with pytest.raises(fanfuse.FusionError, match=r"paired_t: a\[0\] - b\[0\] overflows a float"):
        fanfuse.paired_t([1e308, 0.5], [-1e308, 0.25])[1]


def test_large_differences_give_the_p_values_of_small_ones() -> None:
    # Both tests are scale-invariant; squares of 1e200 overflow, which made the t-test return 0.
    a, b = [1.0, 2.0, 3.0, 5.0], [1.0, 1.0, 2.0, 2.0]
    big_a, big_b = [x * 1e200 for x in a], [x * 1e200 for x in b]
    assert fanfuse.paired_t(big_a, big_b)[1] == pytest.approx(fanfuse.paired_t(a, b)[1], rel=1e-12)
    assert fanfuse.randomization_test(big_a, big_b, iterations=500) == fanfuse.randomization_test(
        a, b, iterations=500
    )


@pytest.mark.parametrize(
    ("options", "error", "message"),
    [
        ({"iterations": 0}, fanfuse.OutOfRange, r"iterations must be an int from 1 to 4294967295 \(got 0\)"),
        ({"iterations": -1}, fanfuse.OutOfRange, r"iterations must be an int from 1 .*\(got -1\)"),
        ({"iterations": 2**32}, fanfuse.OutOfRange, r"iterations must be .*\(got 4294967296\)"),
        ({"iterations": 10.0}, TypeError, r"iterations must be an int from 1 .*\(got float\)"),
        ({"seed": -1}, fanfuse.OutOfRange, r"seed must be an int from 0 to 2\*\*64 - 1 \(got -1\)"),
        ({"seed": 2**64}, fanfuse.OutOfRange, r"seed must be an int from 0 .*\(got 18446744073709551616\)"),
    ],
)
def test_randomization_options_are_checked(
    options: dict[str, int], error: type[Exception], message: str
) -> None:
    with pytest.raises(error, match=message):
        fanfuse.randomization_test([0.5, 0.25], [0.25, 0.0], **options)
    assert fanfuse.randomization_test([0.5, 0.25], [0.25, 0.0], iterations=1, seed=2**64 - 1) == 1.0


def test_compare_reports_t_test_on_shared_queries(tmp_path: Path) -> None:
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
    report = fanfuse.compare(paths, str(qrels), ["ndcg@10", "recall@5"], correction="none")
    base, other = report.scores
    assert [c.run for c in report.comparisons] == [other.name, other.name]
    for metric in ("ndcg@10", "recall@5"):
        paired = [base.values[metric][base.qids.index(q)] for q in other.qids]
        expected = float(stats.ttest_rel(other.values[metric], paired).pvalue)
        found = report.comparison(other.name, metric)
        assert found is not None and found.p_value == pytest.approx(expected, rel=1e-9)


def test_compare_refuses_runs_with_too_few_shared_queries(tmp_path: Path) -> None:
    qrels = tmp_path / "qrels"
    qrels.write_text("q1 0 d1 1\nq2 0 d2 1\n")
    base, other = tmp_path / "base.trec", tmp_path / "other.trec"
    base.write_text("q1 Q0 d1 1 2.0 a\nq2 Q0 d1 1 2.0 a\n")
    other.write_text("q2 Q0 d2 1 2.0 b\n")  # one shared query: no variance to test against
    runs = [fanfuse.read_run(str(base)), fanfuse.read_run(str(other))]
    shared_one = r"other.trec shares 1 evaluated queries with the baseline"
    with pytest.raises(fanfuse.TooFewQueries, match=shared_one):
        fanfuse.compare(runs, fanfuse.read_qrels(str(qrels)), ["ndcg@10"], iterations=50)
