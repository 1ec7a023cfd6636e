"""A connection that does not send a whole request in time is closed (`--request-timeout`), at every
moment a client can stall, on each HTTP stack uvicorn may run; a request that has arrived is answered
however long it takes; and stalled clients cannot use up `fanfuse serve`'s connections."""

from __future__ import annotations

import asyncio
import contextlib
import resource
import signal
import socket
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("fastapi")
pytest.importorskip("uvicorn")

import httpx
from fanfuse.errors import InvalidSetting, OutOfRange
from fanfuse.retrievers.tantivy_index import TantivyRetriever
from fanfuse.service.request_deadline import PROTOCOLS, http_protocol
from service_server import serve_command, serving
from test_cli_search_options import DOCUMENTS

DEADLINE = 0.5
# How long a test waits to see a connection closed: far past the deadline, short of forever.
WAIT = 20.0
SLOW_APP_SECONDS = 3 * DEADLINE

HEAD = b"GET / HTTP/1.1\r\nHost: x\r\n\r\n"


async def app(scope: dict[str, Any], receive: Callable[..., Any], send: Callable[..., Any]) -> None:
    """Answers `ok` once the request's body is read; /slow only after SLOW_APP_SECONDS."""
    if scope["type"] != "http":
        return
    while (await receive()).get("more_body"):
        pass
    if scope["path"] == "/slow":
        await asyncio.sleep(SLOW_APP_SECONDS)
    await send({"type": "http.response.start", "status": 200, "headers": [(b"content-length", b"2")]})
    await send({"type": "http.response.body", "body": b"ok"})


@contextlib.contextmanager
def connection(stack: str) -> Iterator[socket.socket]:
    """A connection to the app served over `stack` with the deadline (and a keep-alive timeout far
    past it, so that only the deadline can close an idle connection)."""
    with serving(app, http=http_protocol(DEADLINE, stack), timeout_keep_alive=600) as url:
        host, port = url.removeprefix("http://").split(":")
        with socket.create_connection((host, int(port)), timeout=WAIT) as sock:
            yield sock


def assert_answered(sock: socket.socket, count: int = 1) -> None:
    """`count` whole answers arrive, each 200 with its two bytes of body."""
    data = b""
    while not (data.endswith(b"ok") and data.count(b"HTTP/1.1 200 ") == count):
        chunk = sock.recv(4096)
        assert chunk, f"closed before {count} answers (got {data!r})"
        data += chunk


def assert_closed(sock: socket.socket) -> None:
    """The server closes `sock` (what it sends before is skipped) within WAIT seconds."""
    try:
        while sock.recv(4096):
            pass
    except ConnectionResetError:
        pass
    except TimeoutError:
        pytest.fail(f"the connection is still open after {WAIT} s")


# Every moment a client can stop: what it sends before stopping.
STALLS: dict[str, list[bytes]] = {
    "nothing": [],
    "half a head": [b"POST /search HTTP/1.1\r\nHost: x\r\n"],
    "half a body": [b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n" + b"{" * 10],
    "half a head after an answer": [HEAD, b"GET / HT"],
    "nothing after an answer": [HEAD],
}


@pytest.mark.parametrize("stall", STALLS)
@pytest.mark.parametrize("stack", PROTOCOLS)
def test_a_connection_that_stalls_is_closed(stack: str, stall: str) -> None:
    with connection(stack) as sock:
        for part in STALLS[stall]:
            sock.sendall(part)
            if part == HEAD:
                assert_answered(sock)
        assert_closed(sock)


@pytest.mark.parametrize("stack", PROTOCOLS)
def test_a_request_that_arrived_is_answered_however_long_it_takes(stack: str) -> None:
    with connection(stack) as sock:
        sock.sendall(b"GET /slow HTTP/1.1\r\nHost: x\r\n\r\n")
        assert_answered(sock)
        # The connection serves the next request too, and a pipelined pair.
        sock.sendall(HEAD)
        assert_answered(sock)
        sock.sendall(b"GET /slow HTTP/1.1\r\nHost: x\r\n\r\n" + HEAD)
        assert_answered(sock, 2)


def test_the_deadline_and_the_stack_are_checked() -> None:
    for seconds in (0, -1.0, float("nan"), float("inf")):
        with pytest.raises(OutOfRange, match="request_timeout"):
            http_protocol(seconds)
    with pytest.raises(InvalidSetting, match="stack must be one of"):
        http_protocol(1.0, "zttp")  # type: ignore[arg-type]


def test_stalled_clients_cannot_use_up_the_servers_connections(tmp_path: Path) -> None:
    """With room for 64 descriptors, 80 clients that stall would leave `fanfuse serve` unable to
    accept any connection; with the deadline, /healthz is answered once theirs have passed."""
    TantivyRetriever.build(DOCUMENTS, tmp_path / "idx")
    with serve_command("--index", str(tmp_path / "idx"), "--request-timeout", "1") as (url, process):
        resource.prlimit(process.pid, resource.RLIMIT_NOFILE, (64, 64))
        host, port = url.removeprefix("http://").split(":")
        with contextlib.ExitStack() as stalled:
            socks = [
                stalled.enter_context(socket.create_connection((host, int(port)), timeout=WAIT))
                for _ in range(80)
            ]
            for sock in socks:
                sock.sendall(b"POST /search HTTP/1.1\r\nHost: x\r\n")
            assert_closed(socks[0])
            deadline = time.monotonic() + WAIT
            while True:
                try:
                    assert httpx.get(f"{url}/healthz", timeout=WAIT).json()["status"] == "ok"
                    break
                except httpx.TransportError:
                    assert time.monotonic() < deadline, "the server accepts no connection"
                    time.sleep(0.2)


@pytest.mark.parametrize("stall", STALLS)
@pytest.mark.parametrize("stack", PROTOCOLS)
def test_a_stopping_server_closes_a_connection_still_waiting_for_its_request(stack: str, stall: str) -> None:
    """The server stops without waiting out the client's deadline (here far past the time
    `serving` gives the server to stop), at every moment a client can stall."""
    with serving(app, http=http_protocol(3600, stack), timeout_keep_alive=600) as url:
        host, port = url.removeprefix("http://").split(":")
        sock = socket.create_connection((host, int(port)), timeout=WAIT)
        for part in STALLS[stall]:
            sock.sendall(part)
            if part == HEAD:
                assert_answered(sock)
    with sock:
        assert_closed(sock)


def test_fanfuse_serve_stops_at_sigterm_though_a_request_is_half_sent(tmp_path: Path) -> None:
    TantivyRetriever.build(DOCUMENTS, tmp_path / "idx")
    with serve_command("--index", str(tmp_path / "idx"), "--request-timeout", "3600") as (url, process):
        host, port = url.removeprefix("http://").split(":")
        with socket.create_connection((host, int(port)), timeout=WAIT) as sock:
            sock.sendall(STALLS["half a body"][0])
            assert httpx.get(f"{url}/healthz", timeout=WAIT).json()["status"] == "ok"
            process.send_signal(signal.SIGTERM)
            assert process.wait(WAIT) == -signal.SIGTERM
            assert_closed(sock)
