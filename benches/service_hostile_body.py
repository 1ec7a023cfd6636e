"""Peak memory of `fanfuse serve` for hostile request bodies (docs/service.md, "Bounded requests").

    .venv/bin/python benches/service_hostile_body.py

Builds a 3-document index in a temporary directory, starts `fanfuse serve` on 127.0.0.1 (one
process), and for each body below posts it once and reads the server's peak resident memory
(VmHWM of /proc/PID/status) after the answer; prints a Markdown table of the status, the seconds to
the answer and the peak, and whether the server still answers `GET /healthz` afterwards. The
bodies run from the smallest, since a peak never goes down.
"""

from __future__ import annotations

import json
import sys
import tempfile
import time
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from fanfuse.retrievers.tantivy_index import TantivyRetriever
from service_server import serve_command

DOCUMENTS = [
    {"id": "d1", "text": "owls hunt at night in the forest", "metadata": {"product": "cloud"}},
    {"id": "d2", "text": "the forest is dark at night", "metadata": {"product": "onprem"}},
    {"id": "d3", "text": "cats sleep during the day", "metadata": {"product": "cloud"}},
]


def filter_body(values: int) -> bytes:
    """A search whose filter lists `values` ints of 10 digits each."""
    listed = ",".join(str(1_000_000_000 + i) for i in range(values))
    return f'{{"query": "owls", "filter": {{"product": [{listed}]}}}}'.encode()


BODIES = {
    "a plain search": json.dumps({"query": "owls at night", "top_k": 5}).encode(),
    "a filter of 1,000 values": filter_body(1_000),
    "a filter of 90,000 values": filter_body(90_000),
    "a filter of 2,000,000 values": filter_body(2_000_000),
}


def peak_kib(pid: int) -> int:
    status = Path(f"/proc/{pid}/status").read_text()
    line = next(line for line in status.splitlines() if line.startswith("VmHWM:"))
    return int(line.split()[1])


def main() -> None:
    with tempfile.TemporaryDirectory() as directory:
        index = Path(directory) / "idx"
        TantivyRetriever.build(DOCUMENTS, index)
        with serve_command("--index", str(index), "--no-dense") as (url, process):
            rows = [("(started, before any request)", "", "", "", peak_kib(process.pid), "yes")]
            with httpx.Client(base_url=url, timeout=600) as client:
                for name, body in BODIES.items():
                    began = time.perf_counter()
                    try:
                        status = str(
                            client.post(
                                "/search", content=body, headers={"content-type": "application/json"}
                            ).status_code
                        )
                    except httpx.HTTPError as error:
                        status = type(error).__name__
                    seconds = f"{time.perf_counter() - began:.2f}"
                    alive = "yes" if client.get("/healthz").status_code == 200 else "no"
                    size = f"{len(body) / 1e6:.2f}"
                    rows.append((name, size, status, seconds, peak_kib(process.pid), alive))
    print("| body | MB | status | seconds | server peak RSS (MB) | answers after |")
    print("|---|---:|---:|---:|---:|---|")
    for name, size, status, seconds, peak, alive in rows:
        print(f"| {name} | {size} | {status} | {seconds} | {peak / 1024:.0f} | {alive} |")


if __name__ == "__main__":
    main()
