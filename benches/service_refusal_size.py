"""The size and cost of `fanfuse serve`'s refusal of bodies of many mistakes (docs/service.md,
"Bounded requests": the table after "A body within the bound can hold many mistakes").

    .venv/bin/python benches/service_refusal_size.py

Builds the tests' 5-document index in a temporary directory and starts one `fanfuse serve --no-dense`
on 127.0.0.1 (`tests/service_server.py`). Posts each body below once, in this order, each within the
1 MiB body bound (compact JSON, as many mistakes as fit); 50 ms after a request starts, a thread
sends `GET /healthz` on a second connection (both are open before the first body). Prints a
Markdown table: the status, the answer's bytes, the seconds to the answer, the seconds from sending
`/healthz` to its answer, and the server's peak resident memory (VmHWM of /proc/PID/status) after
both; a peak never goes down, so a row's peak is the highest of it and the rows above. The server
is stopped at the end.

To measure another commit's service, run this file with that commit's `python/` first on the path
(`PYTHONPATH=/tmp/before/python .venv/bin/python benches/service_refusal_size.py`): the server is
the same interpreter, and inherits the path.
"""

from __future__ import annotations

import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from fanfuse.limits import CONVERSATION, REQUEST
from fanfuse.retrievers.tantivy_index import TantivyRetriever
from service_server import serve_command
from test_cli_search_options import DOCUMENTS  # the tests' index

HEALTHZ_AFTER = 0.05  # seconds after a request starts


def largest(make: Callable[[int], str]) -> tuple[bytes, int]:
    """The longest body `make(n)` within the body bound, and its n."""

    def fits(n: int) -> bool:
        return len(make(n).encode()) <= REQUEST.body_bytes

    low, high = 1, 2
    while fits(high):
        low, high = high, high * 2
    while high - low > 1:
        middle = (low + high) // 2
        low, high = (middle, high) if fits(middle) else (low, middle)
    return make(low).encode(), low


def history(messages: list[str]) -> str:
    return '{"query":"log","history":[' + ",".join(messages) + "]}"


def unknown_fields(count: int) -> str:
    return '{"query":"log",' + ",".join(f'"k{i}":0' for i in range(count)) + "}"


def messages_with_unknown_fields(count: int) -> str:
    fields = ",".join(f'"x{j}":0' for j in range(count))
    return history(['{"role":"user","content":"a",' + fields + "}"] * CONVERSATION.turns)


def wrong_typed_turns() -> str:
    return history(["1"] * CONVERSATION.turns)


def bad_messages(length: int) -> str:
    """Messages wrong in every way: a role of `length` characters, a number for content, and an
    unknown field whose name is `length` characters."""
    message = '{"role":"' + "r" * length + '","content":1,"' + "y" * length + '":0}'
    return history([message] * CONVERSATION.turns)


def filter_keys(count: int) -> str:
    return '{"query":"log","filter":{' + ",".join(f'"k{i}":true' for i in range(count)) + "}}"


def bodies() -> dict[str, bytes]:
    """The bodies by the table's name for each, in the table's order."""
    fields, count = largest(unknown_fields)
    messages, per_message = largest(messages_with_unknown_fields)
    bad, length = largest(bad_messages)
    keys, key_count = largest(filter_keys)
    turns = CONVERSATION.turns
    return {
        f"{count:,} unknown fields": fields,
        f"{turns:,} messages of {per_message:,} unknown fields each": messages,
        f"{turns:,} turns that are numbers": wrong_typed_turns().encode(),
        f"{turns:,} messages, each a {length:,}-character role, a number for content and an "
        f"unknown field of a {length:,}-character name": bad,
        f"a filter of {key_count:,} keys (one error)": keys,
    }


def peak_mb(pid: int) -> float:
    status = Path(f"/proc/{pid}/status").read_text()
    line = next(line for line in status.splitlines() if line.startswith("VmHWM:"))
    return int(line.split()[1]) / 1024


def healthz_seconds(client: httpx.Client, into: list[str]) -> None:
    """Sends `GET /healthz` on `client` (a connection of its own) HEALTHZ_AFTER seconds from now;
    appends the seconds to its answer (or the error) to `into`."""
    time.sleep(HEALTHZ_AFTER)
    began = time.perf_counter()
    try:
        status = client.get("/healthz").status_code
    except httpx.HTTPError as error:
        into.append(type(error).__name__)
        return
    seconds = time.perf_counter() - began
    into.append(f"{seconds:.2f}" if status == 200 else f"{seconds:.2f} ({status})")


def measure(url: str, pid: int, posted: dict[str, bytes]) -> list[tuple[str, ...]]:
    """A row for the server as started, then one for each body, posted in order."""
    rows: list[tuple[str, ...]] = [("(the server started)", "", "", "", "", f"{peak_mb(pid):.0f}")]
    with (
        httpx.Client(base_url=url, timeout=600) as client,
        httpx.Client(base_url=url, timeout=600) as watcher,
    ):
        client.get("/healthz")  # both connections open before the first body
        watcher.get("/healthz")
        for name, body in posted.items():
            healthz: list[str] = []
            thread = threading.Thread(target=healthz_seconds, args=(watcher, healthz))
            began = time.perf_counter()
            thread.start()
            try:
                answer = client.post("/search", content=body, headers={"content-type": "application/json"})
                status, size = str(answer.status_code), f"{len(answer.content):,}"
            except httpx.HTTPError as error:
                status, size = type(error).__name__, ""
            seconds = f"{time.perf_counter() - began:.2f}"
            thread.join()
            rows.append((name, status, size, seconds, healthz[0], f"{peak_mb(pid):.0f}"))
    return rows


def main() -> None:
    posted = bodies()
    with tempfile.TemporaryDirectory() as directory:
        index = Path(directory) / "idx"
        TantivyRetriever.build(DOCUMENTS, index)
        with serve_command("--index", str(index), "--no-dense") as (url, process):
            rows = measure(url, process.pid, posted)
    print("| body (at most 1 MiB) | status | answer bytes | seconds | `/healthz` seconds | peak MB |")
    print("|---|---:|---:|---:|---:|---:|")
    for row in rows:
        print("| " + " | ".join(row) + " |")


if __name__ == "__main__":
    main()
