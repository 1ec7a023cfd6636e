"""One POST to a chat-completions endpoint, bounded by a deadline, for ``LLMExpander``.

Not ``urllib``: its timeout bounds each socket read rather than the request, so a server that trickles
its answer a byte at a time holds the caller as long as it likes; and it follows redirects, resending
the ``Authorization`` header to wherever ``Location`` points. Here:

- one deadline covers connecting, sending, and reading the status line, the headers and the body:
  every socket operation gets only the time that is left, so the exchange gives up at the deadline
  the caller stops waiting at (``llm_deadline.py``);
- redirects are never followed: a 3xx is a failure that names the status and the target;
- an answer larger than ``MAX_ANSWER_BYTES`` is refused, announced or not;
- proxies come from the environment as for ``urllib`` (``HTTP_PROXY``, ``HTTPS_PROXY``, ``NO_PROXY``):
  plain HTTP is sent to the proxy, HTTPS goes through a ``CONNECT`` tunnel.

Name resolution is the system resolver's and is not interruptible; the caller's wait still ends at
the deadline. Nothing here shortens or cleans what the server sent: ``LLMExpander`` removes the key
from it first (``llm_redact.py``), then clips it.
"""

from __future__ import annotations

import http.client
import io
import socket
import ssl
import urllib.request
from base64 import b64encode
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import SplitResult, unquote, urlsplit

from fanfuse.errors import InvalidSetting
from fanfuse.multiquery.expand.llm_deadline import remaining

__all__ = ["MAX_ANSWER_BYTES", "Endpoint", "HTTPFailure", "TooLarge", "exchange"]

#: The largest answer read; a list of five queries is well under 1 KiB.
MAX_ANSWER_BYTES = 1 << 20


class HTTPFailure(Exception):
    """A status other than 2xx; ``describe`` turns it into the fallback reason."""

    def __init__(self, status: int, reason: str, location: str | None = None):
        super().__init__(status, reason, location)
        self.status = status
        self.reason = reason
        self.location = location

    def __str__(self) -> str:
        text = f"HTTP {self.status} {self.reason}".rstrip()
        if 300 <= self.status < 400:
            target = self.location or "an unnamed location"
            text += f": redirect to {target} not followed (redirects are never followed)"
        return text


class TooLarge(Exception):
    def __str__(self) -> str:
        return f"the answer is larger than {MAX_ANSWER_BYTES >> 20} MiB"


@dataclass(frozen=True, slots=True)
class Proxy:
    host: str
    port: int
    authorization: str | None  # the Proxy-Authorization header, from user:password@ in its URL


@dataclass(frozen=True, slots=True)
class Endpoint:
    """Where the requests go, split once when the expander is built."""

    url: str
    https: bool
    host: str
    port: int
    target: str  # the path and query sent in the request line
    proxy: Proxy | None = None

    @classmethod
    def parse(cls, url: str, name: str, shown: str | None = None) -> Endpoint:
        """`url` split and checked; errors name `name` and show `shown` (default: `url`)."""
        shown = url if shown is None else shown
        parts = _split(url, name, shown)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise InvalidSetting(f"{name} must be an http:// or https:// URL with a host (got {shown!r})")
        if parts.username is not None or parts.password is not None:
            raise InvalidSetting(
                f"{name} must not contain credentials (user:password@); pass api_key instead"
            )
        port = _port(parts, f"{name} has an invalid port (got {shown!r})")
        target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        proxy = _proxy(parts.scheme, parts.hostname)
        return cls(url, parts.scheme == "https", parts.hostname, port, target, proxy)


def _split(url: str, name: str, shown: str | None) -> SplitResult:
    """`url` split, refused naming `name` where it is no URL: `urlsplit` drops tabs and line breaks
    without a word (so a URL with a header smuggled after a CR LF would be sent somewhere else) and
    raises a bare ValueError for a bracket left open. `shown`: the URL for the message, None for
    one that may hold a password."""
    got = f" (got {shown!r})" if shown is not None else ""
    for position, char in enumerate(url, start=1):
        if char.isspace() or not char.isprintable():
            raise InvalidSetting(
                f"{name} must be a URL without whitespace or control characters, but has "
                f"{char_kind(char)} at position {position}{got}"
            )
    try:
        return urlsplit(url)
    except ValueError as error:
        raise InvalidSetting(f"{name} is not a URL: {error}{got}") from None


def char_kind(char: str) -> str:
    """How a refusal names a character that a URL or a key may not hold."""
    if char == " ":
        return "a space"
    if char in "\r\n":
        return "a line break"
    if char == "\t":
        return "a tab"
    if char < " " or char == "\x7f":
        return "a control character"
    return "a non-ASCII character"


