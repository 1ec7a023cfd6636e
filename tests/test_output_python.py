"""The files the Python layer writes follow the output-path rules of the run writers (docs/run-files.md,
"Output paths"), seen through `TfidfSvdEmbedder.save` and the index's dense cache: links kept, FIFOs
streamed, directories and read-only files refused, modes kept, failures leaving the previous file and
no temporary, stale temporaries removed."""

from __future__ import annotations

import errno
import io
import os
import stat
import subprocess
import sys
from pathlib import Path
from typing import BinaryIO

import numpy as np
import pytest
from cli_process import ended_pid
from fanfuse import InvalidOutput
from fanfuse.output_guard import OutputFile
from fanfuse.retrievers.dense import TfidfSvdEmbedder
from fanfuse.retrievers.dense_cache import MODEL_FILE, VECTORS_FILE, dense_for_index
from fanfuse.retrievers.tantivy_index import TantivyRetriever

pytest.importorskip("sklearn")

PREVIOUS = b"a previous file the user wants to keep\n"
TEXTS = ["cats purr and hunt mice", "dogs bark and fetch", "cars burn fuel", "electric cars use batteries"]


@pytest.fixture(scope="module")
def model() -> TfidfSvdEmbedder:
    return TfidfSvdEmbedder(dimensions=2).fit(TEXTS)


@pytest.fixture(scope="module")
def saved(model: TfidfSvdEmbedder, tmp_path_factory: pytest.TempPathFactory) -> bytes:
    path = tmp_path_factory.mktemp("plain") / "model.npz"
    model.save(path)
    return path.read_bytes()


def leftovers(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir() if p.name.endswith(".fanfuse-tmp") or ".tmp" in p.name)


def test_symlink_is_followed_and_kept(model: TfidfSvdEmbedder, saved: bytes, tmp_path: Path) -> None:
    (tmp_path / "real.npz").write_bytes(PREVIOUS)
    (tmp_path / "link.npz").symlink_to("real.npz")
    model.save(tmp_path / "link.npz")
    assert (tmp_path / "link.npz").is_symlink()
    assert (tmp_path / "real.npz").read_bytes() == saved
    assert TfidfSvdEmbedder.load(tmp_path / "link.npz").dimensions == model.dimensions


def test_fifo_is_streamed_into(model: TfidfSvdEmbedder, saved: bytes, tmp_path: Path) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
    try:
        model.save(fifo)
        received = os.read(reader, 1 << 16)
    finally:
        os.close(reader)
    # A stream cannot seek back, so the zip is laid out differently; its arrays are the same.
    with np.load(io.BytesIO(received)) as got, np.load(io.BytesIO(saved)) as want:
        assert sorted(got.files) == sorted(want.files)
        assert all(np.array_equal(got[name], want[name]) for name in want.files)
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    assert leftovers(tmp_path) == []


def test_directory_and_read_only_file_are_refused(model: TfidfSvdEmbedder, tmp_path: Path) -> None:
    (tmp_path / "dir").mkdir()
    with pytest.raises(InvalidOutput, match="is a directory"):
        model.save(tmp_path / "dir")
    kept = tmp_path / "kept.npz"
    kept.write_bytes(PREVIOUS)
    kept.chmod(0o444)
    with pytest.raises(InvalidOutput, match="is read-only"):
        model.save(kept)
    assert kept.read_bytes() == PREVIOUS
    assert (tmp_path / "dir").is_dir()


def test_replaced_file_keeps_its_mode(model: TfidfSvdEmbedder, saved: bytes, tmp_path: Path) -> None:
    path = tmp_path / "model.npz"
    path.write_bytes(PREVIOUS)
    path.chmod(0o600)
    model.save(path)
    assert path.read_bytes() == saved
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


def test_a_failure_while_writing_keeps_the_previous_file(tmp_path: Path) -> None:
    path = tmp_path / "data.bin"
    path.write_bytes(PREVIOUS)
    with pytest.raises(RuntimeError, match="disk full"), OutputFile(path) as stream:
        stream.write(b"partial")
        raise RuntimeError("disk full")
    assert path.read_bytes() == PREVIOUS
    assert leftovers(tmp_path) == []


