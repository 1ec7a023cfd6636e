"""fanfuse.fuse, every method: the core against the executable spec, explain, duplicates, content keys."""

from __future__ import annotations

import functools
import math
import operator
from typing import Any

import fanfuse
import pytest
from fanfuse import reference
from hypothesis import given
from hypothesis import strategies as st
from rrf_strategies import examples

RANK_METHODS = [
    "rrf",
    "isr",
    "log_isr",
    "logn_isr",
    "rbc",
    "bordafuse",
    "w_bordafuse",
    "condorcet",
    "w_condorcet",
]
SCORE_METHODS = [
    "combsum",
    "combmnz",
    "combmax",
    "combmin",
    "combmed",
    "combanz",
    "combgmnz",
    "wsum",
    "wmnz",
    "mixed",
    "dbsf",
    "relative_score",
]
UNWEIGHTED = {"isr", "log_isr", "logn_isr", "combmax", "combmin", "combmed", "combanz", "combgmnz"}
NORMS = [None, "none", "min-max", "min-max-inverted", "max", "sum", "zmuv", "rank", "borda"]

# Small alphabets make overlaps, repeats inside a list and score ties frequent.
scores = st.sampled_from([0.0, 1.0, 2.5, -1.0]) | st.floats(-1e3, 1e3, allow_nan=False)
scored_runs = st.lists(st.lists(st.tuples(st.sampled_from("abcdefg"), scores), max_size=8), max_size=4)


# Built once: a strategy built inside the composite is rebuilt and validated on every draw.
METHOD_DRAW = st.sampled_from(RANK_METHODS + SCORE_METHODS)
OPTION_DRAWS = {
    "tie_break": st.sampled_from(["rank", "id"]),
    "duplicates": st.sampled_from(["first", "max", "sum"]),
    "k": st.sampled_from([60.0, 1.0, 0.5]),
    "phi": st.sampled_from([0.8, 0.5, 0.95]),
    "sigma": st.sampled_from([0.01, 0.0, 1.0]),
    "gamma": st.sampled_from([1.0, 0.5, 2.0]),
}
NORM_DRAW = st.sampled_from(NORMS)
WEIGHTS_DRAW = [st.lists(st.sampled_from([0.0, 0.5, 1.0, 3.0]), min_size=n, max_size=n) for n in range(5)]
TOP_K_DRAW = st.integers(0, 8)
KEY_DRAW = st.sampled_from("KLM")


@st.composite
def fuse_calls(
    draw: st.DrawFn,
    runs_draw: st.SearchStrategy[list[list[tuple[str, float]]]] = scored_runs,
    weights_draw: list[st.SearchStrategy[list[float]]] = WEIGHTS_DRAW,
    keyed: bool = True,
) -> tuple[list[list[tuple[str, float]]], dict[str, Any]]:
    runs = draw(runs_draw)
    method = draw(METHOD_DRAW)
    options: dict[str, Any] = {
        "method": method,
        **{name: draw(values) for name, values in OPTION_DRAWS.items()},
    }
    if method in SCORE_METHODS and method not in ("dbsf", "relative_score"):
        options["norm"] = draw(NORM_DRAW)
    if method not in UNWEIGHTED and draw(st.booleans()):
        options["weights"] = draw(weights_draw[len(runs)])
    if draw(st.booleans()):
        options["top_k"] = draw(TOP_K_DRAW)
    if keyed and draw(st.booleans()):  # keys that merge ids, beside weight-0 lists too
        options["content_keys"] = [[draw(KEY_DRAW) for _ in run] for run in runs]
    return runs, options


def in_order_sum(values: list[float]) -> float:
    return functools.reduce(operator.add, values, 0.0)


@examples(0.1)  # share of the Hypothesis profile (CI=true: 25k examples)
@given(fuse_calls())
def test_core_equals_reference(call: tuple[list[list[tuple[str, float]]], dict[str, Any]]) -> None:
    runs, options = call
    fused = fanfuse.fuse(runs, **options)
    ids, expected = reference.fuse(runs, **options)
    assert fused.ids == ids
    assert fused.scores == expected  # exact: the same operations in the same order


