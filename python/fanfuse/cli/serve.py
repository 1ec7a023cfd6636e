"""`fanfuse serve --index DIR`: `fanfuse search --index DIR` as an HTTP service (docs/service.md)."""

from __future__ import annotations

import argparse
import contextlib
import errno
import functools
import os
import signal
import socket
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from fanfuse.cli import llm_options
from fanfuse.cli._common import Terminated, number_option
from fanfuse.cli.paths import add_index, add_stdout
from fanfuse.errors import InvalidSetting
from fanfuse.limits import REQUEST

SERVE_HINT = "pip install 'fanfuse[serve]'"


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "serve",
        help="serve multi-query search of an index over HTTP (a search page at /, POST /search)",
        description="Serve `fanfuse search --index DIR` over HTTP: POST /search takes the search "
        "options as JSON and returns the hits with provenance and diagnostics; GET / is a search page "
        "that shows them; GET /healthz; the OpenAPI schema at /openapi.json. Needs fanfuse[serve].",
    )
    add_index(parser)
    parser.add_argument(
        "--host",
        type=listen_address,
        default="127.0.0.1",
        help="address (or name) to listen on (default 127.0.0.1; 0.0.0.0 for every interface)",
    )
    number_option(parser, "--port", "port", "port (default 8000; 0: any free one)", default=8000)
    parser.add_argument(
        "--dense",
        action=argparse.BooleanOptionalAction,
        help="as `fanfuse search --dense`: hybrid by default where the index stores vectors",
    )
    # The server's expander, as `fanfuse search`'s (a request may still turn expansion off).
    llm_options.add_arguments(parser)
    number_option(
        parser,
        "--workers",
        "workers",
        "server processes sharing the port and the memory-mapped index (default 1); each one's encoder "
        "gets an equal share of the CPUs",
        default=1,
        metavar="N",
    )
    number_option(
        parser,
        "--request-timeout",
        "request_timeout",
        "seconds a connection has to send a whole request, from its opening and again after each "
        "answer; one that has not is closed, so stalled clients cannot use up the server's "
        f"connections (default {REQUEST.arrival_seconds:g}; a request that has arrived is never cut)",
        default=REQUEST.arrival_seconds,
        metavar="SECONDS",
    )
    parser.add_argument(
        "--log-level",
        default="warning",
        help="uvicorn's log level, one of its names (default warning: no access log; info logs each "
        "request; debug and trace more)",
    )
    add_stdout(parser)
    parser.set_defaults(run=run)


def listen_address(text: str) -> str:
    """argparse type of --host: an address or a name, never empty (the socket layer reads an empty
    one as every interface, the opposite of what leaving it out means)."""
    if not text.strip():
        raise argparse.ArgumentTypeError(
            f"must be an address or a name to listen on, such as 127.0.0.1, ::1, localhost, or "
            f"0.0.0.0 for every interface (got {text!r})"
        )
    return text


def listening_socket(host: str, port: int) -> socket.socket:
    """A TCP socket listening on (host, port), `host` an address or a name (resolved as a passive
    address: IPv4 or IPv6, whichever it names first). Made with protocol IPPROTO_TCP, not 0 as
    `socket.create_server` makes it: asyncio sets TCP_NODELAY on the connections of such a socket
    only, and without it each keep-alive answer waits ~40 ms for the client's delayed ACK. A place
    it cannot listen on is refused naming --host or --port (InvalidSetting)."""
    try:
        family, kind, protocol, _, address = socket.getaddrinfo(
            host, port, type=socket.SOCK_STREAM, proto=socket.IPPROTO_TCP, flags=socket.AI_PASSIVE
        )[0]
    except (socket.gaierror, UnicodeError) as error:
        reason = error.strerror if isinstance(error, socket.gaierror) else str(error)
        raise InvalidSetting(
            f"argument --host: {host!r} is not an address or a name this machine resolves ({reason})"
        ) from None
    listening = socket.socket(family, kind, protocol)
    try:
        listening.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listening.bind(address)
        listening.listen(socket.SOMAXCONN)
    except OSError as error:
        listening.close()
        raise InvalidSetting(cannot_listen(host, port, error)) from None
    return listening


def cannot_listen(host: str, port: int, error: OSError) -> str:
    """Why (host, port) cannot be listened on, naming the flag to change."""
    if error.errno == errno.EADDRINUSE:
        return f"argument --port: {port} is in use on {host} (give another port, or 0 for any free one)"
    if error.errno == errno.EADDRNOTAVAIL:
        return (
            f"argument --host: {host} is not an address of this machine (give one of its addresses, "
            "such as 127.0.0.1 or ::1, or 0.0.0.0 for every interface)"
        )
    if error.errno == errno.EACCES:
        return f"argument --port: {port} needs privileges this process lacks (give one from 1024, or 0)"
    return f"argument --host/--port: cannot listen on {host} port {port}: {error.strerror or error}"


def base_url(listening: socket.socket) -> str:
    """The URL of the server on `listening`, an IPv6 address in brackets."""
    host, port = listening.getsockname()[:2]
    return f"http://[{host}]:{port}" if listening.family == socket.AF_INET6 else f"http://{host}:{port}"


