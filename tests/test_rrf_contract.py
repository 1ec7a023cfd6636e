"""The Rust core against the executable spec (fanfuse.reference): ids and scores exactly equal."""

from __future__ import annotations

from typing import Any

import fanfuse
import numpy as np
import pytest
from fanfuse import reference
from hypothesis import given
from hypothesis import strategies as st
from rrf_strategies import examples

# Small alphabets make overlaps, duplicates and score ties frequent.
str_ids = st.text(alphabet="abcdeé🙂", min_size=0, max_size=3)
int_ids = st.integers(min_value=-(2**63), max_value=2**63 - 1) | st.integers(-5, 20)


# Built once: a strategy built inside the composite is rebuilt and validated on every draw.
# One call's ids are all str or all int.
ID_LISTS = st.lists(st.lists(str_ids, max_size=12), max_size=6) | st.lists(
    st.lists(int_ids, max_size=12), max_size=6
)
K_DRAW = st.sampled_from([60.0, 1.0, 59.0]) | st.floats(1e-9, 1e9)
TIE_BREAK_DRAW = st.sampled_from(["rank", "id"])
WEIGHTS_DRAW = [
    st.lists(st.sampled_from([0.0, 1.0, 0.5, 2.0]) | st.floats(0, 1e6), min_size=n, max_size=n)
    for n in range(7)
]
TOP_K_DRAW = st.integers(0, 15)


@st.composite
def fusion_calls(draw: st.DrawFn) -> tuple[list[list[Any]], dict[str, Any]]:
    lists = draw(ID_LISTS)
    options: dict[str, Any] = {"k": draw(K_DRAW), "tie_break": draw(TIE_BREAK_DRAW)}
    if draw(st.booleans()):
        options["weights"] = draw(WEIGHTS_DRAW[len(lists)])
    if draw(st.booleans()):
        options["top_k"] = draw(TOP_K_DRAW)
    return lists, options


@examples(0.05)  # the broader properties are in test_rrf_properties.py
@given(fusion_calls())
def test_core_equals_reference(call: tuple[list[list[Any]], dict[str, Any]]) -> None:
    lists, options = call
    fused = fanfuse.rrf(lists, **options)
    ids, scores = reference.rrf(lists, **options)
    assert fused.ids == ids
    assert fused.scores == scores  # exact: same terms summed in the same order


@examples(0.05)
@given(fusion_calls())
def test_batch_equals_loop_of_single_calls(call: tuple[list[list[Any]], dict[str, Any]]) -> None:
    lists, options = call
    queries = [lists, lists[::-1], lists[:1]]
    if "weights" in options:
        queries = [lists]
    assert fanfuse.rrf_batch(queries, **options) == [fanfuse.rrf(q, **options) for q in queries]


def test_numpy_arrays_equal_lists() -> None:
    rng = np.random.default_rng(7)
    arrays = [rng.integers(0, 50, size=30) for _ in range(4)]
    fused = fanfuse.rrf(arrays, top_k=10)
    assert fused == fanfuse.rrf([a.tolist() for a in arrays], top_k=10)
    assert fused.ids == reference.rrf([a.tolist() for a in arrays], top_k=10)[0]
    for dtype in (np.int8, np.uint16, np.int32, np.uint64):
        assert fanfuse.rrf([a.astype(dtype) for a in arrays], top_k=10) == fused
    assert fanfuse.rrf([a[::-1][::-1] for a in arrays], top_k=10) == fused  # strided views


def test_result_object_behaves_like_a_sequence_of_pairs() -> None:
    fused = fanfuse.rrf([["a", "b"], ["b", "c"]])
    assert len(fused) == 3
    assert list(fused) == list(zip(fused.ids, fused.scores, strict=True))
    assert fused[0] == ("b", 1 / 62 + 1 / 61)
    assert fused[-1][0] == "c"
    with pytest.raises(IndexError):
        fused[3]
    assert "Fused([('b'" in repr(fused)