@examples(0.1)  # share of the Hypothesis profile (CI=true: 25k examples)
@given(fuse_calls(keyed=False))  # a keyed hit's parts name each list's own id
def test_explain_contributions_sum_to_the_score(
    call: tuple[list[list[tuple[str, float]]], dict[str, Any]],
) -> None:
    runs, options = call
    plain = fanfuse.fuse(runs, **options)
    fused = fanfuse.fuse(runs, explain=True, **options)
    assert fused == plain  # explain changes nothing else
    assert fused.explain is not None and len(fused.explain) == len(fused.ids)
    for doc, score, parts in zip(fused.ids, fused.scores, fused.explain, strict=True):
        lists = [c.list for c in parts]
        assert lists == sorted(set(lists))  # one entry per list, in list order
        for c in parts:
            if c.rank is not None:  # a list that holds the hit: its first position and (merged) score
                ids = [d for d, _ in runs[c.list]]
                assert c.id == doc and c.rank == ids.index(doc) + 1
                assert c.score is not None
        if options["method"].endswith("condorcet"):
            assert all(math.isnan(c.contribution) for c in parts)  # a position, not a sum
        else:
            assert in_order_sum([c.contribution for c in parts]) == score


def test_borda_explain_shows_points_from_lists_without_the_hit() -> None:
    fused = fanfuse.fuse([["a", "b"], ["c"]], method="bordafuse", explain=True)
    assert fused.explain is not None
    by_id = dict(zip(fused.ids, fused.explain, strict=True))
    # 3 candidates: list 0 gives a 3 points, b 2; list 1 (length 1) gives c 3 and the others (3 - 1 + 1) / 2.
    assert [(c.list, c.rank, c.contribution) for c in by_id["a"]] == [(0, 1, 3.0), (1, None, 1.5)]
    assert fused.scores == [4.5, 4.0, 3.5]
    assert fused.ids == ["a", "c", "b"]


def test_duplicate_policies_on_scores() -> None:
    chunks = [[("doc1", 0.9), ("doc2", 0.8), ("doc1", 0.7)], [("doc2", 0.5), ("doc3", 0.1)]]
    first = fanfuse.fuse(chunks, method="combsum", norm="none", explain=True)
    assert dict(first) == {"doc1": 0.9, "doc2": 1.3, "doc3": 0.1}
    assert dict(fanfuse.fuse(chunks, method="combsum", norm="none", duplicates="max")) == dict(first)
    summed = fanfuse.fuse(chunks, method="combsum", norm="none", duplicates="sum", explain=True)
    assert dict(summed)["doc1"] == 0.9 + 0.7
    assert summed.explain is not None
    assert [(c.rank, c.score) for c in summed.explain[0]] == [(1, 0.9 + 0.7)]


def test_content_keys_merge_ids_with_the_same_text() -> None:
    runs = [["a1", "b", "a2"], ["a2", "c"]]
    keys = [["A", "B", "A"], ["A", "C"]]
    fused = fanfuse.fuse(runs, content_keys=keys, explain=True)
    # a1 and a2 are one document: rank 1 in list 0 (a2 at 3 is its repeat) and rank 1 in list 1.
    assert fused.ids == ["a1", "b", "c"]
    assert fused.scores[0] == 1 / 61 + 1 / 61
    assert fused.explain is not None
    assert [(c.list, c.rank, c.id) for c in fused.explain[0]] == [(0, 1, "a1"), (1, 1, "a2")]
    summed = fanfuse.fuse(runs, content_keys=keys, duplicates="sum")
    assert summed.scores[0] == 1 / 61 + 1 / 63 + 1 / 61


def test_a_weight_0_list_names_no_key_s_id() -> None:
    # Ignored entirely: its id neither stands for a key (tie_break="id" sorted by it) nor splits one.
    runs, keys = [["z"], ["c"], ["a"]], [["K"], ["J"], ["K"]]
    assert fanfuse.fuse(runs, content_keys=keys, weights=[0.0, 1.0, 1.0], tie_break="id").ids == ["a", "c"]
    assert fanfuse.fuse([["x"], ["a", "a"]], content_keys=[["K"], ["J", "K"]], weights=[0.0, 1.0]).ids == [
        "a"
    ]


@examples(0.04)  # share of the Hypothesis profile (CI=true: 25k examples)
@given(scored_runs, st.sampled_from(RANK_METHODS + SCORE_METHODS))
def test_content_keys_equal_to_ids_change_nothing(runs: list[list[tuple[str, float]]], method: str) -> None:
    keys = [[doc for doc, _ in run] for run in runs]
    assert fanfuse.fuse(runs, method=method, content_keys=keys) == fanfuse.fuse(runs, method=method)


