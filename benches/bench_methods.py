"""pytest-benchmark: fanfuse.fuse per method, and what explain costs (off must cost nothing).

`make bench` times them; the normal test run only smoke-runs each once (--benchmark-disable).
"""

from __future__ import annotations

import random
from typing import Any

import fanfuse
import pytest


def make_runs(
    n_lists: int = 4, depth: int = 100, pool: int = 250, seed: int = 1
) -> list[list[tuple[str, float]]]:
    """`n_lists` runs of `depth` (id, score) hits drawn from `pool` ids, scores descending."""
    rng = random.Random(seed)
    runs = []
    for _ in range(n_lists):
        ids = rng.sample(range(pool), depth)
        scores = sorted((rng.random() for _ in ids), reverse=True)
        runs.append([(f"doc{i}", s) for i, s in zip(ids, scores, strict=True)])
    return runs


RUNS = make_runs()
ID_LISTS = [[doc for doc, _ in run] for run in RUNS]


@pytest.mark.benchmark(group="rrf-explain")
def test_rrf(benchmark: Any) -> None:
    assert len(benchmark(fanfuse.rrf, ID_LISTS, top_k=10)) == 10


@pytest.mark.benchmark(group="rrf-explain")
def test_fuse_rrf_explain_off(benchmark: Any) -> None:
    assert benchmark(fanfuse.fuse, ID_LISTS, top_k=10).explain is None


# The explained rows read `explain`: its `Contribution`s are built when it is read, not by the call.
@pytest.mark.benchmark(group="rrf-explain")
def test_fuse_rrf_explain_on(benchmark: Any) -> None:
    assert benchmark(lambda: fanfuse.fuse(ID_LISTS, top_k=10, explain=True).explain) is not None


@pytest.mark.benchmark(group="combsum-explain")
@pytest.mark.parametrize("explain", [False, True])
def test_fuse_combsum_explain(benchmark: Any, explain: bool) -> None:
    explained = benchmark(lambda: fanfuse.fuse(RUNS, method="combsum", top_k=10, explain=explain).explain)
    assert (explained is not None) == explain


METHODS = ["rrf", "isr", "rbc", "bordafuse", "condorcet", "combsum", "combmnz", "combmed", "mixed", "dbsf"]


@pytest.mark.benchmark(group="methods")
@pytest.mark.parametrize("method", METHODS)
def test_fuse_method(benchmark: Any, method: str) -> None:
    assert len(benchmark(fanfuse.fuse, RUNS, method=method, top_k=10)) == 10
