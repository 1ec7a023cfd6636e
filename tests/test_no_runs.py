"""A run fusion given no run is refused by every public entry point ("give at least one run to fuse"),
in the one check every route of the core runs first; a list fusion given no list returns no hit, as the
contract says. The entry points are the API walk's (`test_api_numbers.py`): every public function that
takes the fusion options value."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import fanfuse
import pytest
from fanfuse import FusionError
from test_api_numbers import entry_points

LIST_FUSIONS: dict[str, Callable[[], Any]] = {
    "rrf": lambda: fanfuse.rrf([]),
    "fuse": lambda: fanfuse.fuse([]),
    "rrf_batch": lambda: fanfuse.rrf_batch([[]]),
    "fuse_batch": lambda: fanfuse.fuse_batch([[]]),
}


def one_table_without_labels() -> Any:
    pa = pytest.importorskip("pyarrow")
    table = pa.table({"qid": ["q1"], "docid": ["a"], "score": [1.0], "run": ["x"]})
    return fanfuse.fuse_table(table, run_column="run", runs=[])


def no_dask_runs() -> Any:
    pytest.importorskip("dask")
    import fanfuse.dask

    return fanfuse.dask.fuse_runs([]).compute()


# Each public run fusion's calls without a run, and its refusal.
RUN_FUSIONS: dict[str, list[tuple[Callable[[], Any], str]]] = {
    "fuse_runs": [(lambda: fanfuse.fuse_runs([]), "give at least one run to fuse")],
    "fuse_files": [(lambda: fanfuse.fuse_files([], None), "give at least one run to fuse")],
    "fuse_table": [
        (lambda: fanfuse.fuse_table([]), "give at least one run to fuse"),
        (one_table_without_labels, r"give the run labels in fusion order \(runs=\[...\]\)"),
    ],
    "dask.fuse_runs": [(no_dask_runs, "runs must be a non-empty list")],
}


def test_every_fusion_entry_point_is_here() -> None:
    walked = {entry for entry, params in entry_points() if "FusionOptions" in params.get("options", "")}
    assert walked == set(LIST_FUSIONS) | set(RUN_FUSIONS)


@pytest.mark.parametrize("entry", sorted(RUN_FUSIONS))
def test_a_run_fusion_of_no_run_is_refused(entry: str) -> None:
    for call, refusal in RUN_FUSIONS[entry]:
        with pytest.raises((FusionError, TypeError, ValueError), match=refusal):
            call()


@pytest.mark.parametrize("entry", sorted(LIST_FUSIONS))
def test_a_list_fusion_of_no_list_returns_no_hit(entry: str) -> None:
    fused = LIST_FUSIONS[entry]()
    assert len(fused[0] if isinstance(fused, list) else fused) == 0


def test_the_core_refuses_no_table() -> None:
    with pytest.raises(FusionError, match="give at least one run to fuse"):
        fanfuse._core.fuse_tables([], names=[])