@examples(0.04)  # share of the Hypothesis profile (CI=true: 25k examples)
@given(scored_runs)
def test_content_keys_equal_renaming_the_ids(runs: list[list[tuple[str, float]]]) -> None:
    # Keys that merge "a" into "b" give the fusion of the renamed lists (up to which id is reported).
    keys = [["b" if doc == "a" else doc for doc, _ in run] for run in runs]
    renamed = [
        [(key, s) for key, (_, s) in zip(k, run, strict=True)] for k, run in zip(keys, runs, strict=True)
    ]
    for method in ("rrf", "combsum"):
        merged = fanfuse.fuse(runs, method=method, content_keys=keys, duplicates="sum")
        direct = fanfuse.fuse(renamed, method=method, duplicates="sum")
        assert merged.scores == direct.scores
        assert [("b" if d == "a" else d) for d in merged.ids] == direct.ids


def test_weaviate_relative_score_example() -> None:
    # Weaviate's doc example: scores [1, 8, 6, 11] normalise to [0, 0.7, 0.5, 1].
    fused = fanfuse.fuse([[("w", 11.0), ("x", 8.0), ("y", 6.0), ("z", 1.0)]], method="relative_score")
    assert fused.ids == ["w", "x", "y", "z"]
    assert fused.scores == pytest.approx([1.0, 0.7, 0.5, 0.0])
    weighted = fanfuse.fuse(
        [[("a", 2.0), ("b", 2.0)], [("b", 5.0), ("c", 1.0)]], method="relative_score", weights=[0.25, 0.75]
    )
    assert dict(weighted) == {"a": 0.25, "b": 0.25 + 0.75, "c": 0.0}  # equal scores normalise to 1


def test_qdrant_dbsf() -> None:
    scores = [5.0, 3.0, 1.0]
    mean, std = 3.0, 2.0  # sample standard deviation
    lo, hi = mean - 3 * std, mean + 3 * std
    fused = fanfuse.fuse([[("a", 5.0), ("b", 3.0), ("c", 1.0)], [("c", 0.7)]], method="dbsf")
    expected = {doc: (s - lo) / (hi - lo) for doc, s in zip("abc", scores, strict=True)}
    expected["c"] += 0.5  # a single hit normalises to 0.5
    assert dict(fused) == pytest.approx(expected)


@pytest.mark.parametrize(
    ("runs", "kwargs", "error", "message"),
    [
        ([["a"]], {"method": "combsum"}, fanfuse.FusionError, "runs[0] has no scores but method 'combsum'"),
        ([[("a", 1.0)], ["b"]], {"method": "wsum"}, fanfuse.FusionError, "runs[1] has no scores"),
        ([[("a", math.nan)]], {"method": "combsum"}, fanfuse.FusionError, "runs[0][0][1] is NaN"),
        ([(["a"], [math.inf])], {}, fanfuse.FusionError, "runs[0] scores[0] is inf"),
        ([["a"]], {"method": "borda"}, fanfuse.FusionError, "method must be one of rrf, isr"),
        (
            [[("a", 1.0)]],
            {"method": "combsum", "norm": "l2"},
            fanfuse.FusionError,
            "norm must be one of none",
        ),
        ([["a"]], {"norm": "min-max"}, fanfuse.FusionError, "reads ranks only"),
        (
            [[("a", 1.0)]],
            {"method": "dbsf", "norm": "max"},
            fanfuse.FusionError,
            "normalises scores its own way",
        ),
        (
            [["a"]],
            {"method": "isr", "weights": [2.0]},
            fanfuse.FusionError,
            "method 'isr' has no per-list weights",
        ),
        ([["a"]], {"method": "rbc", "phi": 1.0}, fanfuse.FusionError, "phi must be in (0, 1)"),
        ([["a"]], {"method": "logn_isr", "sigma": -0.1}, fanfuse.FusionError, "sigma must be in [0, 1]"),
        (
            [[("a", 1.0)]],
            {"method": "combgmnz", "gamma": math.inf},
            fanfuse.FusionError,
            "gamma must be a finite",
        ),
        (
            [["a"]],
            {"weights": [1.0, 2.0]},
            fanfuse.FusionError,
            "weights has 2 entries but there is 1 run",
        ),
        (
            [["a"]],
            {"content_keys": [["k"], ["j"]]},
            fanfuse.FusionError,
            "content_keys has 2 lists but there are 1",
        ),
        (
            [["a", "b"]],
            {"content_keys": [["k"]]},
            fanfuse.FusionError,
            "content_keys[0] has 1 keys but runs[0] has 2",
        ),
    ],
)
def test_bad_input_says_how_to_fix_it(
    runs: list[Any], kwargs: dict[str, Any], error: type[Exception], message: str
) -> None:
    with pytest.raises(error) as info:
        fanfuse.fuse(runs, **kwargs)
    assert message in str(info.value)


