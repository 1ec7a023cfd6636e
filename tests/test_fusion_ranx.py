"""ranx as the oracle: every method and normalisation both libraries define gives the same scores.

ranx fuses whole runs (query id -> doc id -> score) and compiles with numba on first use, so each
(method, norm) pair is one ranx call over many random queries. Scores must agree to 1e-9 relative;
the order then agrees up to ties, whose order ranx leaves arbitrary. Lists are given best first with
strictly decreasing scores, so ranx's rank (order by score) is fanfuse's rank (position).
"""

from __future__ import annotations

import math
import random
import warnings
import zlib
from typing import Any

import fanfuse
import pytest

ranx = pytest.importorskip("ranx")

Runs = list[list[tuple[str, float]]]

# fanfuse name -> ranx name (ranx drops the "comb" prefix).
SCORE_METHODS = {
    "combsum": "sum",
    "combmnz": "mnz",
    "combmax": "max",
    "combmin": "min",
    "combmed": "med",
    "combanz": "anz",
    "combgmnz": "gmnz",
    "wsum": "wsum",
    "wmnz": "wmnz",
    "mixed": "mixed",
}
RANK_METHODS = ["rrf", "isr", "log_isr", "logn_isr", "rbc", "bordafuse", "w_bordafuse"]
WEIGHTED = {"wsum", "wmnz", "mixed", "w_bordafuse", "w_condorcet"}
NORMS = ["min-max", "min-max-inverted", "max", "sum", "zmuv", "rank", "borda"]
PARAMS: dict[str, dict[str, float]] = {
    "rrf": {"k": 10.0},
    "logn_isr": {"sigma": 0.3},
    "rbc": {"phi": 0.7},
    "combgmnz": {"gamma": 1.7},
}
N_QUERIES = 25


def draw_scores(rng: random.Random, n: int) -> list[float]:
    """`n` distinct scores, descending, from one of several distributions."""
    kind = rng.choice(["uniform", "normal", "exponential", "bm25"])
    draw = {
        "uniform": lambda: rng.random(),
        "normal": lambda: rng.gauss(0.0, 2.0),
        "exponential": lambda: rng.expovariate(0.3),
        "bm25": lambda: rng.uniform(5.0, 40.0),
    }[kind]
    scores: set[float] = set()
    while len(scores) < n:
        scores.add(draw())
    return sorted(scores, reverse=True)


def random_query(rng: random.Random, n_lists: int) -> Runs:
    """`n_lists` non-empty lists over a shared pool (so overlaps are frequent), lengths 1 to 12."""
    pool = [f"d{i}" for i in range(rng.randint(3, 25))]
    runs = []
    for _ in range(n_lists):
        docs = rng.sample(pool, rng.randint(1, min(12, len(pool))))
        runs.append(list(zip(docs, draw_scores(rng, len(docs)), strict=True)))
    return runs


