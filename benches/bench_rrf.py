"""pytest-benchmark suites: `make bench` times them; `make test` runs each once as a smoke test.

Groups compare contenders on the same input: fanfuse, the pure-Python reference and NumPy per call;
rrf_batch on one thread, on all cores, and a loop of rrf for a batch.
"""

from __future__ import annotations

import os
import random
from collections.abc import Callable
from typing import Any

import fanfuse
import pytest
from fanfuse import reference
from numpy_rrf import rrf_numpy
from workloads import TOP_K, int64_query, str_batch, str_query

SINGLE = {"str": str_query(random.Random(1)), "int64": int64_query(random.Random(1))}
CONTENDERS: dict[str, Callable[..., Any]] = {
    "fanfuse": lambda lists: fanfuse.rrf(lists, top_k=TOP_K),
    "reference": lambda lists: reference.rrf(lists, top_k=TOP_K),
    "numpy": lambda lists: rrf_numpy(lists, top_k=TOP_K),
}


@pytest.mark.parametrize("contender", CONTENDERS)
@pytest.mark.parametrize("ids", SINGLE)
def test_single_call(benchmark: Any, ids: str, contender: str) -> None:
    benchmark.group = f"one call, 4 x 100 {ids} ids, top 10"
    fused = benchmark(CONTENDERS[contender], SINGLE[ids])
    assert len(fused[0] if isinstance(fused, tuple) else fused) == TOP_K


@pytest.fixture(scope="module")
def batch(request: pytest.FixtureRequest) -> list[list[list[str]]]:
    # 10k queries when timing; a smoke run needs only enough to reach the thread pool (256).
    disabled = request.config.getoption("benchmark_disable", default=False)
    return str_batch(300 if disabled else 10_000)


@pytest.mark.parametrize("how", ["rrf_batch threads=1", "rrf_batch all cores", "loop of rrf"])
def test_batch(benchmark: Any, batch: list[list[list[str]]], how: str) -> None:
    benchmark.group = "batch of queries, 4 x 100 str ids each, top 10"
    if how == "loop of rrf":
        results = benchmark(lambda: [fanfuse.rrf(q, top_k=TOP_K) for q in batch])
    else:
        threads = 1 if how.endswith("=1") else os.cpu_count()
        results = benchmark(lambda: fanfuse.rrf_batch(batch, top_k=TOP_K, threads=threads))
    assert len(results) == len(batch)
