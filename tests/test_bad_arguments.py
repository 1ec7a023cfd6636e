"""Every number argument of the public API, given a value out of range or of the wrong type, raises
FusionError (a bad value of fusion input or a fusion option), OutOfRange (of another setting) or
TypeError (bad type) with a message that names it: never pyo3's
OverflowError, a ZeroDivisionError or a message that leaves the argument to guess.

Bool is refused wherever a number is expected (``top_k=True`` is a mistake, not 1). Each number's
range is generated for every entry point in test_api_numbers.py; this table holds the rest."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import fanfuse
import numpy as np
import pytest
from fanfuse import FusionError, InvalidSetting, OutOfRange
from fanfuse.tune import tune

LISTS = [["a", "b"], ["b", "c"]]
SCORED = [[("a", 0.5), ("b", 0.25)], [("b", 1.0), ("c", 0.5)]]


@dataclass
class Inputs:
    """Small valid inputs that every call below completes with."""

    paths: list[str]
    output: Path
    runs: list[fanfuse.Run]
    qrels: fanfuse.Qrels


@pytest.fixture(scope="module")
def inputs(small_runs: dict[str, str], tmp_path_factory: pytest.TempPathFactory) -> Inputs:
    paths = [small_runs["run0"], small_runs["run1"]]
    output = tmp_path_factory.mktemp("bad-arguments") / "out.trec"
    runs = [fanfuse.read_run(p) for p in paths]
    return Inputs(paths, output, runs, fanfuse.read_qrels(small_runs["qrels"]))


Call = Callable[..., Any]
CALLS: dict[str, Call] = {
    "rrf": lambda f, **kw: fanfuse.rrf(LISTS, **kw),
    "rrf_batch": lambda f, **kw: fanfuse.rrf_batch([LISTS], **kw),
    "fuse": lambda f, **kw: fanfuse.fuse(SCORED, **kw),
    "fuse_batch": lambda f, **kw: fanfuse.fuse_batch([SCORED], **kw),
    "fuse_runs": lambda f, **kw: fanfuse.fuse_runs(f.runs, **kw),
    "fuse_files": lambda f, **kw: fanfuse.fuse_files(f.paths, str(f.output), **kw),
    "randomization_test": lambda f, a=(0.5, 0.25, 0.75), b=(0.25, 0.25, 0.5), **kw: (
        fanfuse.randomization_test(a, b, **kw)
    ),
    "paired_t": lambda f, a=(0.5, 0.25, 0.75), b=(0.25, 0.5, 0.25): fanfuse.paired_t(a, b),
    "from_columns": lambda f, **kw: fanfuse.Run.from_columns(
        kw.get("qids", ["q1"]), kw.get("docids", ["d1"]), kw.get("scores", [1.0])
    ),
    "evaluate": lambda f, **kw: fanfuse.evaluate(f.runs[0], f.qrels, **kw),
    "compare": lambda f, **kw: fanfuse.compare(f.runs, f.qrels, ["ndcg@10"], **kw),
    "tune": lambda f, **kw: tune(f.runs, f.qrels, **{"folds": 2, "ks": [60.0], "weight_levels": [1.0], **kw}),
}

# (value, exception): the same bad values for every number setting (not a fusion option) of a kind;
# the message must name it.
COUNT_VALUES: list[tuple[Any, type[Exception]]] = [
    (-1, OutOfRange),
    (-(2**70), OutOfRange),
    (2.0, TypeError),
    (1.5, TypeError),
    ("3", TypeError),
    (True, TypeError),
    (np.float64(2.0), TypeError),
]
ITERATIONS_VALUES = [*COUNT_VALUES, (0, OutOfRange), (2**32, OutOfRange), (2**70, OutOfRange)]
SEED_VALUES = [*COUNT_VALUES, (2**64, OutOfRange), (2**70, OutOfRange)]
WEIGHTS_VALUES: list[tuple[Any, type[Exception], str]] = [
    ([math.nan, 1.0], FusionError, "weights[0]"),
    ([1.0, math.inf], FusionError, "weights[1]"),
    ([1.0, -0.5], FusionError, "weights[1]"),
    ([2**2000, 1.0], FusionError, "weights[0]"),
    ([1e308, 1e308], FusionError, "weights sum to inf"),
    ([True, 1.0], TypeError, "weights[0]"),
    (["1", 1.0], TypeError, "weights[0]"),
    ("11", TypeError, "weights must be"),
    ([], FusionError, "weights has 0 entries"),
    (np.array([[1.0, 2.0]]), FusionError, "weights is a 2-D array of shape (1, 2); it must be 1-D"),
]
SAMPLE_VALUES: list[tuple[Any, type[Exception], str]] = [
    ([0.5, math.nan, 0.25], FusionError, "[1] is NaN"),
    ([0.5, 0.25, -math.inf], FusionError, "[2] is -inf"),
    (["x", 0.5, 0.25], TypeError, "[0] must be a number"),
    ([True, 0.5, 0.25], TypeError, "[0] must be a number"),
    ("abc", TypeError, " must be a sequence of numbers"),
    (np.array([[0.5, 0.25, 0.75]]), FusionError, " is a 2-D array"),
    ([0.5], FusionError, "equal lengths"),
]


def rows() -> list[Any]:
    out = []

    def add(call: str, name: str, value: Any, error: type[Exception], named: str | None = None) -> None:
        named = named or f"{name} must be"
        out.append(pytest.param(call, {name: value}, error, named, id=f"{call}-{name}={value!r}"[:90]))

    # Each number's range, for every entry point of fanfuse.__all__, is generated from fanfuse.limits
    # in test_api_numbers.py; here, what a range alone does not say, and entry points outside __all__.
    fusion_calls = ["rrf", "rrf_batch", "fuse", "fuse_batch", "fuse_runs", "fuse_files"]
    for call in fusion_calls:
        for value, error in [(2**2000, FusionError), (None, TypeError), ([60.0], TypeError)]:
            add(call, "k", value, error)
        for value, error, named in WEIGHTS_VALUES:
            add(call, "weights", value, error, named)
    for call in ["fuse", "fuse_batch"]:  # checked whichever method is asked for
        add(call, "phi", 1.0, FusionError)
        add(call, "sigma", 1.5, FusionError)
    for value, error in ITERATIONS_VALUES:
        add("compare", "iterations", value, error)
    for value, error in SEED_VALUES:
        add("compare", "seed", value, error)
    for call in ["randomization_test", "paired_t"]:
        for side in ("a", "b"):
            for value, error, named in SAMPLE_VALUES:
                add(call, side, value, error, f"{side}{named}" if named.startswith(("[", " ")) else named)
    for value, error, named in [
        ([math.nan], FusionError, "score NaN is not finite"),
        (["x"], TypeError, "scores[0] must be a number"),
        ([True], TypeError, "scores[0] must be a number"),
        ("1", TypeError, "scores must be a sequence"),
    ]:
        add("from_columns", "scores", value, error, named)
    add("from_columns", "qids", "q1", TypeError, "qids must be a sequence")
    add("from_columns", "docids", [7], TypeError, "docids[0] must be a str")
    add("evaluate", "metrics", "ndcg@10", TypeError, "metrics must be a sequence")
    add("evaluate", "metrics", [10], TypeError, "metrics[0] must be a str")
    add(
        "evaluate",
        "metrics",
        ["ndcg@0"],
        InvalidSetting,
        "metric 'ndcg@0': the cut-off after @ (or _) must be an integer >= 1",
    )
    for value, error in [
        (0, OutOfRange),
        (1, OutOfRange),
        (-1, OutOfRange),
        (True, TypeError),
        (2.0, TypeError),
    ]:
        add("tune", "folds", value, error)
    for value, error in [(-1, OutOfRange), (2**64, OutOfRange), (True, TypeError), (0.5, TypeError)]:
        add("tune", "seed", value, error)
    for value, error, named in [
        ([math.nan], FusionError, "ks[0] must be a finite number > 0"),
        ([60.0, 0.0], FusionError, "ks[1] must be a finite number > 0"),
        ([math.inf], FusionError, "ks[0]"),
        ([True], TypeError, "ks[0] must be a finite number > 0"),
        (["60"], TypeError, "ks[0] must be a finite number > 0"),
        ([], FusionError, "ks is empty"),
        ("60", TypeError, "ks must be"),
    ]:
        add("tune", "ks", value, error, named)
    for value, error, named in [
        ([math.nan, 1.0], FusionError, "weight_levels[0] must be a finite number >= 0"),
        ([1.0, -1.0], FusionError, "weight_levels[1] must be a finite number >= 0"),
        ([0.0], FusionError, "weight_levels has no level > 0"),
        ([], FusionError, "weight_levels is empty"),
    ]:
        add("tune", "weight_levels", value, error, named)
    add("tune", "top_k", -1, FusionError)
    return out


@pytest.mark.parametrize(("call", "options", "error", "named"), rows())
def test_bad_argument(
    inputs: Inputs, call: str, options: dict[str, Any], error: type[Exception], named: str
) -> None:
    with pytest.raises(Exception) as raised:  # the type is asserted exactly below
        CALLS[call](inputs, **options)
    assert type(raised.value) is error, f"{type(raised.value).__name__}: {raised.value}"
    assert named in str(raised.value)
    assert not inputs.output.exists()  # fuse_files checks its options before it writes anything


def test_every_call_of_the_table_succeeds_with_its_defaults(inputs: Inputs) -> None:
    # The table's failures come from the bad argument, not from the rest of the call.
    for name, call in CALLS.items():
        kwargs = {"metrics": ["ndcg@10"]} if name == "evaluate" else {}
        assert call(inputs, **kwargs) is not None, name
    inputs.output.unlink()


@pytest.mark.parametrize("value", [0, 3, 2**70, np.int64(2), None])
def test_top_k_accepts_any_int_from_zero(value: Any) -> None:
    # A top_k beyond every list keeps every hit, so a huge one is not an error.
    expected = fanfuse.rrf(LISTS).ids[: None if value is None else int(min(value, 99))]
    assert fanfuse.rrf(LISTS, top_k=value).ids == expected
    assert fanfuse.fuse(SCORED, top_k=value).ids == expected


@pytest.mark.parametrize("threads", [1, 2, 1024, np.int32(2)])
def test_threads_accepts_ints_from_one_to_1024(threads: Any) -> None:
    assert fanfuse.rrf_batch([LISTS], threads=threads) == [fanfuse.rrf(LISTS)]
    assert fanfuse.fuse_batch([SCORED], threads=threads) == [fanfuse.fuse(SCORED)]


def test_numbers_may_be_ints_or_numpy_scalars() -> None:
    assert fanfuse.rrf(LISTS, k=60) == fanfuse.rrf(LISTS, k=np.float32(60.0)) == fanfuse.rrf(LISTS)
    assert fanfuse.rrf(LISTS, weights=np.array([1, 2])) == fanfuse.rrf(LISTS, weights=[1.0, 2.0])
    assert fanfuse.rrf(LISTS, weights=np.array([1.0, 2.0])) == fanfuse.rrf(LISTS, weights=[1.0, 2.0])
    assert fanfuse.randomization_test(np.array([0.5, 0.25]), (0, 0)) == fanfuse.randomization_test(
        [0.5, 0.25], [0.0, 0.0]
    )


def test_a_frame_with_a_score_that_is_not_a_number_names_it() -> None:
    pd = pytest.importorskip("pandas")
    from fanfuse.tables import from_frame

    frame = pd.DataFrame({"qid": ["q1", "q1"], "docid": ["a", "b"], "score": [1.0, "x"]})
    # pyarrow's conversion of the frame refuses it, naming the value and the column (not the row).
    with pytest.raises(TypeError, match=r"^frame: .*'x' with type str.*column score"):
        from_frame(frame)


@pytest.mark.parametrize(
    ("index", "error", "message"),
    [
        (2**70, IndexError, "Fused index 1180591620717411303424 out of range for 3 hits"),
        (-(2**70), IndexError, "out of range for 3 hits"),
        (3, IndexError, "Fused index 3 out of range for 3 hits"),
        ("0", TypeError, "Fused indices must be integers, not str"),
        (1.0, TypeError, "Fused indices must be integers, not float"),
    ],
)
def test_fused_index_out_of_range_or_of_the_wrong_type(
    index: Any, error: type[Exception], message: str
) -> None:
    fused = fanfuse.rrf(LISTS)
    with pytest.raises(error) as raised:
        fused[index]
    assert type(raised.value) is error
    assert message in str(raised.value)
    assert fused[-3] == fused[0] == (fused.ids[0], fused.scores[0])


def test_tune_takes_numpy_grids_and_ints(inputs: Inputs) -> None:
    plain = tune(inputs.runs, inputs.qrels, folds=2, ks=[10.0, 60.0], weight_levels=[0.5, 1.0])
    numpy = tune(
        inputs.runs,
        inputs.qrels,
        folds=np.int64(2),
        ks=np.array([10, 60]),
        weight_levels=np.array([0.5, 1.0]),
    )
    assert numpy == plain
