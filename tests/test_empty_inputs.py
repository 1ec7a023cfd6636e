"""A run or qrels file with nothing in it is refused naming it, whatever its format: an empty text
file and a Parquet file of no rows (with the right columns) alike, by every command's every run and
qrels input (from the parsers, through the invocations of `test_input_bounds.py`), on either engine,
and by every library function that reads a run or qrels file. Nothing is written."""

from __future__ import annotations

from pathlib import Path

import fanfuse
import fanfuse.tables
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from fanfuse.cli import main
from test_input_bounds import (
    INVOCATIONS,
    files,  # noqa: F401 (the fixture the invocations need)
    input_positions,
)

COLUMNS = {
    "run": {"qid": pa.string(), "docid": pa.string(), "score": pa.float64()},
    "qrels": {"qid": pa.string(), "docid": pa.string(), "relevance": pa.int64()},
}
REFUSALS = {"parquet": "the Parquet file has no rows", "text": "the file "}


def empty_file(directory: Path, kind: str, form: str) -> Path:
    path = directory / f"empty-{kind}.{'parquet' if form == 'parquet' else 'txt'}"
    if form == "parquet":
        columns = COLUMNS[kind]
        pq.write_table(pa.table({name: pa.array([], type) for name, type in columns.items()}), path)
    else:
        path.write_text("")
    return path


ENGINES = ("process", "dask")
CASES = [
    (argv, at, kind, form, engine)
    for argv in INVOCATIONS
    for at, kind in input_positions(argv)
    if kind in COLUMNS
    for form in REFUSALS
    for engine in ENGINES
    # The Dask engine runs fuse (untrained) and eval.
    if engine == "process" or (argv[0] in ("fuse", "eval") and "--method" not in argv)
]


@pytest.mark.parametrize(
    ("argv", "at", "kind", "form", "engine"),
    CASES,
    ids=[f"{a[0]} {a[at - 1]}->{a[at]}-{form}-{engine}" for a, at, _, form, engine in CASES],
)
def test_an_empty_run_or_qrels_file_is_refused_by_every_input_of_every_command(
    files: Path,  # noqa: F811
    tmp_path: Path,
    argv: list[str],
    at: int,
    kind: str,
    form: str,
    engine: str,
    capsys: pytest.CaptureFixture[str],
) -> None:
    if engine == "dask":
        pytest.importorskip("dask")
    full = [str(files / w) if (files / w).is_file() else w for w in argv]
    if "-o" in argv:
        full[argv.index("-o") + 1] = str(tmp_path / "out.trec")
    empty = empty_file(tmp_path, kind, form)
    full[at] = str(empty)
    assert main([*full, "--engine", engine] if engine == "dask" else full) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and str(empty) in err[0] and REFUSALS[form] in err[0], err
    assert not (tmp_path / "out.trec").exists()


READERS = {
    "read_any_run": ("run", fanfuse.tables.read_any_run),
    "read_parquet_run": ("run", fanfuse.tables.read_parquet_run),
    "read_run_table": ("run", fanfuse.tables.read_run_table),
    "read_any_qrels": ("qrels", fanfuse.tables.read_any_qrels),
    "compare": ("run", lambda path: fanfuse.compare([path], fanfuse.read_qrels(QRELS_PATH), ["map"])),
    "dask.fuse_runs": ("run", lambda path: dask_fuse([path, path])),
}
QRELS_PATH = ""


def dask_fuse(paths: list[str]) -> object:
    pytest.importorskip("dask")
    import fanfuse.dask

    return fanfuse.dask.fuse_runs(paths).compute()


def test_the_readers_are_every_public_reader_of_parquet() -> None:
    own = {n for n, f in vars(fanfuse.tables).items() if getattr(f, "__module__", "") == "fanfuse.tables"}
    readers = {n for n in own if n.startswith("read_") and n != "read_parquet"}
    assert readers <= set(READERS)


@pytest.mark.parametrize("reader", READERS)
def test_every_reader_refuses_a_parquet_file_of_no_rows(
    tmp_path: Path, reader: str, small_runs: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(globals(), "QRELS_PATH", small_runs["qrels"])
    kind, read = READERS[reader]
    empty = empty_file(tmp_path, kind, "parquet")
    with pytest.raises(fanfuse.FusionError, match=f"^{empty}: the Parquet file has no rows"):
        read(str(empty))