def test_stale_temporaries_of_dead_writers_are_removed(model: TfidfSvdEmbedder, tmp_path: Path) -> None:
    stale = tmp_path / f".model.npz.{ended_pid()}.0.fanfuse-tmp"
    live = tmp_path / ".model.npz.1.0.fanfuse-tmp"  # PID 1 is always running
    stale.write_bytes(b"partial")
    live.write_bytes(b"partial")
    model.save(tmp_path / "model.npz")
    assert not stale.exists()
    assert live.exists()


def test_a_failing_save_of_the_dense_cache_keeps_the_previous_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    index = TantivyRetriever.build(
        [{"id": f"d{i}", "text": text} for i, text in enumerate(TEXTS)], tmp_path / "i"
    )
    data = index.data_directory
    (data / VECTORS_FILE).write_bytes(PREVIOUS)  # unreadable: the next call fits again and saves
    real_savez = np.savez
    saves: list[str] = []

    def savez_failing_on_the_vectors(stream: BinaryIO, **arrays: object) -> None:
        saves.append(",".join(sorted(arrays)))
        if "vectors" in arrays:
            stream.write(b"half a file")
            raise RuntimeError("disk full")
        real_savez(stream, **arrays)

    monkeypatch.setattr(np, "savez", savez_failing_on_the_vectors)
    with pytest.raises(RuntimeError, match="disk full"):
        dense_for_index(index, dimensions=2)
    assert saves == ["idf,projection,terms", "ids,vectors"]
    assert (data / VECTORS_FILE).read_bytes() == PREVIOUS
    assert TfidfSvdEmbedder.load(data / MODEL_FILE).dimensions == 2  # saved before the failure
    assert leftovers(data) == []


def test_an_input_is_refused_however_spelled(tmp_path: Path) -> None:
    run = tmp_path / "run.trec"
    run.write_bytes(PREVIOUS)
    (tmp_path / "link").symlink_to(run)
    os.link(run, tmp_path / "hard")
    for alias in ("link", "hard", "run.trec"):
        with (
            pytest.raises(InvalidOutput, match=r"is the input '.*run\.trec'"),
            OutputFile(tmp_path / alias, inputs=[run]),
        ):
            pass
    assert run.read_bytes() == PREVIOUS
    assert leftovers(tmp_path) == []


def test_an_os_error_while_writing_names_the_output_and_keeps_the_previous_file(tmp_path: Path) -> None:
    path = tmp_path / "report.txt"
    path.write_bytes(PREVIOUS)
    with (
        pytest.raises(InvalidOutput, match=r"report\.txt: No space left on device") as raised,
        OutputFile(path),
    ):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
    assert isinstance(raised.value.__cause__, OSError)
    assert path.read_bytes() == PREVIOUS
    assert leftovers(tmp_path) == []


def test_a_reader_gone_from_a_fifo_is_a_broken_pipe(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
    output = OutputFile(fifo)  # opened while the reader is there
    os.close(reader)
    with pytest.raises(BrokenPipeError), output as stream:
        stream.write(b"x" * (1 << 20))
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)


def test_stdout_gets_what_python_printed_first(tmp_path: Path) -> None:
    probe = (
        "import sys\nfrom fanfuse.output_guard import OutputFile\n"
        "print('printed first')\nwith OutputFile('-') as out:\n    out.write(b'written second\\n')\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, check=True)
    assert done.stdout == b"printed first\nwritten second\n"


def test_a_finished_output_refuses_further_use_by_name(tmp_path: Path) -> None:
    from fanfuse.output_guard import StagedDirectory

    path, folder = tmp_path / "a.txt", tmp_path / "other"
    output = OutputFile(path)
    with output as stream:
        stream.write(b"x")
    with pytest.raises(InvalidOutput, match=f"^{path}: already written$"), output:
        pass
    staged = StagedDirectory(tmp_path / "folder")
    with staged:
        pass
    with pytest.raises(InvalidOutput, match=f"^{folder}: already published$"):
        staged.publish(folder)
    assert path.read_bytes() == b"x" and (tmp_path / "folder").is_dir() and not folder.exists()
