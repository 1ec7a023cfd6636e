"""HEAD wherever GET (RFC 9110, section 9.3.2): a HEAD request is answered as its GET would be, the
same status and headers (its Content-Length too), without the body.

FastAPI's routes take only the methods they name, where Starlette's own add HEAD beside GET; naming
HEAD on each route would add an operation per route to the OpenAPI schema, which documents GET. So
the app answers HEAD here, once, for every route: `/`, `/healthz`, `/options`, the page's files and
the schema; a route without GET (`POST /search`) refuses HEAD as it refuses GET (405).
"""

from __future__ import annotations

from starlette.types import ASGIApp, Message, Receive, Scope, Send

__all__ = ["HeadAsGet"]


class HeadAsGet:
    """ASGI middleware: HEAD is handed on as GET, and the answer's body is dropped."""

    def __init__(self, app: ASGIApp):
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        if scope["method"] != "HEAD":
            await self.app(scope, receive, _allowing_head(send))
            return

        async def without_body(message: Message) -> None:
            if message["type"] == "http.response.body":
                message = {**message, "body": b""}
            await send(message)

        await self.app({**scope, "method": "GET"}, receive, without_body)


def _allowing_head(send: Send) -> Send:
    """`send` with HEAD added beside GET to a 405's Allow header: RFC 9110 has Allow list every method
    the resource takes, and HEAD is answered wherever GET is."""

    async def sending(message: Message) -> None:
        if message["type"] == "http.response.start" and message["status"] == 405:
            headers = [
                (name, value + b", HEAD" if _allows_get(name, value) else value)
                for name, value in message.get("headers", [])
            ]
            message = {**message, "headers": headers}
        await send(message)

    return sending


def _allows_get(name: bytes, value: bytes) -> bool:
    return name.lower() == b"allow" and b"GET" in (method.strip() for method in value.split(b","))
