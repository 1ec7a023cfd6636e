"""The core equals the executable spec (fanfuse.reference) exactly: ids, and scores to the last bit.

Budget: under CI=true (25k base examples) these properties run 100k examples together: shares 1.8 + 1.8
+ 0.3 + 0.1 of the profile's max_examples (see rrf_strategies.examples).
"""

from __future__ import annotations

from typing import Any

import fanfuse
from fanfuse import reference
from hypothesis import given
from hypothesis import strategies as st
from rrf_strategies import OPTIONS, examples, int_calls, str_calls

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