def test_weight_zero_list_is_ignored_for_score_methods_too() -> None:
    runs = [[("a", 1.0), ("b", 0.5)], [("c", 9.0), ("a", 2.0)]]
    assert fanfuse.fuse(runs, method="wsum", weights=[1.0, 0.0]) == fanfuse.fuse(runs[:1], method="wsum")


def test_readme_example() -> None:
    bm25 = [("d1", 12.0), ("d2", 9.5), ("d3", 7.1)]
    dense = (["d3", "d1", "d4"], [0.91, 0.88, 0.52])
    fused = fanfuse.fuse([bm25, dense], method="wsum", norm="min-max", weights=[0.3, 0.7], explain=True)
    assert fused.ids == ["d1", "d3", "d2", "d4"]
    assert fused.explain is not None
    parts = [(c.list, c.rank, c.score, c.contribution) for c in fused.explain[0]]
    assert parts == [(0, 1, 12.0, 0.3), (1, 2, 0.88, pytest.approx(0.7 * (0.88 - 0.52) / (0.91 - 0.52)))]
    assert parts[0][3] + parts[1][3] == fused.scores[0]


def test_numpy_ids_and_scores_equal_python_lists() -> None:
    import numpy as np

    ids = [np.array([3, 1, 2]), np.array([2, 5])]
    scores = [np.array([0.9, 0.5, 0.1]), np.array([3.0, 1.0], dtype=np.float32)]
    runs = list(zip(ids, scores, strict=True))
    pairs = [list(zip(i.tolist(), s.tolist(), strict=True)) for i, s in runs]
    for method in ("rrf", "combmnz", "dbsf"):
        fused = fanfuse.fuse(runs, method=method, explain=True)
        assert fused == fanfuse.fuse(pairs, method=method)
        assert fused.explain is not None and fused.explain[0][0].id == fused.ids[0]


@examples(0.04)  # share of the Hypothesis profile (CI=true: 25k examples)
@given(st.lists(scored_runs, max_size=4), st.sampled_from(RANK_METHODS + SCORE_METHODS), st.booleans())
def test_batch_equals_loop_of_single_calls(
    queries: list[list[list[tuple[str, float]]]], method: str, explain: bool
) -> None:
    expected = [fanfuse.fuse(runs, method=method, explain=explain) for runs in queries]
    got = fanfuse.fuse_batch(queries, method=method, explain=explain)
    assert got == expected
    for a, b in zip(got, expected, strict=True):
        assert (a.explain is None) == (b.explain is None)
        if a.explain is not None and b.explain is not None:
            assert [[(c.list, c.rank, c.id) for c in hit] for hit in a.explain] == [
                [(c.list, c.rank, c.id) for c in hit] for hit in b.explain
            ]


def test_batch_in_parallel_and_its_errors_name_the_query() -> None:
    queries = [
        [[(f"d{(q * 7 + i) % 50}", float(-i)) for i in range(20)], [(f"d{q % 13}", 1.0)]] for q in range(600)
    ]
    serial = fanfuse.fuse_batch(queries, method="combmnz", threads=1)
    assert fanfuse.fuse_batch(queries, method="combmnz", threads=2) == serial
    assert serial[5] == fanfuse.fuse(queries[5], method="combmnz")
    with pytest.raises(fanfuse.FusionError, match=r"queries\[1\]: runs\[0\] has no scores"):
        fanfuse.fuse_batch([[[("a", 1.0)]], [["a"]]], method="combsum")
    with pytest.raises(fanfuse.FusionError, match="norm must be one of"):
        fanfuse.fuse_batch([], method="combsum", norm="l3")


@pytest.mark.parametrize("options", [{"method": "combsum", "norm": "borda"}, {"method": "bordafuse"}])
def test_borda_points_over_no_candidates_give_an_empty_result(options: dict[str, str]) -> None:
    # Found by the CI Hypothesis profile: the reference divided by a candidate count of zero.
    assert fanfuse.fuse([[]], **options).ids == []
    assert reference.fuse([[]], **options)[0] == []
