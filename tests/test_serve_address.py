"""Where `fanfuse serve` listens: every place it cannot listen on is refused with one line naming
--host or --port (an empty --host is refused, not read as every interface) before the index is copied,
and the URL it prints is one a client can use, an IPv6 address in brackets."""

from __future__ import annotations

import contextlib
import gc
import select
import signal
import socket
import subprocess
import warnings
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("fastapi")
pytest.importorskip("uvicorn")

import httpx
from cli_process import CLI
from fanfuse.cli import main
from fanfuse.retrievers import tantivy_index
from fanfuse.retrievers.tantivy_index import TantivyRetriever
from test_cli_search_options import DOCUMENTS


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("serve-address") / "idx"
    TantivyRetriever.build(DOCUMENTS, directory)
    return directory


@pytest.fixture
def port_in_use() -> Iterator[int]:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        yield taken.getsockname()[1]


# Each way a place to listen on can be wrong: (--host, --port or None for the port in use, message).
REFUSED = {
    "empty host": ("", "0", "argument --host: must be an address or a name to listen on"),
    "blank host": (" ", "0", "argument --host: must be an address or a name to listen on"),
    "unknown name": (
        "no-such-host.invalid",
        "0",
        "argument --host: 'no-such-host.invalid' is not an address",
    ),
    "name with a newline": ("a\nb", "0", "argument --host: 'a\\nb' is not an address or a name"),
    "not an address of this machine": ("192.0.2.1", "0", "argument --host: 192.0.2.1 is not an address of"),
    "port in use": ("127.0.0.1", None, "is in use on 127.0.0.1 (give another port, or 0 for any free one)"),
}


@pytest.mark.parametrize("case", REFUSED)
def test_a_place_it_cannot_listen_on_is_refused_naming_the_flag(
    case: str,
    index: Path,
    port_in_use: int,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    host, port, expected = REFUSED[case]
    argv = ["serve", "--index", str(index), "--host", host, "--port", port or str(port_in_use)]
    copies: list[object] = []  # the index is copied only once there is a place to listen on
    monkeypatch.setattr(tantivy_index, "private_copy", lambda *args: copies.append(args))
    try:
        code = main(argv)
    except SystemExit as exit_:  # argparse's refusal
        code = exit_.code  # type: ignore[assignment]
    assert copies == [], "the index was copied before the place to listen on was refused"
    captured = capsys.readouterr()
    assert code == 2
    assert captured.out == ""
    assert captured.err.startswith("fanfuse serve: error: "), captured.err
    assert captured.err.count("\n") == 1, captured.err
    assert expected in captured.err
    if port is None:
        assert f"argument --port: {port_in_use} is in use" in captured.err


def loopback_names() -> list[str]:
    names = ["127.0.0.1", "localhost"]
    with contextlib.suppress(OSError), socket.socket(socket.AF_INET6) as probe:
        probe.bind(("::1", 0))
        names.append("::1")
    return names


@pytest.mark.parametrize("host", loopback_names())
def test_the_printed_url_reaches_the_server(host: str, index: Path) -> None:
    process = subprocess.Popen(
        [*CLI, "serve", "--index", str(index), "--host", host, "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        ready, _, _ = select.select([process.stdout], [], [], 120)
        line = process.stdout.readline() if ready else ""
        assert line.startswith("fanfuse serve: listening on http://"), (line, process.poll())
        url = line.split()[-1]
        if host == "::1":
            assert url.startswith("http://[::1]:")
        assert httpx.get(f"{url}/healthz", timeout=30).json()["status"] == "ok"
    finally:
        process.send_signal(signal.SIGTERM)
        process.communicate(timeout=30)


def test_an_index_it_cannot_open_leaves_the_port_free(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The socket is bound before the index is opened: a refused index closes it again."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    not_an_index = tmp_path / "empty"
    not_an_index.mkdir()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ResourceWarning)
        code = main(["serve", "--index", str(not_an_index), "--host", "127.0.0.1", "--port", str(port)])
        gc.collect()
    assert not [w for w in caught if "socket" in str(w.message)], "the socket was left to the collector"
    captured = capsys.readouterr()
    assert code == 2 and captured.out == "" and "is not a fanfuse index" in captured.err, captured.err
    with socket.socket() as again:  # no socket of the command still holds the port
        again.bind(("127.0.0.1", port))
        again.listen()
