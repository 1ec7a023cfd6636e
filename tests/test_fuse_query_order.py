"""The order of queries in a fused run file (docs/run-files.md, "Order of a fused run"): each query is
written once every run has moved past it (or ended), and queries released by the same run's end come
out in order of first appearance, so the same inputs give the same file at every run; every route
that fuses run files writes that one order, whatever the runs' query orders and groupings."""

from __future__ import annotations

import argparse
import importlib.util
import itertools
import random
from collections.abc import Callable
from pathlib import Path

import fanfuse
import pytest


def test_queries_released_by_a_run_ending_come_out_in_order_of_first_appearance(tmp_path: Path) -> None:
    # Run a holds 3 queries, run b one, run c 40 (q5...q44, q9 included): when a ends, the queries c
    # has already passed are released together; when c ends, those only a had.
    runs = {
        "a": ["q1", "q2", "q3"],
        "b": ["q9"],
        "c": [f"q{i}" for i in range(5, 45)],
    }
    paths = []
    for name, qids in runs.items():
        path = tmp_path / f"{name}.trec"
        path.write_text("".join(f"{q} Q0 d-{name} 1 1.0 {name}\n" for q in qids))
        paths.append(str(path))
    out = tmp_path / "fused.trec"
    for _ in range(3):
        summary = fanfuse.fuse_files(paths, str(out))
        assert not summary["buffered"]
        order = list(dict.fromkeys(line.split()[0] for line in out.read_text().splitlines()))
        assert order == [*(f"q{i}" for i in range(5, 45)), "q1", "q2", "q3"]


def documented_order(runs: list[list[str]]) -> list[str]:
    """The order docs/run-files.md states, from each run's query ids line by line: runs are read in
    turn one group (consecutive lines of one query) at a time, step ``g * R + r`` being group g of
    run r of R (or its end, g = its number of groups); a query's release is the latest, over the
    runs, of the step of its first group there (of the run's end where it has none); queries by
    release, then by the step of their first group."""
    count = len(runs)
    first: dict[str, list[int | None]] = {}
    ends = []
    for r, lines in enumerate(runs):
        groups = [qid for qid, _ in itertools.groupby(lines)]
        for g, qid in enumerate(groups):
            steps = first.setdefault(qid, [None] * count)
            if steps[r] is None:
                steps[r] = g * count + r
        ends.append(len(groups) * count + r)

    def key(qid: str) -> tuple[int, int]:
        steps = first[qid]
        release = max(ends[r] if step is None else step for r, step in enumerate(steps))
        return release, min(step for step in steps if step is not None)

    return sorted(first, key=key)


def random_runs(rng: random.Random) -> list[list[str]]:
    """Query ids line by line of 1-3 runs: in the same order or not, queries missing from some, and
    (in about a third of the cases) a run that comes back to a query after other queries."""
    queries = [f"q{i}" for i in range(rng.randint(1, 12))]
    runs = []
    for _ in range(rng.randint(1, 3)):
        held = [q for q in queries if rng.random() < 0.8] or queries[:1]
        if rng.random() < 0.5:
            rng.shuffle(held)
        lines = [q for q in held for _ in range(rng.randint(1, 3))]
        if rng.random() < 0.35 and len(held) > 1:
            lines.append(lines[0])  # back to the first query, after the others
        runs.append(lines)
    return runs


def write_runs(folder: Path, runs: list[list[str]]) -> list[str]:
    paths = []
    for r, lines in enumerate(runs):
        path = folder / f"run{r}.trec"
        path.write_text("".join(f"{q} Q0 d{r}-{i} {i + 1} {100 - i} r{r}\n" for i, q in enumerate(lines)))
        paths.append(str(path))
    return paths


def by_files(paths: list[str], folder: Path) -> list[str]:
    out = folder / "files.trec"
    fanfuse.fuse_files(paths, str(out))
    return [line.split()[0] for line in out.read_text().splitlines()]


def by_memory(paths: list[str], folder: Path) -> list[str]:
    return fanfuse.fuse_files(paths, None).qids()


def by_tables(paths: list[str], folder: Path) -> list[str]:
    from fanfuse.tables import fuse_table, read_run_table

    tables = [read_run_table(path).sort_by([("line", "ascending")]) for path in paths]
    return [str(q) for q in fuse_table(tables).column("qid").to_pylist()]


def by_dask(paths: list[str], folder: Path) -> list[str]:
    import fanfuse.dask.command
    from fanfuse.cli import main

    out = folder / "dask.trec"
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(fanfuse.dask.command, "BLOCK_BYTES", 60)  # a few lines a block
        assert main(["fuse", *paths, "-o", str(out), "--engine", "dask", "--partitions", "2"]) == 0
    return [line.split()[0] for line in out.read_text().splitlines()]


def needs(module: str) -> pytest.MarkDecorator:
    return pytest.mark.skipif(importlib.util.find_spec(module) is None, reason=f"{module} is not installed")


