"""fuse_table on Arrow tables against reading the same runs as TREC files, in pytest-benchmark's
`tables` group (`make bench`); the test run only smoke-runs them at a small size, and checks that both
paths give the same table. The larger measurement and its table: benches/tables_fuse.py."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

import fanfuse
import pytest

pa = pytest.importorskip("pyarrow")

_spec = importlib.util.spec_from_file_location("tables_fuse", Path(__file__).with_name("tables_fuse.py"))
assert _spec and _spec.loader
tables_fuse = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(tables_fuse)

QUERIES = 100


@pytest.fixture(scope="module")
def workload(tmp_path_factory: pytest.TempPathFactory) -> tuple[list[str], list[Any]]:
    trec, _, tables = tables_fuse.generate(tmp_path_factory.mktemp("tables-bench"), QUERIES)
    return trec, tables


def trec_path(trec: list[str]) -> Any:
    return fanfuse.tables.to_arrow(fanfuse.fuse_runs([fanfuse.read_run(p) for p in trec]))


@pytest.mark.benchmark(group="tables")
def test_fuse_table(benchmark: Any, workload: tuple[list[str], list[Any]]) -> None:
    trec, tables = workload
    fused = benchmark(fanfuse.fuse_table, tables)
    assert fused.equals(trec_path(trec))


@pytest.mark.benchmark(group="tables")
def test_read_trec_and_fuse(benchmark: Any, workload: tuple[list[str], list[Any]]) -> None:
    trec, _ = workload
    fused = benchmark(trec_path, trec)
    assert fused.num_rows > 0
