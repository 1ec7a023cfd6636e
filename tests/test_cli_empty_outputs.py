"""What `fanfuse fuse` writes reads back, also when the fused run has queries but no hit: for every
`--run-format` and `--engine` of its parser and every kind of output name (text, each Parquet
suffix), the output is either written and read back by the run readers, or refused before anything
is written (exit 2, no file left), naming the output where the same line fuses runs with hits."""

from __future__ import annotations

import argparse
import contextlib
import io
import json
from pathlib import Path

import pytest
from fanfuse.cli import build_parser, command_parsers, main
from fanfuse.cli.paths import PARQUET_SUFFIXES
from fanfuse.tables import read_any_run

pytest.importorskip("pyarrow")


def _choices(dest: str) -> list[str]:
    parser = command_parsers(build_parser("fuse"))["fuse"]
    action = next(a for a in parser._actions if a.dest == dest and a.option_strings)
    assert isinstance(action, argparse.Action) and action.choices is not None
    return list(action.choices)


RUN_FORMATS = _choices("run_format")
ENGINES = _choices("engine")
NAMES = ["fused.out", *(f"fused{suffix}" for suffix in PARQUET_SUFFIXES)]


def _mtrag(path: Path, queries: dict[str, list[str]]) -> str:
    path.write_text(
        "".join(
            json.dumps(
                {"task_id": q, "Collection": "c", "contexts": [{"document_id": d, "score": 1.0} for d in ds]}
            )
            + "\n"
            for q, ds in queries.items()
        )
    )
    return str(path)


def _fuse(*argv: str) -> tuple[int, str]:
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        code = main(["fuse", *argv])
    return code, err.getvalue()


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("run_format", RUN_FORMATS)
def test_an_output_without_hits_reads_back_or_is_refused_before_writing(
    tmp_path: Path, run_format: str, engine: str, name: str
) -> None:
    if engine == "dask":
        pytest.importorskip("dask")
    inputs = tmp_path / "in"
    inputs.mkdir()
    run = _mtrag(inputs / "empty.jsonl", {"q1": [], "q2": []})
    out = tmp_path / name
    code, err = _fuse(run, run, "-o", str(out), "--run-format", run_format, "--engine", engine)
    if code == 0:
        back = read_any_run(str(out))  # refuses an output it cannot read back
        assert back.qids() == ["q1", "q2"]
        return
    assert code == 2, err
    assert [p.name for p in tmp_path.iterdir()] == ["in"], err  # no output, no temporary
    assert err.startswith("fanfuse fuse: error: ") and err.count("\n") == 1, err
    hits = _mtrag(inputs / "hits.jsonl", {"q1": ["d1"], "q2": ["d2"]})
    if _fuse(hits, hits, "-o", str(out), "--run-format", run_format, "--engine", engine)[0] == 0:
        # Refused for the missing hits alone: the message says which output could not hold the run.
        assert f"--output {str(out)!r}: nothing to write" in err, err


@pytest.mark.parametrize("suffix", PARQUET_SUFFIXES)
def test_a_parquet_output_without_hits_is_refused_naming_it(tmp_path: Path, suffix: str) -> None:
    run = _mtrag(tmp_path / "empty.jsonl", {"q1": []})
    out = tmp_path / f"e{suffix}"
    code, err = _fuse(run, run, "-o", str(out))
    assert code == 2, err
    assert f"--output {str(out)!r}: nothing to write" in err, err
    assert "--run-format mtrag" in err, err
    assert not out.exists()


def test_a_text_output_without_hits_is_refused_naming_it(tmp_path: Path) -> None:
    run = _mtrag(tmp_path / "empty.jsonl", {"q1": []})
    out = tmp_path / "e.trec"
    code, err = _fuse(run, run, "-o", str(out))
    assert code == 2, err
    assert f"--output {str(out)!r}: nothing to write" in err, err
    assert not out.exists()


@pytest.mark.parametrize("suffix", PARQUET_SUFFIXES)
def test_a_parquet_output_with_some_hits_keeps_them(tmp_path: Path, suffix: str) -> None:
    run = _mtrag(tmp_path / "some.jsonl", {"q1": [], "q2": ["d1", "d2"]})
    out = tmp_path / f"some{suffix}"
    code, err = _fuse(run, run, "-o", str(out))
    assert code == 0, err
    assert read_any_run(str(out)).qids() == ["q2"]
