"""An output's name is not ignored: every output file option of every command (from the parsers) is
given names that say a format (`.gz`, `.parquet`, `.pdf`, `.json`, ...) and names that say none;
each is either written in the format its name says (checked by its bytes) or refused before
anything is written (exit 2, naming the option and the path, saying what the option writes)."""

from __future__ import annotations

import contextlib
import csv
import io
import json
from collections.abc import Callable
from pathlib import Path

import pytest
from command_inputs import write_inputs
from fanfuse.cli import build_parser, command_parsers, main
from fanfuse.cli.paths import OUTPUT, option_name, path_actions

# A valid invocation per output file option, NAME standing for the output given, OTHER for another
# output the command needs (in the test's folder, as every file of it).
INVOCATIONS: dict[tuple[str, str], list[str]] = {
    ("fuse", "--output"): ["fuse", "a.trec", "b.trec", "-o", "NAME"],
    ("fuse", "--save-model"): [
        "fuse", "a.trec", "b.trec", "--method", "probfuse", "--train-runs", "a.trec", "b.trec",
        "--train-qrels", "qrels.txt", "--save-model", "NAME", "-o", "OTHER",
    ],
    ("eval", "--output"): ["eval", "a.trec", "b.trec", "--qrels", "qrels.txt", "-o", "NAME"],
    ("eval", "--plot"): ["eval", "a.trec", "b.trec", "--qrels", "qrels.txt", "--plot", "NAME"],
}  # fmt: skip


def _json(data: bytes) -> bool:
    try:
        json.loads(data)
    except ValueError:
        return False
    return True


def _csv(data: bytes) -> bool:
    rows = list(csv.reader(io.StringIO(data.decode())))
    return len(rows) > 1 and len({len(row) for row in rows}) == 1 and len(rows[0]) > 1


# What a file whose name ends so must hold, by its first bytes or its text.
SAYS: dict[str, Callable[[bytes], bool]] = {
    ".gz": lambda data: data.startswith(b"\x1f\x8b"),
    ".bz2": lambda data: data.startswith(b"BZh"),
    ".xz": lambda data: data.startswith(b"\xfd7zXZ\x00"),
    ".zst": lambda data: data.startswith(b"\x28\xb5\x2f\xfd"),
    ".zip": lambda data: data.startswith(b"PK"),
    ".parquet": lambda data: data.startswith(b"PAR1"),
    ".PARQ": lambda data: data.startswith(b"PAR1"),
    ".png": lambda data: data.startswith(b"\x89PNG\r\n\x1a\n"),
    ".pdf": lambda data: data.startswith(b"%PDF-"),
    ".SVG": lambda data: b"<svg" in data[:2000],
    ".jpg": lambda data: data.startswith(b"\xff\xd8\xff"),
    ".json": _json,
    ".md": lambda data: data.startswith(b"|"),
    ".tex": lambda data: b"\\begin{" in data,
    ".csv": _csv,
}
# Names that say no format: anything may be written under them.
NEUTRAL = ["out.txt", "out", "out.trec", "out.v2"]
NAMES = [f"out{suffix}" for suffix in SAYS] + ["out.trec.gz"] + NEUTRAL


def _says(name: str) -> Callable[[bytes], bool] | None:
    return next((check for suffix, check in SAYS.items() if name.lower().endswith(suffix.lower())), None)


def _outputs() -> list[tuple[str, str]]:
    return [
        (command, option_name(action))
        for command, parser in command_parsers(build_parser()).items()
        for action, role, _ in path_actions(parser)
        if role == OUTPUT
    ]


def test_every_output_file_option_has_an_invocation() -> None:
    assert sorted(_outputs()) == sorted(INVOCATIONS)


def _run(argv: list[str]) -> tuple[int, str]:
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        code = main(argv)
    return code, err.getvalue()


CASES = [(key, name) for key in INVOCATIONS for name in NAMES]


