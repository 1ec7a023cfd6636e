"""A real chat-completions HTTP server on 127.0.0.1 for the LLM expander's tests.

The HTTP is real (``http.server`` on an ephemeral port); the model is the labelled test double: each
request gets the next scripted reply (a chat completion with given content, or a raw status and body,
optionally after a stall). Every request is recorded with its headers and JSON body.
"""

from __future__ import annotations

import contextlib
import functools
import json
import socket
import threading
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest


@dataclass
class Reply:
    status: int = 200
    body: bytes = b""
    stall: float = 0.0  # seconds to wait before answering (cut short when the server stops)


@dataclass
class Recorded:
    path: str
    headers: dict[str, str]
    body: dict[str, Any]


@dataclass
class ScriptedChatServer:
    """Scripted answers, served in order; when the script runs out, HTTP 500."""

    script: deque[Reply] = field(default_factory=deque)
    requests: list[Recorded] = field(default_factory=list)
    _stop: threading.Event = field(default_factory=threading.Event)
    _httpd: ThreadingHTTPServer | None = None

    @property
    def base_url(self) -> str:
        assert self._httpd is not None
        host, port = self._httpd.server_address[:2]
        return f"http://{host!s}:{port}/v1"

    def answer(self, content: str, *, stall: float = 0.0) -> None:
        """Queue a well-formed chat completion whose message content is ``content``."""
        completion = {
            "id": "chatcmpl-test",
            "object": "chat.completion",
            "model": "scripted",
            "choices": [
                {"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}
            ],
        }
        self.script.append(Reply(200, json.dumps(completion).encode(), stall))

    def answer_raw(self, status: int, body: bytes, *, stall: float = 0.0) -> None:
        self.script.append(Reply(status, body, stall))

    def start(self) -> None:
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", 0))
                body = json.loads(self.rfile.read(length) or b"{}")
                server.requests.append(Recorded(self.path, dict(self.headers.items()), body))
                reply = server.script.popleft() if server.script else Reply(500, b'{"error": "no script"}')
                if self.path != "/v1/chat/completions":
                    reply = Reply(404, b'{"error": "not found"}')
                if reply.stall and server._stop.wait(reply.stall):
                    return  # server stopping: drop the connection
                self.send_response(reply.status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(reply.body)))
                self.end_headers()
                with contextlib.suppress(OSError):  # the client may have given up (timeout test)
                    self.wfile.write(reply.body)

            def log_message(self, format: str, *args: Any) -> None:  # keep test output quiet
                pass

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        # A short poll interval: shutdown() waits for one, and each test stops its server.
        serve = functools.partial(self._httpd.serve_forever, poll_interval=0.01)
        threading.Thread(target=serve, name="scripted-llm", daemon=True).start()

    def stop(self) -> None:
        self._stop.set()
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()


@pytest.fixture
def llm_server() -> Iterator[ScriptedChatServer]:
    server = ScriptedChatServer()
    server.start()
    yield server
    server.stop()


def refused_base_url() -> str:
    """A base URL on 127.0.0.1 where nothing listens (the port was free a moment ago)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"
