"""Output paths that are not a plain new file: an input, a link, a FIFO, a device, stdout, a directory,
a read-only or an existing file, and temporaries left by a killed writer. Each is written, streamed or
refused as docs/run-files.md ("Output paths") says, and nothing already there is lost."""

from __future__ import annotations

import fcntl
import os
import signal
import stat
import subprocess
from collections.abc import Callable
from pathlib import Path

import fanfuse
import pytest
from cli_process import CLI, ended_pid, has_open, signal_when
from fanfuse.cli import main

A = "q1 Q0 d1 1 3 a\nq1 Q0 d2 2 2 a\n"
B = "q1 Q0 d2 1 3 b\nq2 Q0 d9 1 1 b\n"
PREVIOUS = b"a previous output the user wants to keep\n"


@pytest.fixture()
def runs(tmp_path: Path) -> list[str]:
    (tmp_path / "a.trec").write_text(A)
    (tmp_path / "b.trec").write_text(B)
    return [str(tmp_path / "a.trec"), str(tmp_path / "b.trec")]


@pytest.fixture()
def expected(runs: list[str], tmp_path: Path) -> bytes:
    """What fusing the two runs writes to a plain new file."""
    fanfuse.fuse_files(runs, str(tmp_path / "plain.out"))
    return (tmp_path / "plain.out").read_bytes()


def temporaries(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir() if p.name.endswith(".fanfuse-tmp"))


@pytest.mark.parametrize(
    "spell",
    [
        lambda d: str(d / "a.trec"),
        lambda d: f"{d}/./a.trec",
        lambda d: f"{d}/../{d.name}/a.trec",
    ],
    ids=["same-path", "dot", "dotdot"],
)
def test_output_equal_to_an_input_is_refused_naming_both(
    runs: list[str], tmp_path: Path, spell: Callable[[Path], str]
) -> None:
    output = spell(tmp_path)
    with pytest.raises(fanfuse.InvalidOutput, match=r"the output '.*a\.trec' is the input '.*a\.trec'"):
        fanfuse.fuse_files(runs, output)
    assert (tmp_path / "a.trec").read_text() == A
    assert temporaries(tmp_path) == []


@pytest.mark.parametrize("link", ["symlink", "hardlink"])
def test_output_linked_to_an_input_is_refused(
    runs: list[str], tmp_path: Path, link: str, capsys: pytest.CaptureFixture[str]
) -> None:
    alias = tmp_path / "alias.trec"
    if link == "symlink":
        alias.symlink_to("a.trec")
    else:
        os.link(tmp_path / "a.trec", alias)
    assert main(["fuse", *runs, "-o", str(alias)]) == 2
    assert "is the input" in capsys.readouterr().err
    assert (tmp_path / "a.trec").read_text() == A
    assert alias.is_symlink() == (link == "symlink")


def test_symlink_is_followed_and_kept(runs: list[str], tmp_path: Path, expected: bytes) -> None:
    (tmp_path / "real.out").write_bytes(PREVIOUS)
    (tmp_path / "link.out").symlink_to("real.out")
    fanfuse.fuse_files(runs, str(tmp_path / "link.out"))
    assert (tmp_path / "link.out").is_symlink()
    assert (tmp_path / "real.out").read_bytes() == expected


def test_dangling_symlink_creates_its_target(runs: list[str], tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    (tmp_path / "link.out").symlink_to("sub/new.out")
    run = fanfuse.read_run(runs[0])
    run.write(str(tmp_path / "link.out"))
    run.write(str(tmp_path / "plain.out"))
    assert (tmp_path / "link.out").is_symlink()
    assert (tmp_path / "sub" / "new.out").read_bytes() == (tmp_path / "plain.out").read_bytes()


def test_fifo_is_streamed_into(runs: list[str], tmp_path: Path, expected: bytes) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    # A reader that is already there (non-blocking, so the test never waits on a writer that is not).
    reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
    try:
        fanfuse.fuse_files(runs, str(fifo))
        received = os.read(reader, 1 << 16)
    finally:
        os.close(reader)
    assert received == expected
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    assert temporaries(tmp_path) == []


needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="device nodes and other owners need root")


@needs_root
def test_character_device_is_written_in_place(runs: list[str], tmp_path: Path) -> None:
    null = tmp_path / "null"
    os.mknod(null, 0o666 | stat.S_IFCHR, os.makedev(1, 3))  # the same device as /dev/null
    fanfuse.fuse_files(runs, str(null))
    fanfuse.read_run(runs[0]).write(str(null))
    assert stat.S_ISCHR(os.lstat(null).st_mode)
    assert temporaries(tmp_path) == []


