"""`fanfuse serve`'s app behind a real uvicorn server on 127.0.0.1 (a free port), in a thread of the
test process or as the `fanfuse serve` command; both are stopped when the test ends."""

from __future__ import annotations

import contextlib
import select
import signal
import subprocess
import threading
from collections.abc import Iterator
from typing import Any

import uvicorn
from cli_process import CLI
from fanfuse.cli.serve import listening_socket

STOP_SECONDS = 30


@contextlib.contextmanager
def serving(app: Any, **config: Any) -> Iterator[str]:
    """The app's base URL, served until the block ends (`config`: more of uvicorn's settings). The
    socket listens before the server starts, so a first request waits in its backlog instead of
    failing."""
    listening = listening_socket("127.0.0.1", 0)
    port = listening.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", **config))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [listening]}, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(STOP_SECONDS)
        listening.close()
        assert not thread.is_alive(), "the server did not stop"


@contextlib.contextmanager
def serve_command(*args: str) -> Iterator[tuple[str, subprocess.Popen[str]]]:
    """`fanfuse serve --port 0 ARGS` as a process: its base URL (from the line it prints once it
    listens) and the process; SIGTERM ends it when the block ends (killed if it does not stop)."""
    process = subprocess.Popen(
        [*CLI, "serve", "--port", "0", *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        assert process.stdout is not None
        ready, _, _ = select.select([process.stdout], [], [], 120)
        line = process.stdout.readline() if ready else ""
        assert line.startswith("fanfuse serve: listening on http://127.0.0.1:"), (line, process.poll())
        yield line.split()[-1], process
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
        try:
            process.wait(STOP_SECONDS)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
            raise
