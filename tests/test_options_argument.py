"""`options=` given something other than a `fanfuse.FusionOptions` (a dict of options, a number) is
refused by every entry point that takes it with a TypeError naming the call, the argument, the class it
takes and the keywords way, never pyo3's message naming the value's private base class. The entry points
are every public one whose `options` parameter is typed as a FusionOptions (the API walk of
`test_api_numbers.py`) and every fusion entry point of the core (`test_fusion_options.py`'s)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from api_calls import CALLS, Context
from test_api_numbers import entry_points
from test_fusion_options import ENTRY_POINTS, Calls

NOT_OPTIONS = [{"k": 10.0}, 1.5]
PUBLIC = sorted(entry for entry, params in entry_points() if "FusionOptions" in params.get("options", ""))


@pytest.fixture(scope="module")
def context(
    small_runs: dict[str, str], tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest
) -> Iterator[Context]:
    with Context(small_runs, tmp_path_factory.mktemp("options-argument"), request.getfixturevalue) as context:
        yield context


@pytest.fixture(scope="module")
def calls(small_runs: dict[str, str], tmp_path_factory: pytest.TempPathFactory) -> Calls:
    return Calls(small_runs, tmp_path_factory.mktemp("options-argument-core"))


def assert_refused(raised: pytest.ExceptionInfo[TypeError], value: Any) -> None:
    message = str(raised.value)
    assert "takes options= as a fanfuse.FusionOptions" in message, message
    assert f"(got {type(value).__name__})" in message and "or the options as keywords" in message, message
    assert "_FusionOptions" not in message, message


def test_the_walk_finds_the_public_entry_points() -> None:
    assert {"rrf", "fuse", "fuse_runs", "fuse_files", "fuse_table", "dask.fuse_runs"} <= set(PUBLIC)


@pytest.mark.parametrize("value", NOT_OPTIONS, ids=type)
@pytest.mark.parametrize("entry", PUBLIC)
def test_a_public_entry_point_refuses_other_options(context: Context, entry: str, value: Any) -> None:
    if entry.startswith("dask."):
        pytest.importorskip("dask")
    with pytest.raises(TypeError) as raised:
        CALLS[entry](context, options=value)
    assert_refused(raised, value)


@pytest.mark.parametrize("value", NOT_OPTIONS, ids=type)
@pytest.mark.parametrize("name", ENTRY_POINTS)
def test_a_core_entry_point_refuses_other_options(calls: Calls, name: str, value: Any) -> None:
    with pytest.raises(TypeError) as raised:
        calls.call(name, options=value)
    assert_refused(raised, value)
    assert str(raised.value).startswith(f"{name}() "), raised.value
