"""Weights that are all 0. A list of weight 0 is left out (docs/contract.md), so a call whose every
list weighs 0 fuses nothing: the list fusions (`rrf`, `fuse` and their batches) return no hit, as the
contract says, and a run fusion, which would write or return a run of no hits for every query, is
refused naming its weights, on every route and output format. Enumerated: every public entry point
with a `weights` argument (the walk of `test_api_numbers.py`), and every command with `--weights`
(from the parsers) x every run format x every engine."""

from __future__ import annotations

import argparse
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import fanfuse
import pytest
from api_calls import CALLS, Context
from fanfuse.cli import build_parser, main
from fanfuse.cli.engine import ENGINES
from fanfuse.cli.flags import Renamed
from test_api_numbers import entry_points

ZERO = [0.0, 0.0]
# The entry points that fuse ranked lists, whose result is the fused lists; the options value only
# holds the weights until a call checks them against its lists.
RETURN_EMPTY = {"rrf", "rrf_batch", "fuse", "fuse_batch"}
HOLD = {"FusionOptions.__init__", "FusionOptions.replace"}


def weighted_entries() -> list[str]:
    return sorted(entry for entry, params in entry_points() if "weights" in params)


@pytest.fixture(scope="module")
def context(
    small_runs: dict[str, str], tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest
) -> Iterator[Context]:
    with Context(small_runs, tmp_path_factory.mktemp("zero-weights"), request.getfixturevalue) as context:
        yield context


def test_the_walk_finds_the_run_fusions() -> None:
    entries = set(weighted_entries())
    assert entries >= RETURN_EMPTY | HOLD
    assert {"fuse_runs", "fuse_files", "fuse_table"} <= entries


@pytest.mark.parametrize("entry", [*weighted_entries(), "dask.fuse_runs"])
def test_every_entry_point_fuses_nothing_or_refuses_naming_the_weights(context: Context, entry: str) -> None:
    call = CALLS[entry]
    if entry in HOLD:
        assert list(call(context, weights=ZERO).weights) == ZERO
        return
    if entry in RETURN_EMPTY:
        result: Any = call(context, weights=ZERO)
        fused = result if entry.endswith("_batch") else [result]
        assert [len(hits) for hits in fused] == [0] * len(fused)
        return
    with pytest.raises(
        fanfuse.FusionError, match=r"^weights are all 0: .* give at least one run a weight above 0"
    ):
        call(context, weights=ZERO)


def weights_commands() -> list[str]:
    parser = build_parser()
    (sub,) = (a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return sorted(
        name
        for name, command in sub.choices.items()
        if any("--weights" in a.option_strings and not isinstance(a, Renamed) for a in command._actions)
    )


def test_the_commands_with_weights_are_known() -> None:
    assert weights_commands() == ["fuse"]


# The Dask engine writes TREC text only (its other formats are refused before any work).
ROUTES = [(engine, output) for engine in ENGINES for output in ("out.trec", "out.parquet", "out.jsonl")]


@pytest.mark.parametrize(("engine", "output"), [r for r in ROUTES if r[0] == "process" or r[1] == "out.trec"])
def test_the_command_refuses_weights_that_are_all_0_and_writes_nothing(
    small_runs: dict[str, str], tmp_path: Path, capsys: pytest.CaptureFixture[str], engine: str, output: str
) -> None:
    if engine == "dask":
        pytest.importorskip("dask")
    target = tmp_path / output
    argv = ["fuse", small_runs["run0"], small_runs["run1"], "--weights", "0,0", "-o", str(target)]
    argv += ["--run-format", "mtrag"] if output.endswith(".jsonl") else []
    argv += ["--engine", engine]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1
    assert err[0].startswith("fanfuse fuse: error: --weights are all 0: a run of weight 0 is left out")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("entry", [*weighted_entries(), "dask.fuse_runs"])
def test_every_entry_point_counts_the_weights_in_its_own_words(context: Context, entry: str) -> None:
    """Three weights for the two lists or runs of a call: a run fusion counts runs, a list fusion
    lists (the options value holds any number until a call checks them)."""
    if entry in HOLD:
        return
    noun = "list" if entry in ("rrf", "rrf_batch") else "run"
    counted = f"weights has 3 entries but there are 2 {noun}s; "
    if entry.endswith("_batch"):  # each query's lists are counted
        counted = f"queries[0] has 2 {noun}s but weights has 3 entries; "
    with pytest.raises(fanfuse.FusionError, match=rf"^{re.escape(counted)}"):
        result = CALLS[entry](context, weights=[1.0, 1.0, 1.0])
        if entry == "dask.fuse_runs":
            result.compute()
