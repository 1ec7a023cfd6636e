"""All-or-nothing writes of the Python layer: a failed write leaves the previous file or directory and
no leftovers."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from fanfuse import InvalidOutput
from fanfuse.output_guard import OutputFile, StagedDirectory


def test_file_is_replaced_only_when_the_write_completes(tmp_path: Path) -> None:
    target = tmp_path / "vectors.npz"
    with OutputFile(target) as stream:
        np.savez(stream, a=np.arange(3))
    with np.load(target) as saved:
        assert saved["a"].tolist() == [0, 1, 2]

    with pytest.raises(InvalidOutput, match=r"vectors\.npz: disk full"), OutputFile(target) as stream:
        stream.write(b"partial")
        raise OSError("disk full")
    with np.load(target) as saved:
        assert saved["a"].tolist() == [0, 1, 2]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["vectors.npz"]


def test_directory_appears_complete_or_not_at_all(tmp_path: Path) -> None:
    target = tmp_path / "store"
    with pytest.raises(RuntimeError), StagedDirectory(target) as staged:
        (Path(staged.path) / "first").write_text("1")
        raise RuntimeError("failed half-way")
    assert list(tmp_path.iterdir()) == []

    with StagedDirectory(target) as staged:
        (Path(staged.path) / "first").write_text("1")
    assert [p.name for p in target.iterdir()] == ["first"]


def test_failed_rebuild_keeps_the_previous_directory(tmp_path: Path) -> None:
    target = tmp_path / "store"
    with StagedDirectory(target) as staged:
        (Path(staged.path) / "old").write_text("old")
    with pytest.raises(RuntimeError), StagedDirectory(target) as staged:
        (Path(staged.path) / "new").write_text("new")
        raise RuntimeError("failed half-way")
    assert [p.name for p in target.iterdir()] == ["old"]
    assert [p.name for p in tmp_path.iterdir()] == ["store"]

    with StagedDirectory(target) as staged:
        (Path(staged.path) / "new").write_text("new")
    assert [p.name for p in target.iterdir()] == ["new"]
    assert [p.name for p in tmp_path.iterdir()] == ["store"]
