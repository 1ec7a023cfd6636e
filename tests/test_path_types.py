"""Every public function of the library and the core that takes a file or folder takes it as a str
or an `os.PathLike` (`pathlib.Path`), and anything else is a TypeError naming the argument, never
an error that names nothing (`'int' object is not an instance of 'str'`, `expected str, bytes or
os.PathLike object, not int`)."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import fanfuse
import pytest
from fanfuse import FusionModel, TantivyRetriever, compare, open_index
from test_cli_search_options import DOCUMENTS

RUN = "q1 Q0 a 1 2.0 t\nq1 Q0 b 2 1.0 t\nq2 Q0 a 1 1.0 t\n"
QRELS = "q1 0 a 1\nq2 0 b 1\n"


@pytest.fixture
def files(tmp_path: Path) -> Path:
    (tmp_path / "run.trec").write_text(RUN)
    (tmp_path / "qrels.txt").write_text(QRELS)
    TantivyRetriever.build(DOCUMENTS, tmp_path / "idx")
    run = fanfuse.read_run(str(tmp_path / "run.trec"))
    qrels = fanfuse.read_qrels(str(tmp_path / "qrels.txt"))
    fanfuse.train_fusion([run, run], qrels, method="probfuse").save(str(tmp_path / "model.json"))
    return tmp_path


# Each path argument of the public API: (its name in the message, a call giving it `path`, which
# `files` holds or the call writes).
CALLS: dict[str, tuple[str, Callable[[Any, Path], object]]] = {
    "read_run": ("path", lambda path, files: fanfuse.read_run(path)),
    "read_qrels": ("path", lambda path, files: fanfuse.read_qrels(path)),
    "Run.write": ("path", lambda path, files: fanfuse.read_run(str(files / "run.trec")).write(path)),
    "fuse_files inputs": (
        "inputs[1]",
        lambda path, files: fanfuse.fuse_files([str(files / "run.trec"), path], None),
    ),
    "fuse_files output": ("output", lambda path, files: fanfuse.fuse_files([str(files / "run.trec")], path)),
    "FusionModel.load": ("path", lambda path, files: FusionModel.load(path)),
    "FusionModel.save": ("path", lambda path, files: FusionModel.load(str(files / "model.json")).save(path)),
    "TantivyRetriever": ("directory", lambda path, files: TantivyRetriever(path)),
    "TantivyRetriever.build": ("directory", lambda path, files: TantivyRetriever.build(DOCUMENTS, path)),
    "open_index": ("directory", lambda path, files: open_index(path)),
    "compare runs": (
        "runs[1]",
        lambda path, files: compare([str(files / "run.trec"), path], files / "qrels.txt"),
    ),
    "compare qrels": ("qrels", lambda path, files: compare([files / "run.trec", files / "run.trec"], path)),
}
# What each call is given as a path: a file it reads, or a new one it writes.
GIVEN = {
    "read_run": "run.trec",
    "read_qrels": "qrels.txt",
    "Run.write": "written.trec",
    "fuse_files inputs": "run.trec",
    "fuse_files output": "fused.trec",
    "FusionModel.load": "model.json",
    "FusionModel.save": "saved.json",
    "TantivyRetriever": "idx",
    "TantivyRetriever.build": "built",
    "open_index": "idx",
    "compare runs": "run.trec",
    "compare qrels": "qrels.txt",
}


@pytest.mark.parametrize("call", CALLS)
def test_a_pathlib_path_is_taken(call: str, files: Path) -> None:
    _, calling = CALLS[call]
    calling(files / GIVEN[call], files)
    assert (files / GIVEN[call]).exists()  # read, or written


@pytest.mark.parametrize("wrong", [5, b"run.trec", None, ["run.trec"]], ids=["int", "bytes", "None", "list"])
@pytest.mark.parametrize("call", CALLS)
def test_anything_else_is_a_type_error_naming_the_argument(call: str, wrong: object, files: Path) -> None:
    name, calling = CALLS[call]
    if wrong is None and call == "fuse_files output":
        return  # None is the run in memory
    with pytest.raises(TypeError, match="^" + re.escape(f"{name} must be a path")) as refused:
        calling(wrong, files)
    assert type(wrong).__name__ in str(refused.value)
