"""Read-only places, empty inputs, full devices and unreachable schedulers end a command with one
line and exit 2, never a traceback, and nothing already there is lost: an index or the demo's cache
on a read-only filesystem, an empty corpus given for an existing index, runs and qrels that share no
query, a report written to /dev/full, a Dask scheduler where nothing listens or answers."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from cli_process import CLI
from command_inputs import write_inputs
from fanfuse.cli import main
from fanfuse.errors import InvalidCorpus
from fanfuse.retrievers.tantivy_index import TantivyRetriever


@pytest.fixture()
def runs(tmp_path: Path) -> Path:
    return write_inputs(tmp_path)


can_mount = os.geteuid() == 0 and shutil.which("unshare") is not None and sys.platform == "linux"


def read_only_run(args: list[str], read_only: Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    """The command in a process of its own mount namespace where `read_only` is a read-only tmpfs."""
    script = 'mount -t tmpfs -o ro fanfuse-ro "$0" && exec "$@"'
    return subprocess.run(
        ["unshare", "--mount", "sh", "-c", script, str(read_only), *CLI, *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )


@pytest.mark.skipif(not can_mount, reason="a read-only mount needs root and unshare (Linux)")
@pytest.mark.parametrize("command", ["index", "demo"])
def test_a_read_only_place_is_one_line_naming_it(runs: Path, command: str) -> None:
    read_only = runs / "ro"
    read_only.mkdir()
    (runs / "corpus.jsonl").write_text('{"id": "d1", "text": "some text"}\n')
    args = {
        "index": ["index", str(runs / "corpus.jsonl"), "--index", str(read_only / "index")],
        "demo": ["demo", "--cache-dir", str(read_only / "cache"), "--no-dense", "json"],
    }[command]
    done = read_only_run(args, read_only, runs)
    assert done.returncode == 2, done.stderr
    option = {"index": "--index", "demo": "--cache-dir"}[command]
    assert done.stderr.startswith(f"fanfuse {command}: error: {option} '{read_only}/"), done.stderr
    assert "Read-only file system" in done.stderr and len(done.stderr.splitlines()) == 1, done.stderr


def test_an_empty_corpus_leaves_the_existing_index(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    index = tmp_path / "index"
    TantivyRetriever.build([{"id": f"d{i}", "text": f"word{i}"} for i in range(200)], index)
    for name, text in [("empty.jsonl", ""), ("blank.jsonl", "\n  \n\n")]:
        corpus = tmp_path / name
        corpus.write_text(text)
        assert main(["index", str(corpus), "--index", str(index)]) == 2
        err = capsys.readouterr().err
        why = "no documents (the file is empty or holds only blank lines); a corpus needs at least one"
        assert err == f"fanfuse index: error: {corpus}: {why}\n"
        assert len(TantivyRetriever(index)) == 200
    with pytest.raises(InvalidCorpus, match="no documents to index"):
        TantivyRetriever.build([], index)
    assert len(TantivyRetriever(index)) == 200
    assert sorted(p.name for p in tmp_path.iterdir()) == ["blank.jsonl", "empty.jsonl", "index"]


@pytest.mark.parametrize(
    ("others", "extra"),
    [([], []), ([], ["--json"]), (["b.trec"], ["--baseline", "0"]), ([], ["--engine", "dask"])],
    ids=["table", "json", "report", "dask"],
)
def test_runs_and_qrels_sharing_no_query_are_refused(
    runs: Path, others: list[str], extra: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    inputs = [str(runs / name) for name in ("a.trec", *others)]
    assert main(["eval", *inputs, "--qrels", str(runs / "other-qrels.txt"), *extra]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.startswith(
        f"fanfuse eval: error: {runs / 'a.trec'}: none of its queries is in the qrels"
    )


def test_a_report_to_a_full_device_is_one_line(runs: Path, capsys: pytest.CaptureFixture[str]) -> None:
    args = ["eval", str(runs / "a.trec"), str(runs / "b.trec"), "--qrels", str(runs / "qrels.txt")]
    assert main([*args, "--baseline", "0", "-o", "/dev/full"]) == 2
    assert capsys.readouterr().err == "fanfuse eval: error: --output '/dev/full': No space left on device\n"


def test_a_scheduler_where_nothing_listens_fails_at_once(runs: Path) -> None:
    pytest.importorskip("distributed")
    with socket.socket() as probe:  # a port that was free a moment ago
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    args = ["fuse", "a.trec", "b.trec", "-o", "out.trec", "--engine", "dask"]
    done = subprocess.run(
        [*CLI, *args, "--scheduler", f"tcp://127.0.0.1:{port}"], cwd=runs, capture_output=True, text=True
    )
    assert done.returncode == 2
    assert done.stderr == f"fanfuse fuse: error: --scheduler tcp://127.0.0.1:{port}: cannot connect " \
                          "([Errno 111] Connection refused)\n"  # fmt: skip
    assert not (runs / "out.trec").exists()


def test_a_scheduler_that_never_answers_times_out(
    runs: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("distributed")
    from fanfuse.dask import command

    monkeypatch.setattr(command, "CONNECT_TIMEOUT", 1)
    with socket.socket() as silent:  # accepts connections (the kernel does) and never speaks
        silent.bind(("127.0.0.1", 0))
        silent.listen()
        address = f"tcp://127.0.0.1:{silent.getsockname()[1]}"
        code = main(
            [
                "fuse",
                str(runs / "a.trec"),
                "-o",
                str(runs / "out"),
                "--engine",
                "dask",
                "--scheduler",
                address,
            ]
        )
    assert code == 2
    err = capsys.readouterr().err
    assert (
        err.startswith(f"fanfuse fuse: error: --scheduler {address}: cannot connect (")
        and "no answer within 2 s" in err
    ), err
    assert len(err.splitlines()) == 1
