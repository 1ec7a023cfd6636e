"""The NumPy baseline of the benchmarks computes the same thing as the reference (else the
comparison would be meaningless)."""

from __future__ import annotations

import random

import pytest
from fanfuse import reference
from numpy_rrf import rrf_numpy
from workloads import int64_query, str_query


@pytest.mark.parametrize("seed", range(20))
@pytest.mark.parametrize("tie_break", ["rank", "id"])
def test_numpy_baseline_equals_reference(seed: int, tie_break: str) -> None:
    rng = random.Random(seed)
    # Small random lists with repeats and ties, and the benchmark workloads themselves.
    small = [[rng.randrange(8) for _ in range(rng.randrange(10))] for _ in range(rng.randrange(1, 5))]
    weights = [rng.choice([0.0, 0.5, 1.0, 2.0]) for _ in small]
    cases = [
        (small, {"weights": weights}),
        ([[f"d{i}" for i in lst] for lst in small], {"top_k": 3}),
        (str_query(rng), {"top_k": 10}),
        (int64_query(rng), {"k": 1.0}),
    ]
    for lists, options in cases:
        assert rrf_numpy(lists, tie_break=tie_break, **options) == reference.rrf(
            lists, tie_break=tie_break, **options
        )
