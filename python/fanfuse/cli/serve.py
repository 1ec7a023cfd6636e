"""`fanfuse serve --index DIR`: `fanfuse search --index DIR` as an HTTP service (docs/service.md)."""

from __future__ import annotations

import argparse
import socket
import sys
from typing import Any

from fanfuse.cli._common import int_from
from fanfuse.cli.paths import add_index

SERVE_HINT = "pip install 'fanfuse[serve]'"


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "serve",
        help="serve multi-query search of an index over HTTP (POST /search, GET /healthz)",
        description="Serve `fanfuse search --index DIR` over HTTP: POST /search takes the search "
        "options as JSON and returns the hits with provenance and diagnostics; GET /healthz; the "
        "OpenAPI schema at /openapi.json. Needs fanfuse[serve].",
    )
    add_index(parser)
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    parser.add_argument(
        "--port", type=int_from(0, 65535), default=8000, help="port (default 8000; 0: any free one)"
    )
    parser.add_argument(
        "--dense",
        action=argparse.BooleanOptionalAction,
        help="as `fanfuse search --dense`: hybrid by default where the index stores vectors",
    )
    parser.add_argument(
        "--log-level", default="warning", help="uvicorn's log level (default warning: no access log)"
    )
    parser.set_defaults(run=run)


def listening_socket(host: str, port: int) -> socket.socket:
    """A TCP socket listening on (host, port). Made with protocol IPPROTO_TCP, not 0 as
    `socket.create_server` makes it: asyncio sets TCP_NODELAY on the connections of such a socket
    only, and without it each keep-alive answer waits ~40 ms for the client's delayed ACK."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    listening = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    try:
        listening.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listening.bind((host, port))
        listening.listen(socket.SOMAXCONN)
    except OSError:
        listening.close()
        raise
    return listening


def run(args: argparse.Namespace) -> int:
    try:
        import uvicorn

        from fanfuse.service import app_for_index
    except ImportError as error:
        print(f"fanfuse serve: error: {error.name} is missing: {SERVE_HINT}", file=sys.stderr)
        return 2
    app = app_for_index(args.index, dense=args.dense)
    listening = listening_socket(args.host, args.port)
    host, port = listening.getsockname()[:2]
    # One line a script (or a test) reads to learn the port, printed once the socket accepts.
    print(f"fanfuse serve: listening on http://{host}:{port}", flush=True)
    server = uvicorn.Server(uvicorn.Config(app, log_level=args.log_level))
    server.run(sockets=[listening])
    return 0
