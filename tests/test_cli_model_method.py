"""`fanfuse fuse --model M` fuses with the model's method when --method is left out, as
`fuse_runs(runs, model=m)` does: the same bytes as naming it; a --method of another kind, or the Dask
engine, is refused naming --model; the flags that go with a method read the model's."""

from __future__ import annotations

import subprocess
from pathlib import Path

import fanfuse
import pytest
from cli_process import CLI
from command_inputs import write_inputs
from fanfuse.cli import main


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = write_inputs(tmp_path_factory.mktemp("model-method"))
    runs = [fanfuse.read_run(str(directory / name)) for name in ("a.trec", "b.trec")]
    qrels = fanfuse.read_qrels(str(directory / "qrels.txt"))
    fanfuse.train_fusion(runs, qrels, method="segfuse").save(str(directory / "segfuse.json"))
    return directory


def fuse(files: Path, out: Path, *extra: str) -> int:
    return main(["fuse", str(files / "a.trec"), str(files / "b.trec"), "-o", str(out), *extra])


@pytest.mark.parametrize(("model", "method"), [("model.json", "probfuse"), ("segfuse.json", "segfuse")])
def test_a_model_without_method_fuses_with_its_own(
    files: Path, tmp_path: Path, model: str, method: str
) -> None:
    assert fuse(files, tmp_path / "named.trec", "--model", str(files / model), "--method", method) == 0
    assert fuse(files, tmp_path / "own.trec", "--model", str(files / model)) == 0
    assert (tmp_path / "own.trec").read_bytes() == (tmp_path / "named.trec").read_bytes()


@pytest.mark.parametrize(
    ("extra", "said"),
    [
        (["--method", "rrf"], "--model goes with a trained --method"),
        (["--method", "segfuse"], "is a probfuse model, not segfuse"),
        (["--engine", "dask"], "trained fusion (--model) runs in one process: drop --engine dask"),
        (["--norm", "zmuv"], "--norm goes with --method combsum"),  # probfuse reads no norm
    ],
)
def test_a_model_is_refused_beside_what_does_not_go_with_it(
    files: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], extra: list[str], said: str
) -> None:
    assert fuse(files, tmp_path / "out.trec", "--model", str(files / "model.json"), *extra) == 2
    assert said in capsys.readouterr().err
    assert not (tmp_path / "out.trec").exists()


def test_the_flags_of_a_method_read_the_models(files: Path, tmp_path: Path) -> None:
    """segfuse reads a norm: given beside its model alone, it changes the fused run."""
    assert fuse(files, tmp_path / "plain.trec", "--model", str(files / "segfuse.json")) == 0
    assert fuse(files, tmp_path / "zmuv.trec", "--model", str(files / "segfuse.json"), "--norm", "zmuv") == 0
    assert (tmp_path / "plain.trec").read_bytes() != (tmp_path / "zmuv.trec").read_bytes()


@pytest.mark.parametrize(("extra", "code"), [(["--rrf-k", "10"], 2), (["--norm", "zmuv"], 0)])
def test_a_model_read_from_a_pipe_is_read_once_and_its_method_judges_the_flags(
    files: Path, tmp_path: Path, extra: list[str], code: int
) -> None:
    """A segfuse model given on standard input: --rrf-k is refused as beside segfuse, --norm fuses as
    with the model's file."""
    argv = ["fuse", str(files / "a.trec"), str(files / "b.trec"), "-o", str(tmp_path / "piped.trec")]
    done = subprocess.run(
        [*CLI, *argv, "--model", "/dev/stdin", *extra],
        input=(files / "segfuse.json").read_bytes(),
        capture_output=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == code, done.stderr
    if code == 0:
        assert fuse(files, tmp_path / "file.trec", "--model", str(files / "segfuse.json"), *extra) == 0
        assert (tmp_path / "piped.trec").read_bytes() == (tmp_path / "file.trec").read_bytes()
    else:
        assert b"--rrf-k goes with --method rrf" in done.stderr
