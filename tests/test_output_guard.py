"""The output guard's face (`fanfuse.output_guard`): every public name refuses a path it cannot write
with `InvalidOutput` (a `ValueError`, not a `FusionError`) naming the path; the binding's handles
are used by the faces only, so no writer of the library meets a refusal the face did not name; a
refused output ends a command with one line and exit 2."""

from __future__ import annotations

import ast
import random
from collections.abc import Callable
from pathlib import Path

import fanfuse
import pytest
from fanfuse import output_guard
from fanfuse.cli import main
from fanfuse.errors import InvalidOutput
from fanfuse.output_guard import (
    OutputFile,
    StagedDirectory,
    check_paths,
    retire_directory,
    sync_directory,
)
from generated_runs import generated_qrels, generated_runs, write_beir_qrels, write_trec

PACKAGE = Path(fanfuse.__file__).parent
ROOT = PACKAGE.parents[1]


def _write(path: Path) -> None:
    with OutputFile(path) as stream:
        stream.write(b"x")


def _stage(path: Path) -> None:
    with StagedDirectory(path):
        pass


def _overlap(path: Path) -> None:
    path.write_text("q1 Q0 d1 1 1 run\n")
    check_paths(outputs=[("-o", path)], inputs=[("RUN", path)])


# Each public name of the face, called on a path it refuses: (call, what the path is).
REFUSED: dict[str, tuple[Callable[[Path], object], str]] = {
    "OutputFile": (_write, "a folder"),
    "StagedDirectory": (_stage, "a folder under a regular file"),
    "check_paths": (_overlap, "an output that is an input"),
    "retire_directory": (retire_directory, "a folder under a regular file"),
    "sync_directory": (sync_directory, "a folder that does not exist"),
}


def _refused_path(tmp_path: Path, what: str) -> Path:
    if what == "a folder":
        (tmp_path / "folder").mkdir()
        return tmp_path / "folder"
    if what == "a folder under a regular file":
        (tmp_path / "file").write_text("")
        return tmp_path / "file" / "folder"
    return tmp_path / "run.trec"


def test_every_public_name_of_the_face_is_checked() -> None:
    assert sorted(REFUSED) == sorted(output_guard.__all__)


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_every_refusal_of_the_guard_is_invalid_output_naming_the_path(name: str, tmp_path: Path) -> None:
    call, what = REFUSED[name]
    path = _refused_path(tmp_path, what)
    with pytest.raises(ValueError) as raised:
        call(path)
    assert type(raised.value) is InvalidOutput, f"{name} on {what}: {type(raised.value).__name__}"
    assert not isinstance(raised.value, fanfuse.FusionError)
    message = str(raised.value)
    assert str(path) in message or repr(str(path)) in message, message
    assert "\n" not in message


# The binding's handles of the guard and the line reader, and the one module that may call each.
HANDLES = {
    "_Output": "output_guard.py",
    "_StagedDirectory": "output_guard.py",
    "_check_paths": "output_guard.py",
    "_retire_directory": "output_guard.py",
    "_sync_directory": "output_guard.py",
    "_Lines": "corpus.py",
}


def test_the_handles_are_used_by_their_faces_only() -> None:
    stub = ast.parse((PACKAGE / "_core" / "_internal.pyi").read_text(encoding="utf-8"))
    core_all = next(
        node.value
        for node in stub.body
        if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", "") == "__all__"
    )
    assert isinstance(core_all, ast.List)
    exposed = {element.value for element in core_all.elts if isinstance(element, ast.Constant)}
    assert set(HANDLES) <= exposed, "HANDLES names a handle the core no longer has"
    found: dict[str, set[str]] = {name: set() for name in HANDLES}
    for path in sorted([*PACKAGE.rglob("*.py"), *(ROOT / "benches").rglob("*.py")]):
        where = path.relative_to(PACKAGE if PACKAGE in path.parents else ROOT).as_posix()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            # `_internal._Output(...)`, or `from fanfuse._core._internal import _Output`
            used = node.attr if isinstance(node, ast.Attribute) else getattr(node, "name", None)
            if used in found:
                found[used].add(where)
    assert found == {name: {face} for name, face in HANDLES.items()}


def test_an_unwritable_plot_path_is_invalid_output(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    rng = random.Random(5)
    runs = generated_runs(rng, runs=2, queries=12)
    paths = [write_trec(tmp_path / f"run{i}.trec", run, rng, interleaved=False) for i, run in enumerate(runs)]
    qrels = write_beir_qrels(tmp_path / "qrels.tsv", generated_qrels(rng, runs))
    report = fanfuse.compare(paths, qrels, ["ndcg@10"])
    (tmp_path / "plot.png").mkdir()
    with pytest.raises(InvalidOutput, match=r"plot\.png: is a directory"):
        report.plot(tmp_path / "plot.png")


def test_a_refused_output_ends_a_command_with_one_line_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rng = random.Random(6)
    runs = generated_runs(rng, runs=2, queries=12)
    paths = [write_trec(tmp_path / f"run{i}.trec", run, rng, interleaved=False) for i, run in enumerate(runs)]
    qrels = write_beir_qrels(tmp_path / "qrels.tsv", generated_qrels(rng, runs))
    (tmp_path / "report").mkdir()
    assert main(["eval", *paths, "--qrels", qrels, "-o", str(tmp_path / "report")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--output '" in err and "report': is a directory" in err, err
