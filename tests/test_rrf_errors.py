"""Bad input: FusionError (a ValueError) for bad values, TypeError for bad types; messages name the
argument and say what is accepted."""

from __future__ import annotations

import array
import math
from typing import Any

import fanfuse
import numpy as np
import pytest
from fanfuse import FusionError, reference

LISTS = [["a", "b"], ["b", "c"]]


def test_fusion_error_is_a_value_error() -> None:
    assert issubclass(FusionError, ValueError)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"k": 0}, r"k must be a finite number > 0 \(got 0\); 60 is the usual value"),
        ({"k": -1.5}, r"k must be a finite number > 0 \(got -1.5\)"),
        ({"k": math.nan}, r"k must be a finite number > 0 \(got NaN\)"),
        ({"k": math.inf}, r"k must be a finite number > 0 \(got inf\)"),
        ({"weights": [1.0]}, r"weights has 1 entries but there are 2 lists; give one weight per list"),
        ({"weights": [1.0, -0.5]}, r"weights\[1\] must be a finite number >= 0 \(got -0.5\)"),
        ({"weights": [math.nan, 1.0]}, r"weights\[0\] must be a finite number >= 0 \(got NaN\)"),
        ({"weights": [1.0, math.inf]}, r"weights\[1\] must be a finite number >= 0 \(got inf\)"),
        ({"top_k": -1}, r"top_k must be None or an int >= 0 \(got -1\)"),
        ({"tie_break": "score"}, r"tie_break must be 'rank' or 'id' \(got 'score'\)"),
    ],
)
def test_bad_option_values(options: dict[str, Any], message: str) -> None:
    with pytest.raises(FusionError, match=message):
        fanfuse.rrf(LISTS, **options)
    with pytest.raises(FusionError, match=message.split(" ")[0]):
        fanfuse.rrf_batch([LISTS], **options)
    with pytest.raises(FusionError):  # the spec rejects the same calls
        reference.rrf(LISTS, **options)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"weights": [1.0, "2"]}, r"weights\[1\] must be a number \(got str\)"),
        ({"weights": [1.0, None]}, r"weights\[1\] must be a number \(got NoneType\)"),
        ({"weights": "12"}, r"weights must be a sequence of numbers \(one per list\) \(got str\)"),
        ({"top_k": 2.0}, r"top_k must be None or an int >= 0 \(got float\)"),
        ({"top_k": True}, r"top_k must be None or an int >= 0 \(got bool\)"),
    ],
)
def test_bad_option_types(options: dict[str, Any], message: str) -> None:
    with pytest.raises(TypeError, match=message):
        fanfuse.rrf(LISTS, **options)


@pytest.mark.parametrize(
    ("lists", "error", "message"),
    [
        ([["a", 1]], TypeError, r"lists\[0\]\[1\] is an int, but lists\[0\]\[0\] is a str: all ids"),
        ([[1], ["a"]], TypeError, r"lists\[1\]\[0\] is a str, but lists\[0\]\[0\] is an int"),
        ([["a"], np.array([1])], TypeError, r"lists\[1\]\[0\] is an int, but lists\[0\]\[0\] is a str"),
        ([[1, 2**63]], FusionError, r"lists\[0\]\[1\] = 9223372036854775808 does not fit"),
        ([[-(2**63) - 1]], FusionError, r"lists\[0\]\[0\] = -9223372036854775809 does not fit"),
        ([np.array([1, 2**64 - 1], dtype=np.uint64)], FusionError, r"lists\[0\]\[1\] = 18446744073709551615"),
        ([np.zeros((2, 2), dtype=np.int64)], FusionError, r"lists\[0\] is a 2-D array of shape \(2, 2\)"),
        ([np.array([1.0, 2.0])], TypeError, r"lists\[0\] is an ndarray of dtype float64; .*integer dtype"),
        ([[1.0]], TypeError, r"lists\[0\]\[0\] is a float; ids must be str, or int"),
        ([[True]], TypeError, r"lists\[0\]\[0\] is a bool; ids must be str, or int"),
        ([[1, np.True_]], TypeError, r"lists\[0\]\[1\] is a bool_?; ids must be str, or int"),
        ([[None]], TypeError, r"lists\[0\]\[0\] is a NoneType; ids must be str, or int"),
        (["ab"], TypeError, r"lists\[0\] is a str but must be a ranked list of ids; wrap a single list"),
        ("ab", TypeError, r"lists must be a sequence of ranked id lists \(got str\)"),
        ([{"a", "b"}], TypeError, r"lists\[0\] is a set which has no rank order; pass a list, tuple or 1-D"),
        ([frozenset("a")], TypeError, r"lists\[0\] is a frozenset which has no rank order"),
        ({("a",), ("b",)}, TypeError, r"lists has no order \(got set\); pass a list or tuple"),
        ([["a", "\ud800"]], FusionError, r"lists\[0\]\[1\] is not valid Unicode \(a lone surrogate\)"),
        ([3], TypeError, r"lists\[0\] is an int but must be a ranked list of ids"),
    ],
)
def test_bad_lists(lists: Any, error: type[Exception], message: str) -> None:
    with pytest.raises(error, match=message):
        fanfuse.rrf(lists)