@pytest.mark.parametrize(("key", "name"), CASES, ids=[f"{c} {o} {n}" for (c, o), n in CASES])
def test_an_output_is_what_its_name_says_or_is_refused(
    tmp_path: Path, key: tuple[str, str], name: str
) -> None:
    if key[1] == "--plot":
        pytest.importorskip("matplotlib")
    if name.lower().endswith((".parquet", ".parq")):
        pytest.importorskip("pyarrow")
    write_inputs(tmp_path)
    before = sorted(p.name for p in tmp_path.iterdir())
    target = tmp_path / name
    given = {"NAME": str(target), "OTHER": str(tmp_path / "other-output.trec")}
    argv = [given.get(word, word) for word in INVOCATIONS[key]]
    argv = [str(tmp_path / w) if (tmp_path / w).exists() else w for w in argv]
    code, err = _run(argv)
    check = _says(name)
    if code == 0:
        assert check is None or check(target.read_bytes()), f"{name} holds {target.read_bytes()[:40]!r}"
        return
    assert code == 2, err
    assert check is not None, err  # a name that says nothing is written
    assert err.startswith(f"fanfuse {key[0]}: error: {key[1]} {str(target)!r}: "), err
    assert " writes " in err, err  # says what the option writes
    assert sorted(p.name for p in tmp_path.iterdir()) == before, err


@pytest.mark.parametrize("name", ["plot.pdf", "plot.svg", "plot.PNG"])
def test_the_plot_is_written_in_the_format_of_its_name(tmp_path: Path, name: str) -> None:
    pytest.importorskip("matplotlib")
    write_inputs(tmp_path)
    plot = tmp_path / name
    code, err = _run(
        ["eval", str(tmp_path / "a.trec"), "--qrels", str(tmp_path / "qrels.txt"), "--plot", str(plot)]
    )
    assert code == 0, err
    check = _says(name)
    assert check is not None and check(plot.read_bytes())


@pytest.mark.parametrize(
    ("given", "name", "holds"),
    [
        ([], "report.json", ".json"),
        ([], "report.md", ".md"),
        ([], "report.csv", ".csv"),
        ([], "report.tex", ".tex"),
        (["--format", "json"], "report.json", ".json"),
        (["--json"], "report.json", ".json"),
    ],
)
def test_the_report_is_written_in_the_format_of_its_name(
    tmp_path: Path, given: list[str], name: str, holds: str
) -> None:
    write_inputs(tmp_path)
    out = tmp_path / name
    argv = ["eval", str(tmp_path / "a.trec"), "--qrels", str(tmp_path / "qrels.txt"), *given, "-o", str(out)]
    code, err = _run(argv)
    assert code == 0, err
    assert SAYS[holds](out.read_bytes()), out.read_text()


@pytest.mark.parametrize(
    ("given", "name"),
    [(["--format", "table"], "report.json"), (["--json"], "report.md"), (["--format", "csv"], "r.tex")],
)
def test_a_report_format_the_name_contradicts_is_refused(tmp_path: Path, given: list[str], name: str) -> None:
    write_inputs(tmp_path)
    out = tmp_path / name
    argv = ["eval", str(tmp_path / "a.trec"), "--qrels", str(tmp_path / "qrels.txt"), *given, "-o", str(out)]
    code, err = _run(argv)
    assert code == 2, err
    assert err.startswith(f"fanfuse eval: error: --output {str(out)!r}: "), err
    assert given[0] in err, err
    assert not out.exists()


def test_a_gzip_name_of_a_fused_run_is_refused_saying_what_is_written(tmp_path: Path) -> None:
    write_inputs(tmp_path)
    out = tmp_path / "x.trec.gz"
    code, err = _run(["fuse", str(tmp_path / "a.trec"), str(tmp_path / "b.trec"), "-o", str(out)])
    assert code == 2
    assert "gzip" in err and ".parquet" in err and "--run-format" in err, err
    assert not out.exists()
