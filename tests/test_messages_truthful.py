"""Messages name what actually happened. A TMPDIR too small for `fanfuse serve`'s private copy of the
index is named as such, not as a fault of the index's own files; `fanfuse search --dense` (and
`fanfuse demo`) that embeds the documents says whether the vectors were kept in the index, and if not,
why not and where they would have gone. The full and read-only places are real file systems (a small
tmpfs, mounted by the test; skipped where mounting is not allowed, with a labelled double of a full
disk beside)."""

from __future__ import annotations

import errno
import json
import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import ClassVar

import numpy as np
import pytest
from cli_process import CLI
from fanfuse.cli import main
from fanfuse.errors import InvalidIndex
from fanfuse.retrievers import index_copy
from fanfuse.retrievers.dense_index import DENSE_DIR, VECTORS, has_dense_index, write_dense_index
from fanfuse.retrievers.tantivy_index import TantivyRetriever
from test_cli_demo import small_stdlib
from test_open_index import needs_embed
from tmpfs_mount import Mount, read_only

DOCUMENTS = [{"id": f"d{i}", "text": f"owls hunt mice at night {i}"} for i in range(200)]
# Vectors bigger than the small TMPDIR, so that copying them is what fills it.
DIMENSIONS = 384
SMALL = "64k"


class StoredVectors:
    """What `write_dense_index` needs of an encoder: the identity recorded with the vectors."""

    identity: ClassVar[dict[str, object]] = {"name": "stored", "dimensions": DIMENSIONS}


@pytest.fixture(scope="module")
def index_with_vectors(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("truthful") / "index"
    index = TantivyRetriever.build(DOCUMENTS, directory)
    vectors = np.random.default_rng(0).standard_normal((len(DOCUMENTS), DIMENSIONS)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    write_dense_index(index.data_directory, [d["id"] for d in DOCUMENTS], vectors, StoredVectors())
    assert (index.data_directory / DENSE_DIR / VECTORS).stat().st_size > 64 * 1024
    return directory


def no_space_message(place: Path) -> str:
    return f"the private copy of the index could not be written to TMPDIR={place} (no space left)"


def test_serve_with_a_full_tmpdir_names_tmpdir(
    index_with_vectors: Path, tmp_path: Path, tmpfs: Mount
) -> None:
    small = tmpfs(SMALL, tmp_path / "small")
    done = subprocess.run(
        [*CLI, "serve", "--index", str(index_with_vectors), "--port", "0", "--no-dense"],
        capture_output=True,
        text=True,
        env={**os.environ, "TMPDIR": str(small)},
        timeout=120,
        check=False,
    )
    assert done.returncode == 2, done.stderr
    [line] = done.stderr.splitlines()
    assert line.startswith(f"fanfuse serve: error: {no_space_message(small)}; ")
    assert "TMPDIR at" in line and VECTORS not in line and str(index_with_vectors) not in line
    assert list(small.iterdir()) == []  # the part copied went too


def test_a_private_copy_in_a_full_tmpdir_names_tmpdir(
    index_with_vectors: Path,
    tmp_path: Path,
    tmpfs: Mount,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    small = tmpfs(SMALL, tmp_path / "small")
    monkeypatch.setattr(tempfile, "tempdir", str(small))
    with pytest.raises(InvalidIndex, match="^" + re.escape(no_space_message(small))):
        TantivyRetriever(index_with_vectors, private_copy=True)
    assert list(small.iterdir()) == []


def test_a_full_disk_while_copying_names_tmpdir_without_a_mount(
    index_with_vectors: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A test double: the kernel's ENOSPC while copying the vectors, for where no tmpfs can be mounted
    (the test above makes the real one)."""
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    copyfile = shutil.copyfile

    def full(source: Path, target: Path) -> object:
        if source.name == VECTORS:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(source))
        return copyfile(source, target)

    monkeypatch.setattr(index_copy.shutil, "copyfile", full)
    with pytest.raises(InvalidIndex, match="^" + re.escape(no_space_message(tmp_path))):
        TantivyRetriever(index_with_vectors, private_copy=True)
    assert list(tmp_path.iterdir()) == []


def search_dense(index: Path, capsys: pytest.CaptureFixture[str]) -> str:
    """`fanfuse search --dense` on `index`; what it printed to stderr."""
    capsys.readouterr()
    assert main(["search", "--index", str(index), "owls at night", "--dense", "--json"]) == 0
    captured = capsys.readouterr()
    assert json.loads(captured.out)["hits"]
    return captured.err


def test_search_dense_on_a_read_only_index_says_the_vectors_were_not_kept(
    tmp_path: Path, tmpfs: Mount, capsys: pytest.CaptureFixture[str]
) -> None:
    needs_embed()
    place = tmpfs("8m", tmp_path / "readonly")
    TantivyRetriever.build(DOCUMENTS, place / "index")
    read_only(place)
    for _ in range(2):  # not kept: the second run embeds them again, and says so again
        message = search_dense(place / "index", capsys)
        assert message.startswith(f"embedded {len(DOCUMENTS)} documents, not kept: {place / 'index'} ")
        assert "temporary copy" in message and "kept in" not in message
    assert not has_dense_index(TantivyRetriever(place / "index").data_directory)


def test_search_dense_on_a_full_disk_says_the_vectors_were_not_kept(
    tmp_path: Path, tmpfs: Mount, capsys: pytest.CaptureFixture[str]
) -> None:
    needs_embed()
    place = tmpfs("4m", tmp_path / "full")
    index = TantivyRetriever.build(DOCUMENTS, place / "index")
    with (place / "filler").open("wb", buffering=0) as filler, pytest.raises(OSError, match="No space"):
        while True:
            filler.write(b"\0" * 65536)
    message = search_dense(place / "index", capsys)
    target = index.data_directory / DENSE_DIR
    assert message.startswith(
        f"embedded {len(DOCUMENTS)} documents, not kept: they could not be written to {target};"
    )
    assert not has_dense_index(index.data_directory)


def test_demo_on_a_read_only_cache_says_the_vectors_were_not_kept(
    tmp_path: Path, tmpfs: Mount, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    needs_embed()
    small_stdlib(monkeypatch)
    cache = tmpfs("16m", tmp_path / "cache")
    question = "How do I send mail from a Python script?"
    assert main(["demo", "--cache-dir", str(cache), "--no-dense", question]) == 0
    read_only(cache)
    capsys.readouterr()
    assert main(["demo", "--cache-dir", str(cache), question]) == 0
    [line] = [line for line in capsys.readouterr().out.splitlines() if line.startswith("dense: ")]
    assert ", not kept: " in line and "temporary copy" in line and "kept in" not in line