@needs_root
def test_full_device_reports_no_space_and_stays_a_device(
    runs: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    full = tmp_path / "full"
    os.mknod(full, 0o666 | stat.S_IFCHR, os.makedev(1, 7))  # the same device as /dev/full
    with pytest.raises(fanfuse.InvalidOutput, match=r"full: No space left on device"):
        fanfuse.fuse_files(runs, str(full))
    assert main(["fuse", *runs, "-o", str(full)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("fanfuse fuse: error: ") and "No space left on device" in err
    assert len(err.splitlines()) == 1
    assert stat.S_ISCHR(os.lstat(full).st_mode)


def run_cli(
    args: list[str], cwd: Path, stdout: int | object = subprocess.PIPE
) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [*CLI, *args],
        cwd=cwd,
        stdout=stdout,
        stderr=subprocess.PIPE,
        check=False,
    )


@pytest.mark.parametrize("spelling", ["-", "stdout-link"])
def test_stdout_is_streamed_into(runs: list[str], tmp_path: Path, expected: bytes, spelling: str) -> None:
    # A link to /proc/self/fd/1 is what /dev/stdout is; made here so that a failure never touches /dev.
    if spelling == "stdout-link":
        (tmp_path / "stdout-link").symlink_to("/proc/self/fd/1")
    done = run_cli(["fuse", *runs, "-o", spelling], cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout == expected
    assert not (tmp_path / "-").exists()
    assert spelling == "-" or (tmp_path / "stdout-link").is_symlink()


def test_stdout_appending_to_a_file_keeps_what_was_there(
    runs: list[str], tmp_path: Path, expected: bytes
) -> None:
    (tmp_path / "stdout-link").symlink_to("/proc/self/fd/1")
    log = tmp_path / "log.txt"
    log.write_bytes(PREVIOUS)
    with log.open("ab") as append:
        done = run_cli(["fuse", *runs, "-o", "stdout-link"], cwd=tmp_path, stdout=append)
    assert done.returncode == 0, done.stderr
    assert log.read_bytes() == PREVIOUS + expected


def test_directory_is_refused(runs: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "out").mkdir()
    assert main(["fuse", *runs, "-o", str(tmp_path / "out")]) == 2
    assert "is a directory; give the path of a file to write" in capsys.readouterr().err
    assert (tmp_path / "out").is_dir()


def test_read_only_file_is_refused(runs: list[str], tmp_path: Path) -> None:
    kept = tmp_path / "kept.out"
    kept.write_bytes(PREVIOUS)
    kept.chmod(0o444)
    with pytest.raises(fanfuse.InvalidOutput, match="is read-only; refusing to replace it"):
        fanfuse.fuse_files(runs, str(kept))
    with pytest.raises(fanfuse.InvalidOutput, match="is read-only"):
        fanfuse.read_run(runs[0]).write(str(kept))
    assert kept.read_bytes() == PREVIOUS


def test_replaced_file_keeps_its_permission_bits(runs: list[str], tmp_path: Path, expected: bytes) -> None:
    out = tmp_path / "shared.out"
    out.write_bytes(PREVIOUS)
    out.chmod(0o640)
    fanfuse.fuse_files(runs, str(out))
    assert out.read_bytes() == expected
    assert stat.S_IMODE(out.stat().st_mode) == 0o640


@needs_root
def test_replaced_file_keeps_its_owner_when_root_writes_it(runs: list[str], tmp_path: Path) -> None:
    out = tmp_path / "theirs.out"
    out.write_bytes(PREVIOUS)
    os.chown(out, 12345, 23456)
    fanfuse.read_run(runs[0]).write(str(out))
    assert (out.stat().st_uid, out.stat().st_gid) == (12345, 23456)
    assert out.read_bytes() != PREVIOUS


def test_stale_temporaries_of_dead_writers_are_removed_and_live_ones_kept(
    runs: list[str], tmp_path: Path
) -> None:
    dead = ended_pid()
    stale = tmp_path / f".fused.out.{dead}.0.fanfuse-tmp"
    live = tmp_path / ".fused.out.1.0.fanfuse-tmp"  # PID 1 is always running
    other_output = tmp_path / f".other.out.{dead}.0.fanfuse-tmp"
    locked = tmp_path / f".fused.out.{dead}.1.fanfuse-tmp"
    for path in (stale, live, other_output, locked):
        path.write_bytes(b"partial")
    with locked.open("rb") as held:  # its writer lives on in another PID namespace, say
        fcntl.flock(held, fcntl.LOCK_EX)
        fanfuse.fuse_files(runs, str(tmp_path / "fused.out"))
    assert not stale.exists()
    assert live.exists() and other_output.exists() and locked.exists()


def test_waiting_for_a_fifo_reader_stops_on_ctrl_c(runs: list[str], tmp_path: Path) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    # Its inputs are open once the command runs; then it waits for a reader that never comes.
    done = signal_when(["fuse", *runs, "-o", str(fifo)], tmp_path, has_open(Path(runs[1])), signal.SIGINT)
    assert done.returncode == -signal.SIGINT, done.stderr
    assert done.stderr == b"fanfuse fuse: interrupted\n"
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