def _port(parts: SplitResult, error: str) -> int:
    try:
        port = parts.port
    except ValueError:
        raise InvalidSetting(error) from None
    return port or (443 if parts.scheme == "https" else 80)


def _proxy(scheme: str, host: str) -> Proxy | None:
    """The proxy the environment names for ``scheme``, unless ``NO_PROXY`` exempts ``host``."""
    configured = urllib.request.getproxies().get(scheme)
    if not configured or urllib.request.proxy_bypass(host):
        return None
    variable = f"{scheme.upper()}_PROXY"
    parts = _split(configured if "://" in configured else f"http://{configured}", variable, shown=None)
    if parts.scheme != "http" or not parts.hostname:
        raise InvalidSetting(
            f"{variable} must be an http:// proxy URL (got one with scheme {parts.scheme!r}); "
            "unset it for this process or point it to an HTTP proxy"
        )
    authorization = None
    if parts.username is not None:
        pair = f"{unquote(parts.username)}:{unquote(parts.password or '')}"
        authorization = "Basic " + b64encode(pair.encode()).decode("ascii")
    # The proxy's URL is not shown: it may hold a password.
    return Proxy(parts.hostname, _port(parts, f"{variable} has an invalid port"), authorization)


def exchange(endpoint: Endpoint, body: bytes, headers: Mapping[str, str], deadline: float) -> bytes:
    """POSTs ``body``; the answer's body, or an exception (``TimeoutError`` past the deadline)."""
    connection = _connection(endpoint, remaining(deadline))
    connection.response_class = _deadline_response(deadline)  # type: ignore[assignment]
    sent_headers = dict(headers)
    target = endpoint.target
    if endpoint.proxy is not None and not endpoint.https:  # plain HTTP: the proxy gets the whole URL
        target = endpoint.url
        if endpoint.proxy.authorization:
            sent_headers["Proxy-Authorization"] = endpoint.proxy.authorization
    try:
        connection.connect()
        assert connection.sock is not None
        connection.sock.settimeout(remaining(deadline))  # sendall: one bound for the whole body
        connection.request("POST", target, body=body, headers=sent_headers)
        response = connection.getresponse()
        if not 200 <= response.status < 300:
            raise HTTPFailure(response.status, response.reason, response.getheader("Location"))
        announced = response.getheader("Content-Length")
        if announced is not None and announced.strip().isdigit() and int(announced) > MAX_ANSWER_BYTES:
            raise TooLarge
        answer = response.read(MAX_ANSWER_BYTES + 1)
        if len(answer) > MAX_ANSWER_BYTES:
            raise TooLarge
        return answer
    finally:
        connection.close()


def _connection(endpoint: Endpoint, timeout: float) -> http.client.HTTPConnection:
    proxy = endpoint.proxy
    host, port = (endpoint.host, endpoint.port) if proxy is None else (proxy.host, proxy.port)
    if not endpoint.https:
        return http.client.HTTPConnection(host, port, timeout=timeout)
    connection = http.client.HTTPSConnection(
        host, port, timeout=timeout, context=ssl.create_default_context()
    )
    if proxy is not None:
        tunnel_headers = {"Proxy-Authorization": proxy.authorization} if proxy.authorization else None
        connection.set_tunnel(endpoint.host, endpoint.port, headers=tunnel_headers)
    return connection


class _DeadlineReader(io.RawIOBase):
    """The socket's bytes, each read given only the time left before the deadline."""

    def __init__(self, sock: socket.socket, deadline: float):
        self._sock = sock
        self._raw = sock.makefile("rb", buffering=0)  # counts as a reference: the socket stays open
        self._deadline = deadline

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int | None:
        self._sock.settimeout(remaining(self._deadline))
        return self._raw.readinto(buffer)

    def close(self) -> None:
        self._raw.close()
        super().close()


class _DeadlineSocket:
    """What ``HTTPResponse`` reads the status line, headers and body from."""

    def __init__(self, sock: socket.socket, deadline: float):
        self._sock = sock
        self._deadline = deadline

    def makefile(self, mode: str, *args: object, **kwargs: object) -> io.BufferedReader:
        return io.BufferedReader(_DeadlineReader(self._sock, self._deadline))


def _deadline_response(deadline: float) -> Callable[..., http.client.HTTPResponse]:
    def response(sock: socket.socket, *args: Any, **kwargs: Any) -> http.client.HTTPResponse:
        return http.client.HTTPResponse(_DeadlineSocket(sock, deadline), *args, **kwargs)  # type: ignore[arg-type]

    return response
