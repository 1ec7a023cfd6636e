"""A real chat-completions HTTP server on 127.0.0.1 for the LLM expander's tests.

The HTTP is real (``http.server`` on an ephemeral port); the model is the labelled test double: each
request gets the next scripted reply (a chat completion with given content, or a raw status and body,
optionally after a stall, with extra headers, or trickled out a byte at a time). Every request is
recorded with its method, headers and JSON body. ``ECHO`` in a scripted body, reason phrase or header
value is replaced by the request's ``Authorization`` header, like a server that echoes what it was
sent; ``Reply.echo`` may respell it first (JSON-escape it, URL-encode it, cut it short...).
"""

from __future__ import annotations

import contextlib
import functools
import json
import shutil
import socket
import ssl
import subprocess
import threading
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

ECHO = "{authorization}"


@dataclass
class Reply:
    status: int = 200
    body: bytes = b""
    stall: float = 0.0  # seconds to wait before answering (cut short when the server stops)
    drip: float = 0.0  # seconds between bytes; the status line and headers too unless body_only_drip
    body_only_drip: bool = False
    headers: dict[str, str] = field(default_factory=dict)
    reason: str | None = None
    content_length: bool = True  # False: no Content-Length, the body ends when the connection closes
    echo: Callable[[str], str] = str  # how the echoed Authorization header is spelled


@dataclass
class Recorded:
    method: str
    path: str
    headers: dict[str, str]
    body: dict[str, Any]


def completion(content: str) -> bytes:
    """A well-formed chat completion whose message content is ``content``."""
    reply = {
        "id": "chatcmpl-test",
        "object": "chat.completion",
        "model": "scripted",
        "choices": [
            {"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}
        ],
    }
    return json.dumps(reply).encode()


@dataclass
class ScriptedChatServer:
    """Scripted answers, served in order; when the script runs out, HTTP 500."""

    script: deque[Reply] = field(default_factory=deque)
    requests: list[Recorded] = field(default_factory=list)
    _stop: threading.Event = field(default_factory=threading.Event)
    _httpd: ThreadingHTTPServer | None = None
    _tls: bool = False

    @property
    def base_url(self) -> str:
        assert self._httpd is not None
        host, port = self._httpd.server_address[:2]
        return f"{'https' if self._tls else 'http'}://{host!s}:{port}/v1"

    def answer(self, content: str, *, stall: float = 0.0) -> None:
        """Queue a well-formed chat completion whose message content is ``content``."""
        self.script.append(Reply(200, completion(content), stall))

    def answer_raw(self, status: int, body: bytes, *, stall: float = 0.0) -> None:
        self.script.append(Reply(status, body, stall))

    def reply(self, reply: Reply) -> None:
        self.script.append(reply)

    def start(self, certificate: tuple[Path, Path] | None = None) -> None:
        """Serve on an ephemeral port; over TLS with ``certificate`` (the cert and key files)."""
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:
                self.handle_request()

            def do_GET(self) -> None:  # a client that followed a redirect as a GET
                self.handle_request()

            def handle_request(self) -> None:
                length = int(self.headers.get("Content-Length", 0))
                raw = self.rfile.read(length) if length else b""
                body = json.loads(raw or b"{}")
                server.requests.append(Recorded(self.command, self.path, dict(self.headers.items()), body))
                reply = server.script.popleft() if server.script else Reply(500, b'{"error": "no script"}')
                # A proxy's request names the whole URL ("absolute form"); this server answers those too.
                if urlsplit(self.path).path != "/v1/chat/completions":
                    reply = Reply(404, b'{"error": "not found"}')
                if reply.stall and server._stop.wait(reply.stall):
                    return  # server stopping: drop the connection
                echoed = reply.echo(self.headers.get("Authorization", ""))
                body_out = reply.body.replace(ECHO.encode(), echoed.encode())
                reason = None if reply.reason is None else reply.reason.replace(ECHO, echoed)
                headers = {name: value.replace(ECHO, echoed) for name, value in reply.headers.items()}
                head = self.head(reply, reason, headers, len(body_out))
                with contextlib.suppress(OSError):  # the client may have given up (timeout tests)
                    if reply.drip:
                        if reply.body_only_drip:
                            self.wfile.write(head)
                            self.trickle(body_out, reply.drip)
                        else:
                            self.trickle(head + body_out, reply.drip)
                    else:
                        self.wfile.write(head + body_out)
                self.close_connection = True

            def head(self, reply: Reply, reason: str | None, headers: dict[str, str], length: int) -> bytes:
                phrase = reason if reason is not None else self.responses.get(reply.status, ("",))[0]
                lines = [f"HTTP/1.1 {reply.status} {phrase}", "Content-Type: application/json"]
                if reply.content_length:
                    lines.append(f"Content-Length: {length}")
                lines += [f"{name}: {value}" for name, value in headers.items()]
                lines.append("Connection: close")
                return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")

            def trickle(self, data: bytes, interval: float) -> None:
                for i in range(len(data)):
                    self.wfile.write(data[i : i + 1])
                    if server._stop.wait(interval):
                        return

            def log_message(self, format: str, *args: Any) -> None:  # keep test output quiet
                pass

        self._httpd = QuietServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        if certificate is not None:
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            context.load_cert_chain(*certificate)
            self._httpd.socket = context.wrap_socket(self._httpd.socket, server_side=True)
            self._tls = True
        # A short poll interval: shutdown() waits for one, and each test stops its server.
        serve = functools.partial(self._httpd.serve_forever, poll_interval=0.01)
        threading.Thread(target=serve, name="scripted-llm", daemon=True).start()

    def stop(self) -> None:
        self._stop.set()
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()


class QuietServer(ThreadingHTTPServer):
    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # e.g. a client that refused the certificate: the test checks what the client saw


def self_signed_certificate(directory: Path) -> tuple[Path, Path]:
    """A certificate for 127.0.0.1 that no authority signed, made with the openssl command."""
    openssl = shutil.which("openssl")
    if openssl is None:
        pytest.skip("the openssl command is needed to make a test certificate")
    cert, key = directory / "cert.pem", directory / "key.pem"
    subprocess.run(
        [openssl, "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=127.0.0.1",
         "-addext", "subjectAltName=IP:127.0.0.1", "-keyout", str(key), "-out", str(cert)],
        check=True,
        capture_output=True,
    )  # fmt: skip
    return cert, key


def running_server() -> Iterator[ScriptedChatServer]:
    server = ScriptedChatServer()
    server.start()
    yield server
    server.stop()


llm_server = pytest.fixture(running_server, name="llm_server")
#: A second server on another port, e.g. the target of a redirect.
other_llm_server = pytest.fixture(running_server, name="other_llm_server")


@pytest.fixture
def tls_llm_server(tmp_path: Path) -> Iterator[tuple[ScriptedChatServer, Path]]:
    """A server speaking HTTPS with a self-signed certificate, and the certificate's file."""
    certificate = self_signed_certificate(tmp_path)
    server = ScriptedChatServer()
    server.start(certificate)
    yield server, certificate[0]
    server.stop()


def refused_base_url() -> str:
    """A base URL on 127.0.0.1 where nothing listens (the port was free a moment ago)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"
