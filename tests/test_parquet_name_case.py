"""A Parquet file is Parquet whatever the case of its name. Each run and qrels input of every command
(from the parsers: the invocations of tests/test_input_bounds.py give every input) reads a Parquet copy
named `*.PARQUET` as it reads the text file; `fuse -o` writes Parquet under every spelling of the
Parquet suffixes; each reader of `fanfuse.tables` that takes a path reads a run named `RUN.PARQUET`."""

from __future__ import annotations

import inspect
from pathlib import Path

import pytest
from command_inputs import write_inputs
from fanfuse import tables
from fanfuse.cli import main
from fanfuse.cli.paths import PARQUET_SUFFIXES
from run_tables import trec_to_parquet
from test_input_bounds import INVOCATIONS, input_positions

pq = pytest.importorskip("pyarrow.parquet")
pa = pytest.importorskip("pyarrow")

PARQUET_KINDS = ("run", "qrels")  # the inputs a command also takes as Parquet
CASES = [(argv, at) for argv in INVOCATIONS for at, kind in input_positions(argv) if kind in PARQUET_KINDS]
SPELLINGS = [spelling for s in PARQUET_SUFFIXES for spelling in (s, s.upper(), s[:2].upper() + s[2:])]


def qrels_to_parquet(path: Path, out: Path) -> str:
    rows = [line.split() for line in path.read_text().splitlines()]
    columns = {"qid": [r[0] for r in rows], "docid": [r[2] for r in rows]}
    pq.write_table(pa.table({**columns, "relevance": [int(r[3]) for r in rows]}), out)
    return str(out)


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = write_inputs(tmp_path_factory.mktemp("inputs"))
    for name in ("a.trec", "b.trec"):
        trec_to_parquet(directory / name, directory / f"{name}.PARQUET")
    qrels_to_parquet(directory / "qrels.txt", directory / "qrels.txt.PARQUET")
    return directory


def invoked(argv: list[str], files: Path, out: Path) -> list[str]:
    """The invocation over the test's files, writing to `out`."""
    full = [str(files / w) if (files / w).is_file() else w for w in argv]
    if "-o" in argv:
        full[argv.index("-o") + 1] = str(out)
    return full


def words(report: str) -> list[str]:
    return [w for w in report.split() if w.strip("-")]


def test_every_run_and_qrels_input_is_given() -> None:
    given = {(argv[0], argv[at - 1] if argv[at - 1].startswith("-") else "RUN") for argv, at in CASES}
    assert {("fuse", "RUN"), ("fuse", "--train-runs"), ("fuse", "--train-qrels")} <= given
    assert {("eval", "RUN"), ("eval", "--qrels"), ("tune", "RUN"), ("tune", "--qrels")} <= given


@pytest.mark.parametrize(("argv", "at"), CASES, ids=[f"{a[0]} {a[at - 1]}->{a[at]}" for a, at in CASES])
def test_an_input_named_in_upper_case_parquet_reads_as_its_text(
    files: Path, tmp_path: Path, argv: list[str], at: int, capsys: pytest.CaptureFixture[str]
) -> None:
    text = invoked(argv, files, tmp_path / "text.out")
    assert main(text) == 0
    printed = capsys.readouterr().out
    parquet = invoked(argv, files, tmp_path / "parquet.out")
    parquet[at] = f"{parquet[at]}.PARQUET"
    assert main(parquet) == 0, capsys.readouterr().err
    # A report's columns (and their rules) are as wide as its longest run name.
    assert words(capsys.readouterr().out) == words(printed.replace(text[at], parquet[at]))
    if "-o" in argv:
        assert (tmp_path / "parquet.out").read_bytes() == (tmp_path / "text.out").read_bytes()


@pytest.mark.parametrize("suffix", SPELLINGS)
def test_fuse_writes_parquet_under_every_spelling_of_the_suffix(
    files: Path, tmp_path: Path, suffix: str
) -> None:
    out = tmp_path / f"fused{suffix}"
    assert main(["fuse", str(files / "a.trec"), str(files / "b.trec"), "-o", str(out)]) == 0
    assert pq.read_table(out).column_names == ["qid", "docid", "rank", "score"]


@pytest.mark.parametrize("suffix", SPELLINGS)
def test_fuse_refuses_text_flags_under_every_spelling_of_the_suffix(
    files: Path, tmp_path: Path, suffix: str, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / f"fused{suffix}"
    runs = [str(files / "a.trec"), str(files / "b.trec")]
    assert main(["fuse", *runs, "-o", str(out), "--run-format", "mtrag"]) == 2
    assert "--run-format mtrag is a text format" in capsys.readouterr().err
    assert not out.exists()


READERS = {
    name: function
    for name, function in vars(tables).items()
    if name.startswith("read_")
    and inspect.isfunction(function)
    and function.__module__ == tables.__name__
    and "path" in inspect.signature(function).parameters
}


def test_the_readers_of_a_path_are_found() -> None:
    assert {"read_any_run", "read_any_qrels", "read_parquet_run", "read_run_table"} <= set(READERS)


@pytest.mark.parametrize("name", sorted(READERS))
def test_each_reader_reads_a_parquet_file_named_in_upper_case(files: Path, name: str) -> None:
    given = files / ("qrels.txt.PARQUET" if "qrels" in name else "a.trec.PARQUET")
    expected = files / ("qrels.txt" if "qrels" in name else "a.trec")
    read = READERS[name](str(given))
    if name == "read_any_run":  # the same hits as from the text file
        assert read.columns() == READERS[name](str(expected)).columns()
    elif name == "read_any_qrels":
        assert read.qids() == READERS[name](str(expected)).qids()
    else:
        assert len(read) > 0