def run(args: argparse.Namespace) -> int:
    try:
        import uvicorn

        from fanfuse.retrievers.tantivy_index import TantivyRetriever
        from fanfuse.service import app_for_index
        from fanfuse.service.request_deadline import http_protocol
    except ImportError as error:
        print(f"fanfuse serve: error: {error.name} is missing: {SERVE_HINT}", file=sys.stderr)
        return 2
    from uvicorn.config import LOG_LEVELS

    log_level = args.log_level.lower()
    if log_level not in LOG_LEVELS:
        print(
            f"fanfuse serve: error: argument --log-level: invalid choice: {args.log_level!r} "
            f"(choose from {', '.join(LOG_LEVELS)})",
            file=sys.stderr,
        )
        return 2
    if args.workers > 1:
        share_cpus(args.workers)
    expander = llm_options.make_expander(args)
    overrides: dict[str, Any] = {"expansion": llm_options.expansion_switch(args.expander)}
    if expander is not None:
        overrides["expander"] = expander
    # Before the index is copied, which can take long: a place it cannot listen on is told at once.
    listening = listening_socket(args.host, args.port)
    try:
        # The server's own checked copy of the index (a file changed under it cannot reach it), which
        # every worker opens in place; this process owns it, and removes it when it ends, however it
        # ends (a copy left by a killed server goes at the next start: `index_copy`).
        index = TantivyRetriever(args.index, private_copy=True)
        # With workers: checks the index and the options, then unused.
        app = app_for_index(index, dense=args.dense, **overrides)
    except BaseException:
        listening.close()
        raise
    # One line a script (or a test) reads to learn the port, printed once the socket accepts.
    print(f"fanfuse serve: listening on {base_url(listening)}", flush=True)
    # uvloop and httptools where installed (fanfuse[serve] installs them): the fastest of uvicorn's
    # stacks, measured in docs/performance.md; uvicorn falls back to asyncio and h11 without them.
    stack: dict[str, Any] = {
        "loop": "auto",
        "http": http_protocol(args.request_timeout),
        "log_level": log_level,
    }
    if args.workers == 1:
        serve_one(uvicorn.Server(uvicorn.Config(app, **stack)), listening)
        return 0
    del app
    # Each worker process opens the copy itself (the vectors are memory-mapped: their pages are
    # shared); the supervisor restarts a worker that dies and stops all of them on SIGINT/SIGTERM.
    assert index.private_directory is not None
    factory = functools.partial(
        worker_app, str(index.private_directory), args.dense, str(args.index), overrides
    )
    config = uvicorn.Config(factory, factory=True, workers=args.workers, **stack)
    supervise(config, listening)
    return 0


STOPPING = (signal.SIGINT, signal.SIGTERM)


@contextlib.contextmanager
def stopped_by_signal() -> Iterator[list[int]]:
    """The signals that stop a server, which its handlers append to the list this yields. Once the
    server has returned, the handlers from before are back, and the first signal ends the command as
    one at work does (KeyboardInterrupt, Terminated: exit status 130 / 143 after the cleanups)."""
    handlers = {signum: signal.getsignal(signum) for signum in STOPPING}
    stopped_by: list[int] = []
    try:
        yield stopped_by
    finally:
        for signum, handler in handlers.items():
            signal.signal(signum, signal.SIG_DFL if handler is None else handler)
    if stopped_by:
        raise KeyboardInterrupt if stopped_by[0] == signal.SIGINT else Terminated


def serve_one(server: Any, listening: socket.socket) -> None:
    """Runs uvicorn's one-process server until a signal stops it. uvicorn handles SIGINT and SIGTERM
    only once its loop runs the server; before that (the loop being made, or made and not yet at the
    server), a signal raised as an exception would land inside asyncio, which logs it, leaves the
    server's coroutine never awaited, or loses it in a callback. So from here on a signal only asks
    the server to stop, at whatever moment it comes."""
    with stopped_by_signal() as stopped_by:

        def stop(signum: int, frame: object) -> None:
            stopped_by.append(signum)
            server.handle_exit(signum, frame)

        for signum in STOPPING:
            signal.signal(signum, stop)
        server.run(sockets=[listening])


def supervise(config: Any, listening: socket.socket) -> None:
    """Runs uvicorn's supervisor of `config.workers` processes until a signal stops it, then ends as
    the one-process server does."""
    from uvicorn.supervisors import Multiprocess

    with stopped_by_signal() as stopped_by:

        class Supervisor(Multiprocess):
            # uvicorn's supervisor queues the signals it handles and returns normally once stopped.
            def handle_int(self) -> None:
                stopped_by.append(signal.SIGINT)
                super().handle_int()

            def handle_term(self) -> None:
                stopped_by.append(signal.SIGTERM)
                super().handle_term()

        Supervisor(config, sockets=[listening]).run()


def worker_app(copy: str, dense: bool | None, name: str, overrides: dict[str, Any]) -> Any:
    """A worker's app over the server's private copy of the index, opened in place: nobody else
    writes it."""
    from fanfuse.retrievers.index_copy import share_copy
    from fanfuse.retrievers.tantivy_index import TantivyRetriever
    from fanfuse.service import app_for_index

    # The copy stays while this worker lives, even if the supervisor is killed first.
    share_copy(Path(copy))
    return app_for_index(TantivyRetriever(copy), dense=dense, name=name, **overrides)


def share_cpus(workers: int) -> None:
    """Give each of `workers` processes' encoders an equal share of the CPUs (unless the environment
    sets it already), so that their threads together do not outnumber the cores."""
    from fanfuse.retrievers.onnx_encoder import THREADS_VARIABLE, usable_cpus

    os.environ.setdefault(THREADS_VARIABLE, str(max(1, usable_cpus() // workers)))
