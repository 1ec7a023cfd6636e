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


# Ids come from small pools, so that overlaps, duplicates and score ties are frequent: ASCII,
# accents, non-BMP characters, the empty id, ids sharing long prefixes (the kernel compares 8 bytes at
# a time), plus one arbitrary id per call (any Unicode text except lone surrogates, which cannot encode
# as UTF-8; any 64-bit integer). A list is drawn as one byte string indexing the pool: one draw
# instead of one per id keeps generation cheap enough for 100k examples, and it still shrinks.
STR_POOL = [
    "a",
    "b",
    "é",
    "🙂",
    "",
    "ab",
    "ba",
    "a🙂",
    "doc-00000001",
    "doc-00000002",
    "doc-000000010",
    "\x00",
    "Z",
    "\uffff",
    "\U0010ffff",
    "longer-id-with-a-shared-prefix-1",
    "longer-id-with-a-shared-prefix-2",
]
INT_POOL = [-3, -1, 0, 1, 2, 3, 5, 7, 11, 2**31, -(2**31), 2**53 + 1, I64_MIN, I64_MAX]
MAX_LISTS, MAX_LEN = 5, 16


# Strategies are built once, here: one built inside a composite is built and validated again on every
# draw, which cost more than the test itself (cProfile: half the time of the core properties).
LIST_BYTES = st.binary(max_size=MAX_LEN)
N_LISTS_DRAW = st.integers(0, MAX_LISTS)
PRESENT_BITS = st.integers(0, 15)
# Any Unicode text but lone surrogates (category Cs), which cannot encode as UTF-8.
ANY_TEXT = st.text(st.characters(blacklist_categories=["Cs"]), max_size=4)
ANY_I64 = st.integers(I64_MIN, I64_MAX)
BOOLS = st.booleans()


def ranked_list(draw: st.DrawFn, pool: list[Any]) -> list[Any]:
    return [pool[byte % len(pool)] for byte in draw(LIST_BYTES)]


K_POOL = [60.0, 59.0, 1.0, 0.5, 1e-12, 1e12, 1e300, 5e-324, 3.7]
WEIGHT_POOL = [0.0, 1.0, 0.5, 2.0, 0.1, 1 / 3, 7.25, 1e6, 5e-324]
K_DRAW = st.integers(-len(K_POOL), 2**40)
TOP_K_DRAW = st.sampled_from([None, 0, 1, 2, 3, 5, 10, 40, 10**9])
TIE_BREAK_DRAW = st.sampled_from(["rank", "id"])
WEIGHT_BYTES = [st.binary(min_size=n, max_size=n) for n in range(MAX_LISTS + 1)]
DTYPE_DRAW = st.sampled_from([None, tuple, *INT_DTYPES])


@st.composite
def options(draw: st.DrawFn, n_lists: int) -> dict[str, Any]:
    """k, weights, top_k and tie_break, each drawn or left to its default (pools and cheap integer
    draws rather than st.floats, which cost most of an example's generation time)."""
    opts: dict[str, Any] = {}
    present = draw(PRESENT_BITS)  # one bit per option
    if present & 1:
        k = draw(K_DRAW)
        opts["k"] = K_POOL[k] if k < 0 else (k + 1) / 2**20  # a pool value, or an arbitrary one
    if present & 2:
        opts["weights"] = [WEIGHT_POOL[b % len(WEIGHT_POOL)] for b in draw(WEIGHT_BYTES[n_lists])]
    if present & 4:
        opts["top_k"] = draw(TOP_K_DRAW)
    if present & 8:
        opts["tie_break"] = draw(TIE_BREAK_DRAW)
    return opts


OPTIONS = [options(n) for n in range(MAX_LISTS + 1)]  # built once (see LIST_BYTES)


@st.composite
def str_calls(draw: st.DrawFn) -> tuple[list[Any], dict[str, Any]]:
    """Lists of str ids (as lists or tuples) and options."""
    pool = [*STR_POOL, draw(ANY_TEXT)]
    lists: list[Any] = [ranked_list(draw, pool) for _ in range(draw(N_LISTS_DRAW))]
    lists = [tuple(lst) if draw(BOOLS) else lst for lst in lists]
    return lists, draw(OPTIONS[len(lists)])


@st.composite
def int_calls(draw: st.DrawFn) -> tuple[list[Any], dict[str, Any]]:
    """Lists of int ids, each a Python list, a tuple or a NumPy array of any integer dtype."""
    pool = [*INT_POOL, draw(ANY_I64)]
    lists: list[Any] = []
    for _ in range(draw(N_LISTS_DRAW)):
        dtype = draw(DTYPE_DRAW)
        if dtype is None or dtype is tuple:
            ids = ranked_list(draw, pool)
            lists.append(tuple(ids) if dtype is tuple else ids)
            continue
        info = np.iinfo(dtype)
        fits = [v for v in pool if info.min <= v <= info.max] + [info.min, min(info.max, I64_MAX)]
        lists.append(np.array(ranked_list(draw, fits), dtype=dtype))
    return lists, draw(OPTIONS[len(lists)])


# Calls with k and weights drawn from whole float ranges rather than pools, ids from a small alphabet
# (one call's ids all str or all int), and k always given (tests of explain read it back).
SHORT_TEXT_IDS = st.text(alphabet="abcdeé🙂", min_size=0, max_size=3)
SMALL_OR_ANY_INTS = st.integers(I64_MIN, I64_MAX) | st.integers(-5, 20)
ID_LISTS = st.lists(st.lists(SHORT_TEXT_IDS, max_size=12), max_size=6) | st.lists(
    st.lists(SMALL_OR_ANY_INTS, max_size=12), max_size=6
)
ANY_K = st.sampled_from([60.0, 1.0, 59.0]) | st.floats(1e-9, 1e9)
ANY_WEIGHTS = [
    st.lists(st.sampled_from([0.0, 1.0, 0.5, 2.0]) | st.floats(0, 1e6), min_size=n, max_size=n)
    for n in range(7)
]
SMALL_TOP_K = st.integers(0, 15)


@st.composite
def fusion_calls(draw: st.DrawFn) -> tuple[list[list[Any]], dict[str, Any]]:
    """Lists and options: k always, tie_break always, weights and top_k sometimes."""
    lists = draw(ID_LISTS)
    options: dict[str, Any] = {"k": draw(ANY_K), "tie_break": draw(TIE_BREAK_DRAW)}
    if draw(BOOLS):
        options["weights"] = draw(ANY_WEIGHTS[len(lists)])
    if draw(BOOLS):
        options["top_k"] = draw(SMALL_TOP_K)
    return lists, options
