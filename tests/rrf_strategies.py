"""Hypothesis strategies for RRF calls, shared by the property tests of the core."""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import settings
from hypothesis import strategies as st

INT_DTYPES = [np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64]
I64_MIN, I64_MAX = -(2**63), 2**63 - 1


def examples(share: float) -> settings:
    """This test's share of the active profile's example budget (dev: small; CI=true: "ci")."""
    return settings(max_examples=max(10, int(settings.default.max_examples * share)))


# A tiny alphabet (with a non-BMP character) makes overlaps, duplicates and score ties frequent;
# the wide one covers all of Unicode except lone surrogates (which cannot encode as UTF-8).
str_ids = st.text(alphabet="abé🙂", max_size=2) | st.text(st.characters(codec="utf-8"), max_size=6)
int_ids = st.integers(-3, 12) | st.integers(I64_MIN, I64_MAX) | st.sampled_from([I64_MIN, I64_MAX, 0])


@st.composite
def options(draw: st.DrawFn, n_lists: int) -> dict[str, Any]:
    """k, weights, top_k and tie_break, each drawn or left to its default."""
    opts: dict[str, Any] = {}
    if draw(st.booleans()):
        opts["k"] = draw(st.sampled_from([60.0, 59.0, 1.0, 1e-12, 1e12]) | st.floats(1e-300, 1e300))
    if draw(st.booleans()):
        weight = st.sampled_from([0.0, 1.0, 0.5, 2.0, 5e-324]) | st.floats(0, 1e6)
        opts["weights"] = draw(st.lists(weight, min_size=n_lists, max_size=n_lists))
    if draw(st.booleans()):
        opts["top_k"] = draw(st.sampled_from([None, 0, 1, 2, 10**9]) | st.integers(0, 40))
    if draw(st.booleans()):
        opts["tie_break"] = draw(st.sampled_from(["rank", "id"]))
    return opts


@st.composite
def str_calls(draw: st.DrawFn) -> tuple[list[Any], dict[str, Any]]:
    """Lists of str ids (as lists or tuples) and options."""
    lists = draw(st.lists(st.lists(str_ids, max_size=20), max_size=6))
    lists = [tuple(lst) if draw(st.booleans()) else lst for lst in lists]
    return lists, draw(options(len(lists)))


@st.composite
def int_calls(draw: st.DrawFn) -> tuple[list[Any], dict[str, Any]]:
    """Lists of int ids, each a Python list, a tuple or a NumPy array of any integer dtype."""
    lists: list[Any] = []
    for _ in range(draw(st.integers(0, 6))):
        dtype = draw(st.sampled_from([None, *INT_DTYPES]))
        if dtype is None:
            lists.append(draw(st.lists(int_ids, max_size=20)))
            continue
        info = np.iinfo(dtype)
        small = st.integers(max(info.min, -3), min(info.max, 12))
        values = draw(st.lists(small | st.integers(info.min, min(info.max, I64_MAX)), max_size=20))
        lists.append(np.array(values, dtype=dtype))
    return lists, draw(options(len(lists)))