@pytest.mark.parametrize("threads", [1, 2])
def test_batch_ids_are_one_kind_across_chunks(threads: int) -> None:
    # Query 300 lies in a later chunk (of 64 queries) than query 0, and the batch reaches the pool.
    queries: list[Any] = [[["a"]]] * 300 + [[[1]]]
    with pytest.raises(
        TypeError, match=r"queries\[300\]\[0\]\[0\] is an int, but queries\[0\]\[0\]\[0\] is a str"
    ):
        fanfuse.rrf_batch(queries, threads=threads)


@pytest.mark.parametrize("threads", [1, 2])
def test_a_fusion_error_in_a_later_chunk_names_its_query(threads: int) -> None:
    # The kernel (not the copy) refuses query 300: on the pool, its chunk fails while the others fuse.
    scored = [[("a", 1.0)], [("b", 0.5)]]
    queries: list[Any] = [scored] * 300 + [[["a"], [("b", 0.5)]]] + [scored] * 100
    with pytest.raises(FusionError, match=r"^queries\[300\]: runs\[0\] has no scores but method 'combsum'"):
        fanfuse.fuse_batch(queries, method="combsum", threads=threads)
    assert len(fanfuse.fuse_batch(queries[:300] * 2, method="combsum", threads=threads)) == 600


def test_batch_errors_name_the_query() -> None:
    with pytest.raises(TypeError, match=r"queries\[1\]\[0\]\[0\] is an int, but queries\[0\]\[0\]\[0\]"):
        fanfuse.rrf_batch([[["a"]], [[1]]])
    with pytest.raises(FusionError, match=r"queries\[1\] has 1 lists but weights has 2 entries"):
        fanfuse.rrf_batch([LISTS, LISTS[:1]], weights=[1.0, 1.0])
    with pytest.raises(TypeError, match=r"queries\[0\] must be a sequence of ranked id lists \(got str\)"):
        fanfuse.rrf_batch(["ab"])
    with pytest.raises(
        fanfuse.OutOfRange,
        match=r"threads must be None \(FANFUSE_NUM_THREADS, else 1\) or an int from 1 to 1024 \(got 0\)",
    ):
        fanfuse.rrf_batch([LISTS], threads=0)
    with pytest.raises(FusionError, match=r"k must be a finite number > 0"):
        fanfuse.rrf_batch([], k=0)  # options are checked even for an empty batch


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: fanfuse.rrf([3]), r"^lists\[0\] is an int but must be a ranked list of ids"),
        (lambda: fanfuse.rrf([[object()]]), r"^lists\[0\]\[0\] is an object; ids must be"),
        (lambda: fanfuse.rrf([[...]]), r"^lists\[0\]\[0\] is an ellipsis; ids must be"),
        (lambda: fanfuse.fuse([[("a", 1.0), 3]]), r"^runs\[0\]\[1\] is an int but the run started with"),
        (lambda: fanfuse.rrf([array.array("d", [1.0])]), r"^lists\[0\] is an array of dtype"),
        (lambda: fanfuse.rrf([np.array([1.0])]), r"^lists\[0\] is an ndarray of dtype float64"),
        (lambda: fanfuse.rrf_batch([[3]]), r"^queries\[0\]\[0\] is an int but must be a ranked list"),
        (lambda: fanfuse.rrf([{"a": 1}]), r"^lists\[0\] is a dict which has no rank order"),
    ],
)
def test_a_values_type_is_named_with_its_article(call: Any, message: str) -> None:
    """Every refusal of a list or id names the value's type with the article English gives it."""
    with pytest.raises(TypeError, match=message):
        call()