# Every route that fuses run files: the stream of `fanfuse fuse` (which holds everything when a run
# comes back to a query) to a file or to a Run in memory, the Arrow tables, and the distributed engine.
ROUTES = [
    pytest.param(by_files, 60, id="files"),
    pytest.param(by_memory, 60, id="memory"),
    pytest.param(by_tables, 60, id="tables", marks=needs("pyarrow")),
    pytest.param(by_dask, 8, id="dask", marks=needs("dask")),
]


@pytest.mark.parametrize(("route", "cases"), ROUTES)
def test_every_route_writes_the_documented_order(
    tmp_path: Path, route: Callable[[list[str], Path], list[str]], cases: int
) -> None:
    rng = random.Random(29)
    for case in range(cases):
        runs = random_runs(rng)
        folder = tmp_path / str(case)
        folder.mkdir()
        written = list(dict.fromkeys(route(write_runs(folder, runs), folder)))
        assert written == documented_order(runs), (case, runs)


def fuse_outputs() -> list[tuple[str, list[str]]]:
    """Every output `fanfuse fuse` writes, as (file name, flags): each --run-format choice of its
    parser, and Parquet under each name suffix the command writes as Parquet."""
    from fanfuse.cli import build_parser
    from fanfuse.cli.paths import PARQUET_SUFFIXES

    parser = build_parser("fuse")
    (commands,) = (a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    (formats,) = (a for a in commands.choices["fuse"]._actions if "--run-format" in a.option_strings)
    assert formats.choices is not None
    written = [(f"fused.{form}", ["--run-format", form]) for form in formats.choices]
    return written + [(f"fused{suffix}", []) for suffix in PARQUET_SUFFIXES]


@needs("pyarrow")
def test_every_output_format_holds_the_documented_order_and_the_same_hits(tmp_path: Path) -> None:
    from fanfuse.cli import main
    from fanfuse.tables import read_any_run

    rng = random.Random(31)
    for case in range(30):
        runs = random_runs(rng)
        folder = tmp_path / str(case)
        folder.mkdir()
        paths = write_runs(folder, runs)
        written = {}
        for name, flags in fuse_outputs():
            assert main(["fuse", *paths, "-o", str(folder / name), *flags]) == 0, (name, runs)
            # Read back by the rank column: the hits in the order they were written.
            fused = read_any_run(str(folder / name), rank_from="rank")
            assert fused.qids() == documented_order(runs), (name, case, runs)
            written[name] = fused.columns()
        first, *others = written.items()
        for name, columns in others:
            assert columns == first[1], (name, first[0], case, runs)


@pytest.mark.parametrize("form", fanfuse.RUN_FORMATS)
def test_the_run_fused_in_memory_writes_the_bytes_of_the_fused_file(tmp_path: Path, form: str) -> None:
    # Inputs in every format: TREC files, and the same runs as MT-RAG JSONL (passthrough fields).
    rng = random.Random(7)
    for case in range(12):
        folder = tmp_path / str(case)
        folder.mkdir()
        paths = write_runs(folder, random_runs(rng))
        mtrag = [str(folder / f"run{r}.jsonl") for r in range(len(paths))]
        for path, converted in zip(paths, mtrag, strict=True):
            fanfuse.fuse_files([path], converted, format="mtrag", top_k=None)
        for inputs in (paths, mtrag):
            fanfuse.fuse_files(inputs, str(folder / "file.out"), format=form)
            fanfuse.fuse_files(inputs, None, format=form).write(str(folder / "memory.out"), format=form)
            assert (folder / "memory.out").read_bytes() == (folder / "file.out").read_bytes(), (case, inputs)


def test_the_mtrag_runs_fused_in_memory_write_the_bytes_of_the_fused_file(
    mtrag_dir: Path, tmp_path: Path
) -> None:
    runs = [str(mtrag_dir / "runs" / f"{r}_clapnq_rewrite.jsonl") for r in ("bm25", "bge", "elser")]
    for form in fanfuse.RUN_FORMATS:
        fanfuse.fuse_files(runs, str(tmp_path / "file.out"), format=form)
        fanfuse.fuse_files(runs, None, format=form).write(str(tmp_path / "memory.out"), format=form)
        assert (tmp_path / "memory.out").read_bytes() == (tmp_path / "file.out").read_bytes(), form


def test_fuse_runs_lists_the_queries_in_the_order_of_a_fused_run_file(tmp_path: Path) -> None:
    rng = random.Random(43)
    for case in range(60):
        runs = random_runs(rng)
        folder = tmp_path / str(case)
        folder.mkdir()
        fused = fanfuse.fuse_runs([fanfuse.read_run(path) for path in write_runs(folder, runs)])
        # A Run holds each query once, in order of first appearance: one group a query.
        assert fused.qids() == documented_order([list(dict.fromkeys(lines)) for lines in runs]), runs
