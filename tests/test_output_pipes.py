"""A reader that closes the pipe early (`fanfuse ... | head -c 10`) ends every command quietly: no
traceback, nothing on stderr, the status of a process ended by SIGPIPE (141), as the shell's own
tools end. One invocation per command of the parser writes to stdout, whose reader is gone before
the command starts, so that its first write fails (no race with a reader that reads a little)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from cli_process import CLI
from command_inputs import write_inputs
from fanfuse.cli import COMMANDS
from fanfuse.cli._common import CLOSED_PIPE
from fanfuse.corpus import read_jsonl
from fanfuse.retrievers.tantivy_index import TantivyRetriever

# What each command prints to stdout, on the files of the `files` fixture.
PRINTING = {
    "demo": ["demo", "--cache-dir", "cache", "--no-dense", "--top-k", "1", "json"],
    "index": ["index", "corpus.jsonl", "--index", "new-index"],
    "search": ["search", "--index", "index", "--json", "--no-dense", "alpha"],
    "serve": ["serve", "--index", "index", "--port", "0", "--no-dense"],
    "fuse": ["fuse", "a.trec", "b.trec", "-o", "-"],
    "eval": ["eval", "a.trec", "b.trec", "--qrels", "qrels.txt"],
    "tune": ["tune", "a.trec", "b.trec", "--qrels", "qrels.txt", "--folds", "2"],
}


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = write_inputs(tmp_path_factory.mktemp("pipes"))
    TantivyRetriever.build(read_jsonl(directory / "corpus.jsonl"), directory / "index")
    return directory


def test_every_command_has_an_invocation_that_prints() -> None:
    assert set(PRINTING) == set(COMMANDS)


@pytest.mark.parametrize("command", list(COMMANDS))
def test_a_closed_stdout_ends_the_command_quietly(files: Path, command: str) -> None:
    read_end, write_end = os.pipe()
    os.close(read_end)  # the reader is gone: every write to the pipe fails with EPIPE
    try:
        done = subprocess.run(
            [*CLI, *PRINTING[command]],
            cwd=files,
            stdin=subprocess.DEVNULL,
            stdout=write_end,
            stderr=subprocess.PIPE,
            timeout=600,
            check=False,
        )
    finally:
        os.close(write_end)
    assert (done.returncode, done.stderr.decode()) == (CLOSED_PIPE, "")
