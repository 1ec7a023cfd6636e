"""However `fanfuse serve` ends, its private copy of the index does not outlive it: SIGINT and SIGTERM
remove it (and end the process by that signal, exit status 130 / 143) with one worker or several; a
server killed by SIGKILL leaves it, and the next start removes it; a live server's copy is never
removed, not even one that only its orphaned workers still use. Each case runs the real command with
TMPDIR pointed at a directory of the test, which must hold nothing once every server has ended. The
other maker of such a copy, `fanfuse search` on a read-only index, is stopped mid-embedding the same
way."""

from __future__ import annotations

import contextlib
import fcntl
import gc
import json
import os
import select
import signal
import socket
import subprocess
import tempfile
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from cli_process import CLI, signal_when
from fanfuse.retrievers import index_copy
from fanfuse.retrievers.index_copy import COPY_PREFIX, OWNER_FILE
from fanfuse.retrievers.tantivy_index import TantivyRetriever
from test_cli_signals import ONNXRUNTIME_SESSION, cpu_seconds_at_least
from test_open_index import needs_embed
from tmpfs_mount import Mount, read_only

pytest.importorskip("uvicorn")

STOPPED = [signal.SIGINT, signal.SIGTERM]
WORKERS = [1, 2]
WAIT_SECONDS = 120


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("serve-exit") / "index"
    TantivyRetriever.build(({"id": f"d{i}", "text": f"word{i % 7} text {i}"} for i in range(200)), directory)
    return directory


@pytest.fixture
def tmpdir_env(tmp_path: Path) -> Path:
    """The TMPDIR the servers of one test share."""
    place = tmp_path / "tmp"
    place.mkdir()
    return place


def copies(place: Path) -> list[Path]:
    return sorted(place.iterdir())


class Server:
    """`fanfuse serve --port 0` as its own process group (the supervisor and its workers), with
    TMPDIR set; started once it answers /healthz."""

    def __init__(self, index: Path, place: Path, workers: int) -> None:
        self.process = subprocess.Popen(
            [*CLI, "serve", "--index", str(index), "--port", "0", "--no-dense", "--workers", str(workers)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, "TMPDIR": str(place)},
            start_new_session=True,
        )
        assert self.process.stdout is not None
        ready, _, _ = select.select([self.process.stdout], [], [], WAIT_SECONDS)
        line = self.process.stdout.readline() if ready else ""
        assert line.startswith("fanfuse serve: listening on http://127.0.0.1:"), (line, self.process.poll())
        self.url = line.split()[-1]
        # Once a worker answers, every worker has opened the copy or is opening it.
        assert self.healthz()["status"] == "ok"

    def healthz(self) -> dict[str, object]:
        with urllib.request.urlopen(f"{self.url}/healthz", timeout=WAIT_SECONDS) as answer:
            return dict(json.load(answer))

    def stop(self, signum: int) -> tuple[int, str]:
        """Sends `signum` to the supervisor only; its exit status and stderr."""
        self.process.send_signal(signum)
        _, stderr = self.process.communicate(timeout=WAIT_SECONDS)
        return self.process.returncode, stderr

    def kill_group(self) -> None:
        """SIGKILL to every process of the server (as a service manager kills one)."""
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGKILL)
        self.process.communicate(timeout=WAIT_SECONDS)


@contextlib.contextmanager
def cleaned_up(servers: list[Server]) -> Iterator[None]:
    """Whatever the test asserts, no server outlives it."""
    try:
        yield
    finally:
        for server in servers:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(server.process.pid, signal.SIGKILL)
            server.process.communicate(timeout=WAIT_SECONDS)


@pytest.mark.parametrize("workers", WORKERS)
@pytest.mark.parametrize("signum", STOPPED, ids=lambda s: signal.Signals(s).name)
def test_a_signal_removes_the_copy_and_ends_the_server_by_it(
    index: Path, tmpdir_env: Path, signum: int, workers: int
) -> None:
    servers: list[Server] = []
    with cleaned_up(servers):
        servers.append(server := Server(index, tmpdir_env, workers))
        [copy] = copies(tmpdir_env)
        assert copy.name.startswith(COPY_PREFIX)
        assert (copy / OWNER_FILE).read_text() == f"{server.process.pid}\n"
        code, stderr = server.stop(signum)
        assert code == -signum, stderr
        assert stderr == "fanfuse serve: interrupted\n"
        assert copies(tmpdir_env) == []


@pytest.mark.parametrize("workers", WORKERS)
def test_the_copy_of_a_killed_server_goes_at_the_next_start(
    index: Path, tmpdir_env: Path, workers: int
) -> None:
    servers: list[Server] = []
    with cleaned_up(servers):
        servers.append(killed := Server(index, tmpdir_env, workers))
        [left] = copies(tmpdir_env)
        killed.kill_group()
        assert copies(tmpdir_env) == [left]
        servers.append(restarted := Server(index, tmpdir_env, workers))
        [copy] = copies(tmpdir_env)
        assert copy != left
        assert restarted.stop(signal.SIGTERM)[0] == -signal.SIGTERM
        assert copies(tmpdir_env) == []


def test_a_live_servers_copy_is_never_removed(index: Path, tmpdir_env: Path) -> None:
    servers: list[Server] = []
    with cleaned_up(servers):
        servers.append(first := Server(index, tmpdir_env, 1))
        [first_copy] = copies(tmpdir_env)
        servers.append(second := Server(index, tmpdir_env, 1))
        assert first_copy in copies(tmpdir_env) and len(copies(tmpdir_env)) == 2
        assert first.healthz()["status"] == "ok"
        for server in (first, second):
            assert server.stop(signal.SIGTERM)[0] == -signal.SIGTERM
        assert copies(tmpdir_env) == []


