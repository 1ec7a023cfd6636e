"""A command started with a standard stream closed (`>&-`, `2>&-`, `<&-`: cron, a daemon, a careless
script) ends as it does with the stream on /dev/null, and writes nothing into its inputs. Python
leaves such a stream None, so a flush to it would fail, and the first file a command opens would
take the closed descriptor, so that `fuse RUN RUN -o -` would find its output to be its own first
input."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from cli_process import CLI
from test_input_bounds import (
    INVOCATIONS,
    files,  # noqa: F401 (the fixture the invocations need)
)

STREAMS = {"stdin": 0, "stdout": 1, "stderr": 2}
OUTPUTS = ("out", "index/")  # what the invocations write
# Every invocation that reads files, and the run written to standard output.
CASES = [*INVOCATIONS, ["fuse", "a.trec", "b.trec", "-o", "-"]]


def contents(directory: Path) -> dict[str, str]:
    return {
        str(path.relative_to(directory)): hashlib.sha256(path.read_bytes()).hexdigest()
        for path in sorted(directory.rglob("*"))
        if path.is_file()
    }


def run(argv: list[str], directory: Path, closed: int | None) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [*CLI, *argv],
        cwd=directory,
        stdin=subprocess.DEVNULL if closed != 0 else None,
        stdout=subprocess.PIPE if closed != 1 else None,
        stderr=subprocess.PIPE if closed != 2 else None,
        # After the redirections: the command starts with that descriptor closed.
        preexec_fn=None if closed is None else lambda: os.close(closed),
        check=False,
        timeout=300,
    )


@pytest.mark.parametrize("stream", STREAMS)
@pytest.mark.parametrize("argv", CASES, ids=[" ".join(argv[:2]) + f"..{len(argv)}" for argv in CASES])
def test_a_closed_stream_reads_as_the_null_device(
    argv: list[str],
    stream: str,
    files: Path,  # noqa: F811 (the fixture)
    tmp_path: Path,
) -> None:
    opened_in, closed_in = tmp_path / "opened", tmp_path / "closed"
    for directory in (opened_in, closed_in):
        shutil.copytree(files, directory, ignore=shutil.ignore_patterns("endless", "huge-model"))
    inputs = {name: digest for name, digest in contents(closed_in).items() if not name.startswith(OUTPUTS)}
    opened = run(argv, opened_in, None)
    closed = run(argv, closed_in, STREAMS[stream])
    assert closed.returncode == opened.returncode, (closed.stderr, opened.stderr)
    after = contents(closed_in)
    assert {name: after.get(name) for name in inputs} == inputs
    if argv[0] == "fuse" and "-" not in argv:
        assert (closed_in / "out.trec").read_bytes() == (opened_in / "out.trec").read_bytes()
    if closed.stderr is not None:
        assert b"Traceback" not in closed.stderr and b"Error:" not in closed.stderr, closed.stderr
