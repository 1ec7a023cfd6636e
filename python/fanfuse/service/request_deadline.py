"""uvicorn's HTTP protocols with a deadline for each request to arrive whole.

uvicorn closes a connection left idle after an answer (its keep-alive timeout), but not one that was
opened and never sent a request, nor one that stopped half-way through a request's head or body.
Each such connection holds a file descriptor for good, so a client that opens enough of them (by
accident or on purpose: "slowloris") leaves the server unable to accept any connection, `/healthz`
included. Here a connection waiting for a request (from its opening, and again after each answer)
is closed when the request has not arrived whole within ``request_timeout`` seconds. A request that
has arrived is never cut: the search it asks for may take as long as it takes. When the server stops,
a connection still waiting for a request is closed at once; one whose request is being answered
gets its answer first.

``http_protocol(seconds)`` is what ``uvicorn.Config(app, http=...)`` takes; `fanfuse serve` passes
it with ``--request-timeout``.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Literal, get_args

from uvicorn.protocols.http.h11_impl import H11Protocol

from fanfuse.errors import MissingExtra
from fanfuse.limits import REQUEST, check_choice, check_float

if TYPE_CHECKING:
    # The one interface of uvicorn's protocols this reads (`cycle`, `loop`, `transport`, the hooks).
    _UvicornProtocol = H11Protocol
else:
    _UvicornProtocol = object

__all__ = ["PROTOCOLS", "STACKS", "Stack", "http_protocol"]

# uvicorn's names of its HTTP stacks, the faster first.
Stack = Literal["httptools", "h11"]
STACKS: tuple[Stack, ...] = get_args(Stack)


class RequestDeadline(_UvicornProtocol):
    """Placed before one of uvicorn's HTTP protocols: one timer a connection, armed when it opens,
    which closes the connection once it has waited `request_timeout` for a whole request (since it
    opened, or since its last answer)."""

    def __init__(self, *args: Any, request_timeout: float, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.request_timeout = request_timeout
        self.request_deadline: asyncio.TimerHandle | None = None
        self.waiting_since = 0.0

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self.waiting_since = self.loop.time()
        self.request_deadline = self.loop.call_later(self.request_timeout, self.check_deadline)

    def on_response_complete(self) -> None:
        super().on_response_complete()
        # Only noted, for the connection's one timer: nothing is scheduled a request.
        self.waiting_since = self.loop.time()

    def connection_lost(self, exc: Exception | None) -> None:
        if self.request_deadline is not None:
            self.request_deadline.cancel()
            self.request_deadline = None
        super().connection_lost(exc)

    def waiting_for_request(self) -> bool:
        """No request yet, the last one answered (a pipelined one may follow: it is `cycle` then), or
        one whose body is still arriving; not a whole request being answered."""
        cycle = self.cycle
        return cycle is None or cycle.response_complete or bool(cycle.more_body)

    def shutdown(self) -> None:
        # uvicorn closes an idle connection at once but waits for one whose request's body is still
        # arriving, as for a search in flight, which would hold the server's exit until the client's
        # deadline (--request-timeout) passes. No search has started on it: close it now.
        if self.waiting_for_request():
            self.transport.close()
        else:
            super().shutdown()

    def check_deadline(self) -> None:
        """Closes the connection if it has waited `request_timeout` for a request, else looks again
        when it would have: a request being answered is looked at again a whole timeout later."""
        self.request_deadline = None
        if self.transport.is_closing():
            return
        left = self.request_timeout
        if self.waiting_for_request():
            left -= self.loop.time() - self.waiting_since
            if left <= 0:
                self.transport.close()
                return
        self.request_deadline = self.loop.call_later(left, self.check_deadline)


class H11WithDeadline(RequestDeadline, H11Protocol):
    """uvicorn's pure-Python HTTP protocol, with the deadline."""


try:
    from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol
except ImportError:
    # uvicorn's "auto" takes h11 then; fanfuse[serve] installs httptools.
    PROTOCOLS: dict[Stack, type[RequestDeadline]] = {"h11": H11WithDeadline}
else:

    class HttpToolsWithDeadline(RequestDeadline, HttpToolsProtocol):  # type: ignore[misc]
        """uvicorn's HTTP protocol over httptools (the faster; its "auto" picks it), with the deadline."""

    PROTOCOLS = {"httptools": HttpToolsWithDeadline, "h11": H11WithDeadline}


def http_protocol(
    request_timeout: float = REQUEST.arrival_seconds, stack: Stack | None = None
) -> Callable[..., asyncio.Protocol]:
    """What ``uvicorn.Config(http=...)`` takes: the protocol of `stack` (by default the first of
    `PROTOCOLS`, as uvicorn's "auto" picks) with the deadline of `request_timeout` seconds."""
    seconds = check_float("request_timeout", request_timeout)
    name = next(iter(PROTOCOLS)) if stack is None else check_choice("stack", stack, STACKS)
    protocol = PROTOCOLS.get(name)  # a stack is checked above; here, whether it is installed
    if protocol is None:
        raise MissingExtra(
            f"stack {name} needs the package {name}, not installed: pip install {name}", extra="serve"
        )
    return functools.partial(protocol, request_timeout=seconds)