def ranx_fuse(
    queries: list[Runs], method: str, norm: str | None, params: dict[str, Any]
) -> list[dict[str, float]]:
    n_lists = len(queries[0])
    runs = [ranx.Run({f"q{q}": dict(query[i]) for q, query in enumerate(queries)}) for i in range(n_lists)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # numba's cast warnings
        fused = ranx.fuse(runs, norm=norm, method=method, params=params)
    return [dict(fused.run[f"q{q}"]) for q in range(len(queries))]


# ranx's combmax / combmin read a missing document as -1e9 / +1e9, so a score beyond that sentinel
# (possible after max or zmuv normalisation of negative scores) comes back clamped to it; fanfuse
# takes the extreme over the lists that hold the document. Documented in docs/fusion-methods.md.
SENTINELS = (-1e9, 1e9)


def assert_same(fused: fanfuse.Fused, expected: dict[str, float], context: str) -> None:
    assert sorted(fused.ids) == sorted(expected), context
    for doc, score in fused:
        if expected[doc] in SENTINELS and abs(score) >= 1e9:
            continue
        assert math.isclose(score, expected[doc], rel_tol=1e-9, abs_tol=1e-12), (
            context,
            doc,
            score,
            expected[doc],
        )
    assert fused.scores == sorted(fused.scores, reverse=True), context  # hence ranx's order up to ties


def queries_for(seed: int) -> list[Runs]:
    rng = random.Random(seed)
    n_lists = rng.randint(2, 4)
    return [random_query(rng, n_lists) for _ in range(N_QUERIES)]


def fanfuse_kwargs(method: str, n_lists: int) -> tuple[dict[str, Any], dict[str, Any]]:
    """fanfuse's keyword arguments and ranx's params for the same call."""
    kwargs: dict[str, Any] = dict(PARAMS.get(method, {}))
    ranx_params = dict(kwargs)
    if method in WEIGHTED:
        kwargs["weights"] = ranx_params["weights"] = [1.0, 2.0, 4.5, 0.25][:n_lists]
    return kwargs, ranx_params


@pytest.mark.parametrize("norm", NORMS)
@pytest.mark.parametrize("method", sorted(SCORE_METHODS))
def test_score_methods_match_ranx(method: str, norm: str) -> None:
    queries = queries_for(zlib.crc32(f"{method}/{norm}".encode()) % 1000)  # stable across runs
    kwargs, ranx_params = fanfuse_kwargs(method, len(queries[0]))
    expected = ranx_fuse(queries, SCORE_METHODS[method], norm, ranx_params)
    for q, runs in enumerate(queries):
        assert_same(
            fanfuse.fuse(runs, method=method, norm=norm, **kwargs), expected[q], f"{method}/{norm} q{q}"
        )


@pytest.mark.parametrize("method", RANK_METHODS)
def test_rank_methods_match_ranx(method: str) -> None:
    queries = queries_for(len(method))
    kwargs, ranx_params = fanfuse_kwargs(method, len(queries[0]))
    expected = ranx_fuse(queries, method, None, ranx_params)
    for q, runs in enumerate(queries):
        assert_same(fanfuse.fuse(runs, method=method, **kwargs), expected[q], f"{method} q{q}")


def transitive_majority(runs: Runs, weights: list[float]) -> bool:
    """True when the weighted pairwise majority of the lists is a strict total order."""
    rank = [{doc: r for r, (doc, _) in enumerate(run)} for run in runs]
    docs = list(rank[0])
    wins = {d: 0 for d in docs}
    for a in docs:
        for b in docs:
            votes = sum(w for w, r in zip(weights, rank, strict=True) if r[a] < r[b])
            wins[a] += votes > sum(weights) / 2
    return sorted(wins.values()) == list(range(len(docs)))


@pytest.mark.parametrize("method", ["condorcet", "w_condorcet"])
def test_condorcet_matches_ranx_where_the_majority_is_a_total_order(method: str) -> None:
    # ranx sorts with the raw majority comparator, which only defines an order when the majority is
    # transitive: compare exactly there (every list ranks the same documents; odd list count or
    # weights with no tied vote).
    rng = random.Random(11)
    weights = [1.0, 2.0, 4.5] if method == "w_condorcet" else [1.0, 1.0, 1.0]
    queries = []
    while len(queries) < N_QUERIES:
        base = [f"d{i}" for i in range(rng.randint(2, 9))]
        runs = []
        for _ in range(3):
            order = base[:]
            for _ in range(rng.randint(0, 3)):
                i, j = rng.randrange(len(order)), rng.randrange(len(order))
                order[i], order[j] = order[j], order[i]
            runs.append(list(zip(order, draw_scores(rng, len(order)), strict=True)))
        if transitive_majority(runs, weights):
            queries.append(runs)
    params = {"weights": weights} if method == "w_condorcet" else {}
    expected = ranx_fuse(queries, method, None, params)
    for q, runs in enumerate(queries):
        assert_same(fanfuse.fuse(runs, method=method, **params), expected[q], f"{method} q{q}")
