"""The core equals the executable spec (fanfuse.reference) exactly: ids, and scores to the last bit;
for lists, tuples and NumPy arrays of any layout, one call at a time or in a batch.

Budget: under CI=true (25k base examples) these properties run about 100k examples together: shares
1.8 + 1.8 + 0.3 + 0.1 + 0.05 + 0.05 of the profile's max_examples (see rrf_strategies.examples).
"""

from __future__ import annotations

from typing import Any

import fanfuse
import numpy as np
import pytest
from fanfuse import reference
from hypothesis import given
from hypothesis import strategies as st
from rrf_strategies import OPTIONS, examples, fusion_calls, int_calls, str_calls

Call = tuple[list[Any], dict[str, Any]]


def assert_core_equals_reference(lists: list[Any], opts: dict[str, Any]) -> None:
    fused = fanfuse.rrf(lists, **opts)
    ids, scores = reference.rrf(lists, **opts)
    assert fused.ids == ids
    assert fused.scores == scores  # exact: the same terms summed in the same order
    assert [type(i) for i in fused.ids] == [type(i) for i in ids]


@examples(1.8)
@given(str_calls())
def test_str_ids_equal_reference(call: Call) -> None:
    assert_core_equals_reference(*call)


@examples(1.8)
@given(int_calls())
def test_int_ids_and_arrays_equal_reference(call: Call) -> None:
    assert_core_equals_reference(*call)


@examples(0.1)
@given(st.integers(0, 5).flatmap(lambda n: st.tuples(st.just([[]] * n), OPTIONS[n])))
def test_empty_lists_and_no_lists_give_nothing(call: Call) -> None:
    lists, opts = call
    assert fanfuse.rrf(lists, **opts).ids == []
    assert reference.rrf(lists, **opts) == ([], [])


@examples(0.3)
@given(str_calls(), st.sampled_from(["rank", "id"]))
def test_top_k_is_a_prefix_of_the_full_ranking(call: Call, tie_break: str) -> None:
    lists, opts = call
    opts = {**opts, "tie_break": tie_break, "top_k": None}
    full = fanfuse.rrf(lists, **opts)
    for top_k in (0, 1, 2, len(full) - 1, len(full), len(full) + 1):
        if top_k >= 0:
            part = fanfuse.rrf(lists, **{**opts, "top_k": top_k})
            assert list(part) == list(full)[:top_k]


@examples(0.05)
@given(fusion_calls())
def test_float_options_drawn_from_whole_ranges_equal_reference(call: Call) -> None:
    assert_core_equals_reference(*call)


@examples(0.05)
@given(fusion_calls())
def test_batch_equals_loop_of_single_calls(call: Call) -> None:
    lists, options = call
    queries = [lists, lists[::-1], lists[:1]]
    if "weights" in options:  # one weight per list: every query of the batch needs as many lists
        queries = [lists]
    assert fanfuse.rrf_batch(queries, **options) == [fanfuse.rrf(q, **options) for q in queries]


def test_numpy_arrays_of_any_dtype_equal_lists() -> None:
    rng = np.random.default_rng(7)
    arrays = [rng.integers(0, 50, size=30) for _ in range(4)]
    fused = fanfuse.rrf(arrays, top_k=10)
    assert fused == fanfuse.rrf([a.tolist() for a in arrays], top_k=10)
    assert fused.ids == reference.rrf([a.tolist() for a in arrays], top_k=10)[0]
    for dtype in np.typecodes["AllInteger"]:  # every integer type, signed and unsigned, of each size
        assert fanfuse.rrf([a.astype(dtype) for a in arrays], top_k=10) == fused


def test_non_contiguous_arrays_equal_their_contiguous_copies() -> None:
    rng = np.random.default_rng(11)
    grid = rng.integers(0, 40, size=(25, 3))
    views = {
        "every other element": rng.integers(0, 40, size=50)[::2],
        "a column of a 2-D array": grid[:, 1],
        "reversed": rng.integers(-(2**40), 2**40, size=25)[::-1],
        "a column, every third row, reversed": grid[::-3, 2],
        "a small dtype, strided": rng.integers(0, 100, size=60).astype(np.uint8)[1::3],
    }
    for name, view in views.items():
        assert not view.flags.c_contiguous, name
        copy = np.ascontiguousarray(view)
        assert copy.flags.c_contiguous and copy.tolist() == view.tolist()
        for lists in ([view], [view, grid[:, 0]], [grid[:, 0], view, view[::-1]]):
            expected = fanfuse.rrf([np.ascontiguousarray(a) for a in lists], top_k=None)
            assert fanfuse.rrf(lists, top_k=None) == expected, name
            assert expected.ids == reference.rrf([a.tolist() for a in lists], top_k=None)[0], name
        assert fanfuse.rrf_batch([[view], [grid[:, 2], view]]) == [
            fanfuse.rrf([copy]),
            fanfuse.rrf([np.ascontiguousarray(grid[:, 2]), copy]),
        ], name


def test_result_object_behaves_like_a_sequence_of_pairs() -> None:
    fused = fanfuse.rrf([["a", "b"], ["b", "c"]])
    assert len(fused) == 3
    assert list(fused) == list(zip(fused.ids, fused.scores, strict=True))
    assert fused[0] == ("b", 1 / 62 + 1 / 61)
    assert fused[-1][0] == "c"
    with pytest.raises(IndexError):
        fused[3]
    assert "Fused([('b'" in repr(fused)
