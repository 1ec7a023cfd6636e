"""Every significance test of the core gives the p-value of the scores whatever their unit: the
samples scaled by any s from 1e-300 to 1e300 (and so rounded once more) give the same p-value as
unscaled, exactly for the tests that count (randomization, Wilcoxon) and to a relative 1e-6 for
those that read a continuous distribution (t, Tukey's HSD), where the scaling's rounding moves
the statistic by about 1e-10 of itself.

The scores are metric-like: multiples of 1/60 (many ties and zero differences, as per-query nDCG
or recall have) or any value in [0, 1] to six decimals. Before the tolerances of the core were
relative to the data, the randomization test gave p = 1.0 at s <= 1e-16 and the t-test p = 0.0 at
s = 1e-200."""

from __future__ import annotations

import fanfuse
import pytest
from hypothesis import given, strategies
from rrf_strategies import examples

SCORES = strategies.one_of(
    strategies.integers(0, 60).map(lambda k: k / 60),
    strategies.floats(0, 1).map(lambda x: round(x, 6)),
)
SCALES = strategies.floats(-300, 300).map(lambda e: 10.0**e)


@strategies.composite
def paired(draw: strategies.DrawFn, least: int = 2) -> tuple[list[float], list[float]]:
    n = draw(strategies.integers(least, 40))
    return draw(strategies.lists(SCORES, min_size=n, max_size=n)), draw(
        strategies.lists(SCORES, min_size=n, max_size=n)
    )


def scaled(values: list[float], s: float) -> list[float]:
    return [x * s for x in values]


@given(paired(1), SCALES)
@examples(0.04)
def test_randomization_test(samples: tuple[list[float], list[float]], s: float) -> None:
    a, b = samples
    expected = fanfuse.randomization_test(a, b, iterations=500, seed=3)
    assert fanfuse.randomization_test(scaled(a, s), scaled(b, s), iterations=500, seed=3) == expected


@given(paired(1), SCALES)
@examples(0.04)
def test_wilcoxon_test(samples: tuple[list[float], list[float]], s: float) -> None:
    a, b = samples
    assert fanfuse.wilcoxon_test(scaled(a, s), scaled(b, s)) == fanfuse.wilcoxon_test(a, b)


@given(paired(), SCALES)
@examples(0.04)
def test_paired_t(samples: tuple[list[float], list[float]], s: float) -> None:
    a, b = samples
    t, p = fanfuse.paired_t(a, b)
    t_scaled, p_scaled = fanfuse.paired_t(scaled(a, s), scaled(b, s))
    assert p_scaled == pytest.approx(p, rel=1e-6, abs=0)
    assert t_scaled == pytest.approx(t, rel=1e-6, abs=0)


@given(
    strategies.integers(2, 5).flatmap(lambda k: strategies.lists(paired(), min_size=k, max_size=k)), SCALES
)
@examples(0.008)
def test_tukey_hsd(pairs: list[tuple[list[float], list[float]]], s: float) -> None:
    groups = [a for a, _ in pairs]  # groups of unequal sizes
    plain = fanfuse.tukey_hsd(groups)
    for row, scaled_row in zip(plain, fanfuse.tukey_hsd([scaled(g, s) for g in groups]), strict=True):
        for (difference, p), (scaled_difference, scaled_p) in zip(row, scaled_row, strict=True):
            assert scaled_p == pytest.approx(p, rel=1e-6, abs=0)
            assert scaled_difference == pytest.approx(difference * s, rel=1e-9, abs=0)


@pytest.mark.parametrize("s", [1e-12, 1e-16, 1e-200, 1e-300, 1e300])
def test_the_examples_of_the_report(s: float) -> None:
    # Metric-like samples of 30 queries: random flips (2^30 > iterations) and every test's path.
    a = [((7 * i) % 13) / 12 for i in range(30)]
    b = [((5 * i + 3) % 11) / 10 for i in range(30)]
    expected = (
        fanfuse.randomization_test(a, b),
        fanfuse.paired_t(a, b)[1],
        fanfuse.wilcoxon_test(a, b),
    )
    got = (
        fanfuse.randomization_test(scaled(a, s), scaled(b, s)),
        fanfuse.paired_t(scaled(a, s), scaled(b, s))[1],
        fanfuse.wilcoxon_test(scaled(a, s), scaled(b, s)),
    )
    assert got[0] == expected[0] and got[2] == expected[2]
    assert got[1] == pytest.approx(expected[1], rel=1e-9)
    assert 0.0 < expected[1] < 1.0 and expected[0] < 1.0