def test_orphaned_workers_keep_their_copy_until_they_end(index: Path, tmpdir_env: Path) -> None:
    """A supervisor killed alone leaves its workers serving from the copy: the next start leaves it;
    once the workers are gone too, the start after removes it."""
    servers: list[Server] = []
    with cleaned_up(servers):
        servers.append(orphaned := Server(index, tmpdir_env, 2))
        [copy] = copies(tmpdir_env)
        os.kill(orphaned.process.pid, signal.SIGKILL)
        orphaned.process.wait(WAIT_SECONDS)
        assert orphaned.healthz()["status"] == "ok"  # the workers still answer on the port
        servers.append(second := Server(index, tmpdir_env, 1))
        assert copy in copies(tmpdir_env)
        assert second.stop(signal.SIGTERM)[0] == -signal.SIGTERM
        orphaned.kill_group()
        servers.append(third := Server(index, tmpdir_env, 1))
        assert copy not in copies(tmpdir_env)
        assert third.stop(signal.SIGTERM)[0] == -signal.SIGTERM
        assert copies(tmpdir_env) == []


def test_a_server_that_cannot_listen_exits_2_without_its_copy(index: Path, tmpdir_env: Path) -> None:
    """The copy is made before the socket is bound: an error after it takes the ordinary exit."""
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = str(taken.getsockname()[1])
        done = subprocess.run(
            [*CLI, "serve", "--index", str(index), "--port", port, "--no-dense"],
            capture_output=True,
            text=True,
            env={**os.environ, "TMPDIR": str(tmpdir_env)},
            timeout=WAIT_SECONDS,
            check=False,
        )
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith("fanfuse serve: error: ") and len(done.stderr.splitlines()) == 1
    assert copies(tmpdir_env) == []


@pytest.mark.parametrize("signum", STOPPED, ids=lambda s: signal.Signals(s).name)
def test_search_on_a_read_only_index_removes_its_copy_on_a_signal(
    tmp_path: Path, tmpfs: Mount, tmpdir_env: Path, monkeypatch: pytest.MonkeyPatch, signum: int
) -> None:
    """Tantivy cannot open a read-only index in place: `search` copies it, and embeds the documents
    into the copy (`--dense`), which the signal interrupts."""
    needs_embed()
    place = tmpfs("32m", tmp_path / "readonly")
    documents = ({"id": f"d{i}", "text": f"word{i % 97} text {i} " * 8} for i in range(5_000))
    TantivyRetriever.build(documents, place / "index")
    read_only(place)
    monkeypatch.setenv("TMPDIR", str(tmpdir_env))

    def embedding(process: subprocess.Popen[bytes]) -> bool:
        return bool(copies(tmpdir_env)) and cpu_seconds_at_least(1.0)(process)

    args = ["search", "--index", str(place / "index"), "--dense", "word3"]
    done = signal_when(args, tmp_path, embedding, signum)
    assert done.returncode == -signum, done.stderr
    assert done.stderr.decode().endswith("fanfuse search: interrupted\n")
    assert [p for p in copies(tmpdir_env) if p.name != ONNXRUNTIME_SESSION] == []


# The sweep itself, in this process: which leftovers in the temporary directory it removes.


@pytest.fixture
def temporary(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    return tmp_path


def leftover(place: Path, name: str, owner: str | None) -> Path:
    directory = place / f"{COPY_PREFIX}{name}"
    (directory / "v").mkdir(parents=True)
    (directory / "v" / "vectors.npy").write_bytes(b"x" * 100)
    if owner is not None:
        (directory / OWNER_FILE).write_text(owner)
    return directory


def test_the_sweep_removes_only_unlocked_copies_that_name_their_owner(temporary: Path) -> None:
    dead = leftover(temporary, "dead", "12345\n")
    being_made = leftover(temporary, "new", "")  # the owner file is written after its lock is taken
    foreign = leftover(temporary, "foreign", None)  # no owner file: not a copy this sweep knows
    other = temporary / "fanfuse-other"
    other.mkdir()
    (other / OWNER_FILE).write_text("1\n")
    target = leftover(temporary / "elsewhere", "target", "1\n")
    link = temporary / f"{COPY_PREFIX}link"
    link.symlink_to(target)  # the sweep never follows a link out of the temporary directory
    theirs = leftover(temporary, "theirs", "1\n")
    root = os.getuid() == 0
    if root:  # another user's leftover, where this test may give one away (else it stays ours)
        for path in (theirs, *theirs.rglob("*")):
            os.chown(path, 65534, 65534, follow_symlinks=False)
    live = leftover(temporary, "live", "1\n")
    # A lock on its own open file, as another process's: flock locks belong to the open file.
    holder = os.open(live / OWNER_FILE, os.O_RDONLY)
    try:
        fcntl.flock(holder, fcntl.LOCK_SH)
        assert sorted(index_copy.remove_stale_copies()) == sorted([dead] if root else [dead, theirs])
        kept = [being_made, foreign, other, live, link, temporary / "elsewhere", *([theirs] if root else [])]
        assert sorted(copies(temporary)) == sorted(kept)
        assert (target / "v" / "vectors.npy").is_file()
    finally:
        os.close(holder)
    assert index_copy.remove_stale_copies() == [live]


def test_a_copy_of_this_process_is_kept_by_its_own_sweep(index: Path, temporary: Path) -> None:
    opened = TantivyRetriever(index, private_copy=True)
    again = TantivyRetriever(index, private_copy=True)
    assert opened.private_directory is not None and again.private_directory is not None
    assert {opened.private_directory, again.private_directory} == set(copies(temporary))
    assert [h.id for h in opened.search("word3", 2)] == [h.id for h in again.search("word3", 2)]
    del opened, again
    gc.collect()
    assert copies(temporary) == []
