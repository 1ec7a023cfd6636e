"""fanfuse.fuse for RRF: the same result as fanfuse.rrf, and an explain that accounts for every score."""

from __future__ import annotations

import functools
import operator
from typing import Any

import fanfuse
import pytest
from hypothesis import given
from hypothesis import strategies as st
from rrf_strategies import examples, fusion_calls


def in_order_sum(values: list[float]) -> float:
    """Left-to-right float addition (builtin sum may compensate rounding on newer Pythons)."""
    return functools.reduce(operator.add, values, 0.0)


@examples(0.08)  # share of the Hypothesis profile (CI=true: 25k examples)
@given(fusion_calls())
def test_fuse_equals_rrf_on_plain_id_lists(call: tuple[list[list[Any]], dict[str, Any]]) -> None:
    lists, options = call
    expected = fanfuse.rrf(lists, **options)
    plain = fanfuse.fuse(lists, **options)
    explained = fanfuse.fuse(lists, explain=True, **options)
    assert plain == expected
    assert plain.explain is None
    assert explained.ids == expected.ids
    assert explained.scores == expected.scores  # the explained path sums the same terms in the same order


@examples(0.04)  # share of the Hypothesis profile (CI=true: 25k examples)
@given(fusion_calls())
def test_explain_accounts_for_every_score(call: tuple[list[list[Any]], dict[str, Any]]) -> None:
    lists, options = call
    fused = fanfuse.fuse(lists, explain=True, **options)
    assert fused.explain is not None
    assert len(fused.explain) == len(fused.ids)
    weights = options.get("weights") or [1.0] * len(lists)
    k = options["k"]
    for doc, score, parts in zip(fused.ids, fused.scores, fused.explain, strict=True):
        assert in_order_sum([c.contribution for c in parts]) == score
        containing = [i for i, lst in enumerate(lists) if doc in lst and weights[i] != 0.0]
        assert [c.list for c in parts] == containing  # every list that has it, in list order
        for c in parts:
            assert c.rank == lists[c.list].index(doc) + 1  # first occurrence, 1-based
            assert c.id == doc
            assert c.score is None
            assert c.contribution == weights[c.list] / (k + c.rank)


def test_explain_reports_input_scores_and_ranks() -> None:
    runs = [[("a", 3.5), ("b", 1.0)], (["b", "c"], [0.9, 0.1]), ["c", "a"]]
    fused = fanfuse.fuse(runs, explain=True)
    assert fused == fanfuse.rrf([["a", "b"], ["b", "c"], ["c", "a"]])
    assert fused.explain is not None
    by_id = dict(zip(fused.ids, fused.explain, strict=True))
    assert [(c.list, c.rank, c.score) for c in by_id["a"]] == [(0, 1, 3.5), (2, 2, None)]
    assert [(c.list, c.rank, c.score) for c in by_id["b"]] == [(0, 2, 1.0), (1, 1, 0.9)]
    assert "Contribution(list=0, rank=1, id='a', score=3.5" in repr(by_id["a"][0])


def test_explain_is_a_fresh_list_on_every_access() -> None:
    # Like ids and scores: a caller editing what it got cannot change the result another caller reads.
    fused = fanfuse.fuse([["a", "b"], ["b"]], explain=True)
    first = fused.explain
    assert first is not None
    before = [[repr(c) for c in row] for row in first]
    first[0].clear()
    first.append([])
    again = fused.explain
    assert again is not None and again is not first
    assert [[repr(c) for c in row] for row in again] == before


def test_duplicate_policies_for_rrf() -> None:
    chunks = [["doc1", "doc2", "doc1", "doc1"], ["doc2"]]
    first = fanfuse.fuse(chunks)
    assert first == fanfuse.rrf(chunks)
    summed = fanfuse.fuse(chunks, duplicates="sum", explain=True)
    assert summed.ids == ["doc1", "doc2"]
    assert summed.scores[0] == 1 / 61 + 1 / 63 + 1 / 64
    assert summed.explain is not None
    assert summed.explain[0][0].rank == 1  # the merged entry keeps the first rank
    assert fanfuse.fuse(chunks, duplicates="max").scores == first.scores


@pytest.mark.parametrize(
    ("kwargs", "runs", "error", "message"),
    [
        ({"method": "nope"}, [["a"]], fanfuse.FusionError, "method must be one of"),
        ({"duplicates": "last"}, [["a"]], fanfuse.FusionError, "'first', 'max' or 'sum'"),
        ({"k": -1.0}, [["a"]], fanfuse.FusionError, "k must be a finite number > 0"),
        ({}, [[("a", float("nan"))]], fanfuse.FusionError, "runs[0][0][1] is NaN"),
        ({}, [(["a", "b"], [1.0])], fanfuse.FusionError, "runs[0] has 2 ids but 1 scores"),
        ({}, [[("a", 1.0), "b"]], TypeError, "runs[0][1] is a str but the run started with"),
        ({}, [[("a", "x")]], TypeError, "runs[0][0][1] must be a number"),
    ],
)
def test_bad_input_names_the_argument(
    kwargs: dict[str, Any], runs: list[Any], error: type[Exception], message: str
) -> None:
    with pytest.raises(error) as info:
        fanfuse.fuse(runs, **kwargs)
    assert message in str(info.value)


@examples(0.04)  # share of the Hypothesis profile (CI=true: 25k examples)
@given(st.lists(st.lists(st.sampled_from("abcdef"), max_size=8), max_size=4))
def test_pairs_and_parallel_arrays_give_the_same_result(lists: list[list[str]]) -> None:
    pairs = [[(doc, float(-i)) for i, doc in enumerate(lst)] for lst in lists]
    parallel = [(lst, [float(-i) for i in range(len(lst))]) for lst in lists]
    assert fanfuse.fuse(pairs) == fanfuse.fuse(parallel) == fanfuse.rrf(lists)
