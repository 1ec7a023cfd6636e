"""A file compressed in a format fanfuse does not read (bzip2, xz: real files, made by Python's own
compressors) is refused by every reader, naming the format and the command that decompresses it,
not as text that is "invalid UTF-8" at line 1. Every reader opens files through the core's one line
source, so the readers listed here are all of them: runs, qrels, corpora, the streaming fusion, the
distributed engine's blocks, and the commands over them."""

from __future__ import annotations

import bz2
import lzma
from collections.abc import Callable
from pathlib import Path
from typing import Any

import fanfuse
import pytest
from fanfuse.cli import main
from fanfuse.corpus import read_jsonl
from fanfuse.errors import InvalidCorpus
from fanfuse.tables import read_any_qrels, read_any_run

RUN = "q1 Q0 a 1 2.0 t\nq1 Q0 b 2 1.0 t\n"
QRELS = "q1 0 a 1\n"
CORPUS = '{"id": "a", "text": "barn owls"}\n'
FORMATS = {"bzip2": (bz2.compress, "bunzip2 -k"), "xz": (lzma.compress, "unxz -k")}

READERS: dict[str, tuple[str, Callable[[str, Path], Any]]] = {
    "read_run": (RUN, lambda path, _: fanfuse.read_run(path)),
    "read_qrels": (QRELS, lambda path, _: fanfuse.read_qrels(path)),
    "read_any_run": (RUN, lambda path, _: read_any_run(path)),
    "read_any_qrels": (QRELS, lambda path, _: read_any_qrels(path)),
    "fuse_files": (RUN, lambda path, tmp: fanfuse.fuse_files([path, path], str(tmp / "out.trec"))),
    "read_jsonl": (CORPUS, lambda path, _: list(read_jsonl(path))),
    "file_blocks": (RUN, lambda path, _: fanfuse._core._internal.file_blocks(path, block_bytes=1 << 20)),
}
COMMANDS: dict[str, tuple[str, Callable[[str, Path], list[str]]]] = {
    "fuse": (RUN, lambda path, tmp: ["fuse", path, path, "-o", str(tmp / "out.trec")]),
    "eval": (RUN, lambda path, tmp: ["eval", path, "--qrels", write(tmp / "q.txt", QRELS)]),
    "eval --qrels": (QRELS, lambda path, tmp: ["eval", write(tmp / "r.trec", RUN), "--qrels", path]),
    "index": (CORPUS, lambda path, tmp: ["index", path, "--index", str(tmp / "idx")]),
}


def write(path: Path, text: str) -> str:
    path.write_text(text)
    return str(path)


def compressed(tmp_path: Path, text: str, format: str) -> str:
    compress, _ = FORMATS[format]
    path = tmp_path / f"input.{format}"
    path.write_bytes(compress(text.encode()))
    return str(path)


@pytest.mark.parametrize("format", list(FORMATS))
@pytest.mark.parametrize("reader", list(READERS))
def test_every_reader_names_the_compression(tmp_path: Path, reader: str, format: str) -> None:
    text, read = READERS[reader]
    path = compressed(tmp_path, text, format)
    with pytest.raises((fanfuse.FusionError, InvalidCorpus)) as refused:
        read(path, tmp_path)
    command = FORMATS[format][1]
    assert str(refused.value) == (
        f"{path}: is {format}-compressed, which fanfuse does not read (it reads plain or gzip-compressed "
        f"text): decompress it first ({command} {path})"
    )


@pytest.mark.parametrize("format", list(FORMATS))
@pytest.mark.parametrize("command", list(COMMANDS))
def test_every_command_names_the_compression(
    tmp_path: Path, command: str, format: str, capsys: pytest.CaptureFixture[str]
) -> None:
    text, argv = COMMANDS[command]
    path = compressed(tmp_path, text, format)
    assert main(argv(path, tmp_path)) == 2
    error = capsys.readouterr().err
    assert f"is {format}-compressed, which fanfuse does not read" in error, error
    assert not (tmp_path / "out.trec").exists() and not (tmp_path / "idx").exists()
