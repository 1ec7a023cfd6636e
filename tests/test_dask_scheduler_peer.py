"""`--scheduler` at an address where something other than a Dask scheduler answers (a server that
speaks first, as SSH does, or sends bytes distributed's handshake cannot read) is one line naming the
address and the failed handshake, exit 2, nothing written: not "out of memory" (distributed reads a
frame length from the peer's bytes), not a traceback. Every command with `--scheduler` (from the
parsers) x each peer; the peers are real loopback servers."""

from __future__ import annotations

import argparse
import contextlib
import socket
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from cli_process import CLI
from dask_inputs import COMMAND_SECONDS, write_runs
from fanfuse.cli import build_parser

pytest.importorskip("distributed")

PEERS = {
    "ssh": b"SSH-2.0-OpenSSH_9.2p1 Debian-2\r\n" * 4,
    "http": b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n" * 4,
    "bytes": bytes(range(256)) * 4,
}


@pytest.fixture(params=sorted(PEERS))
def peer(request: pytest.FixtureRequest) -> Iterator[str]:
    """A loopback server that sends its bytes to each connection, then closes it."""
    banner = PEERS[request.param]
    server = socket.create_server(("127.0.0.1", 0))
    stop = threading.Event()

    def serve() -> None:
        server.settimeout(0.1)
        while not stop.is_set():
            try:
                connection, _ = server.accept()
            except TimeoutError:
                continue
            with connection, contextlib.suppress(OSError):
                connection.sendall(banner)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield f"tcp://127.0.0.1:{server.getsockname()[1]}"
    finally:
        stop.set()
        thread.join()
        server.close()


def scheduler_commands() -> list[str]:
    parser = build_parser()
    (sub,) = (a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return sorted(
        n for n, c in sub.choices.items() if any("--scheduler" in a.option_strings for a in c._actions)
    )


def test_the_commands_with_a_scheduler_are_known() -> None:
    assert scheduler_commands() == ["eval", "fuse"]


@pytest.mark.parametrize("command", scheduler_commands())
def test_a_peer_that_is_not_a_scheduler_is_one_line_naming_it(
    command: str, peer: str, tmp_path: Path
) -> None:
    runs = write_runs(tmp_path, 2, interleaved=False)
    output = tmp_path / "fused.trec"
    args = ["-o", str(output)] if command == "fuse" else ["--qrels", str(tmp_path / "qrels.txt")]
    argv = [*CLI, command, *map(str, runs), *args, "--engine", "dask", "--scheduler", peer]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=COMMAND_SECONDS)
    err = done.stderr.strip().splitlines()
    assert done.returncode == 2
    assert len(err) == 1 and err[0].startswith(
        f"fanfuse {command}: error: --scheduler {peer}: cannot connect"
    ), err
    assert "memory" not in err[0]
    assert not output.exists()
