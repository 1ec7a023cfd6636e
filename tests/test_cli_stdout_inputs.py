"""Standard output is an output of the command that writes to it: redirected into one of the
command's inputs (`fanfuse eval a.trec --qrels q.txt >> a.trec`), it is refused as `-o -` is, before
anything is written (exit 2, naming the input; the input unchanged). Every invocation of the input
tests (every input read from a file, of every command) is run with its standard output appended to
each of its inputs in turn, in a separate process; those whose command writes nothing to standard
output are run with `-o -` instead where they have it, and left out otherwise."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from cli_process import CLI
from test_input_bounds import (
    INVOCATIONS,
    files,  # noqa: F401 (the fixture the invocations need)
    input_positions,
)


def _run(
    argv: list[str], cwd: Path, stdout: int | object = subprocess.PIPE
) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [*CLI, *argv], cwd=cwd, stdout=stdout, stderr=subprocess.PIPE, timeout=180, check=False
    )


def _writing_to_stdout(argv: list[str]) -> list[str]:
    """`argv` with its output, if any, sent to standard output."""
    if "-o" in argv:
        at = argv.index("-o")
        return [*argv[: at + 1], "-", *argv[at + 2 :]]
    return argv


CASES = [(_writing_to_stdout(argv), at) for argv in INVOCATIONS for at, _ in input_positions(argv)]


@pytest.mark.parametrize(
    ("argv", "at"), CASES, ids=[f"{a[0]} >> {a[at]} ({n})" for n, (a, at) in enumerate(CASES)]
)
def test_standard_output_appended_to_an_input_is_refused(
    files: Path,  # noqa: F811
    tmp_path: Path,
    argv: list[str],
    at: int,
) -> None:
    work = tmp_path / "work"
    shutil.copytree(files, work, symlinks=True)
    done = _run(argv, work)
    if done.returncode != 0 or not done.stdout:
        pytest.skip(f"{' '.join(argv)} writes nothing to standard output ({done.returncode})")
    target = work / argv[at]
    before = target.read_bytes()
    with target.open("ab") as append:
        refused = _run(argv, work, stdout=append)
    err = refused.stderr.decode()
    assert refused.returncode == 2, err
    assert target.read_bytes() == before
    assert err.startswith(f"fanfuse {argv[0]}: error: the output "), err
    assert "is the input " in err and f"{argv[at]!r} (the same file)" in err, err


def test_eval_appended_to_its_run_is_refused_and_to_another_file_writes(tmp_path: Path) -> None:
    (tmp_path / "a.trec").write_text("q1 Q0 d1 1 2.0 a\nq1 Q0 d2 2 1.0 a\n")
    (tmp_path / "q.txt").write_text("q1 0 d1 1\n")
    argv = ["eval", "a.trec", "--qrels", "q.txt"]
    with (tmp_path / "a.trec").open("ab") as append:
        refused = _run(argv, tmp_path, stdout=append)
    assert refused.returncode == 2
    assert refused.stderr.decode() == (
        "fanfuse eval: error: the output standard output '-' is the input RUN 'a.trec' (the same file); "
        "write the output to another path\n"
    )
    assert (tmp_path / "a.trec").read_text() == "q1 Q0 d1 1 2.0 a\nq1 Q0 d2 2 1.0 a\n"
    with (tmp_path / "report.txt").open("ab") as append:
        assert _run(argv, tmp_path, stdout=append).returncode == 0
    assert "ndcg@10" in (tmp_path / "report.txt").read_text()
