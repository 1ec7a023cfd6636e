"""`fanfuse serve` under load on loopback, with wrk (Debian: `apt-get install -y wrk`).

    .venv/bin/fanfuse index ../shared/data/mtrag/passages/clapnq_pool.jsonl.gz --index /tmp/clapnq \
        --id-field document_id --dense
    .venv/bin/python benches/load_service.py --index /tmp/clapnq --queries \
        ../shared/data/mtrag/queries/clapnq/clapnq_rewrite.jsonl [--workers 2] [--ref REF]

Starts `fanfuse serve` on 127.0.0.1, then for BM25 alone (`"dense": false`) and hybrid (BM25 +
dense), with the default variants (no `max_variants` field) and with one, and each concurrency (wrk
connections), drives `POST /search` for `--seconds` with the queries in turn, and prints a Markdown
table: requests answered, requests/s, p50 and p99 latency of the answered ones, the answers that
were not 200, and the 1-minute load average when the run began; then, for each server, retrievers
and clients, the default search's requests/s and p99 as a multiple of the question alone's (the
default-to-single ratio). Each (mode, variants) pair is warmed for one second first (the dense
encoder, the index pages).

`--ref REF` also serves the code of git REF (its `python/` tree, with this build's compiled core)
and runs each row on it right before this tree's: the two measured back to back, in one session.
`--workers N` starts this tree's server with N processes. `--query-cache N` sets
`FANFUSE_QUERY_CACHE_SIZE` for the servers (0: every query embedded, as for unseen queries).
Bounded: 4 runs of `--seconds` plus warm-up per concurrency and server.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from measuring import load_averages, load_text, machine
from service_server import serve_command

MODES = {"bm25": False, "hybrid": True}
VARIANTS = ("default", 1)
ROOT = Path(__file__).resolve().parents[1]
UNITS = {"us": 1e-3, "ms": 1.0, "s": 1e3}


def lua_script(bodies: list[str]) -> str:
    entries = ",\n".join(f"  {json.dumps(body)}" for body in bodies)
    return (
        f"local bodies = {{\n{entries}\n}}\nlocal i = 0\n"
        "request = function()\n  i = i % #bodies + 1\n"
        '  return wrk.format("POST", "/search", {["Content-Type"] = "application/json"}, bodies[i])\nend\n'
    )


def milliseconds(text: str) -> float:
    number, unit = re.fullmatch(r"([\d.]+)(us|ms|s)", text).groups()  # type: ignore[union-attr]
    return float(number) * UNITS[unit]


def wrk(url: str, script: Path, connections: int, seconds: int) -> dict[str, Any]:
    threads = min(connections, 2)
    out = subprocess.run(
        [
            "wrk",
            f"-t{threads}",
            f"-c{connections}",
            f"-d{seconds}s",
            "--latency",
            "--timeout",
            "30s",
            "-s",
            str(script),
            url,
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    percentiles = dict(re.findall(r"^\s+(50|99)%\s+(\S+)\s*$", out, re.MULTILINE))
    if set(percentiles) != {"50", "99"}:
        raise RuntimeError(f"wrk printed no latency distribution:\n{out}")
    not_ok = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    errors = re.search(r"Socket errors: (.*)$", out, re.MULTILINE)
    answered = re.search(r"^\s+(\d+) requests in", out, re.MULTILINE)
    return {
        "answered": int(answered.group(1)) if answered else 0,
        "rps": float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1)),  # type: ignore[union-attr]
        "p50": milliseconds(percentiles["50"]),
        "p99": milliseconds(percentiles["99"]),
        "not_ok": int(not_ok.group(1)) if not_ok else 0,
        "socket_errors": errors.group(1) if errors else "",
    }


def questions(path: Path, count: int) -> list[str]:
    lines = path.read_text(encoding="utf-8").splitlines()[:count]
    return [json.loads(line)["text"].removeprefix("|user|:").strip() for line in lines]


def tree_of(ref: str, folder: Path) -> Path:
    """`python/` as of git `ref`, with this build's compiled core, exported under `folder`."""
    archive = subprocess.run(
        ["git", "-C", str(ROOT), "archive", ref, "python"], capture_output=True, check=True
    )
    subprocess.run(["tar", "-x", "-C", str(folder)], input=archive.stdout, check=True)
    for core in (ROOT / "python" / "fanfuse").glob("_core*.so"):
        shutil.copy2(core, folder / "python" / "fanfuse" / core.name)
    return folder / "python"


def await_workers(process: subprocess.Popen[str], workers: int, seconds: float = 300) -> None:
    """Wait until each of `workers` processes logged its startup (each opens the index and loads the
    encoder after the socket listens: a connection made before would all go to the first one). The
    output is read to its end in threads: a full pipe would stop the server."""
    started = threading.Semaphore(0)

    def read(stream: IO[str] | None) -> None:
        assert stream is not None
        for line in stream:
            if "Application startup complete" in line:
                started.release()

    # uvicorn logs to stderr, its access log to stdout: both are drained.
    for stream in (process.stderr, process.stdout):
        threading.Thread(target=read, args=(stream,), daemon=True).start()
    for _ in range(workers):
        if not started.acquire(timeout=seconds):
            raise RuntimeError(f"fewer than {workers} server processes started in {seconds:g} s")


@contextlib.contextmanager
def server(args: argparse.Namespace, python_path: Path | None) -> Iterator[str]:
    """A `fanfuse serve` of this tree (python_path None) or of an exported one; its base URL."""
    saved = os.environ.get("PYTHONPATH")
    if python_path is not None:
        os.environ["PYTHONPATH"] = str(python_path)
    workers = args.workers if python_path is None else 1
    extra = ["--workers", str(workers)] if workers > 1 else []
    try:
        with serve_command("--index", str(args.index), "--log-level", "info", *extra) as (url, process):
            await_workers(process, workers)
            yield url
    finally:
        if saved is None:
            os.environ.pop("PYTHONPATH", None)
        else:
            os.environ["PYTHONPATH"] = saved


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--index", required=True, type=Path)
    parser.add_argument("--queries", required=True, type=Path, help="JSONL with a `text` per line")
    parser.add_argument("--count", type=int, default=200, help="queries cycled through")
    parser.add_argument("--concurrency", default="8")
    parser.add_argument("--seconds", type=int, default=10)
    parser.add_argument("--workers", type=int, default=1, help="this tree's server processes")
    parser.add_argument("--ref", help="also measure the code of this git ref, each row right before")
    parser.add_argument("--query-cache", type=int, help="FANFUSE_QUERY_CACHE_SIZE of the servers")
    parser.add_argument("--modes", default=",".join(MODES), help="of " + ", ".join(MODES))
    counts = ",".join(map(str, VARIANTS))
    parser.add_argument("--max-variants", default=counts, help="`default` and/or counts")
    args = parser.parse_args()
    if shutil.which("wrk") is None:
        sys.exit("load_service.py: wrk is not installed (Debian: apt-get install -y wrk)")
    if args.query_cache is not None:
        os.environ["FANFUSE_QUERY_CACHE_SIZE"] = str(args.query_cache)
    texts = questions(args.queries, args.count)
    workers = [f"{args.workers} worker processes"] if args.workers > 1 else []
    print(f"machine: {machine(*workers)}; {load_text()}", file=sys.stderr)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        trees: list[tuple[str, Path | None]] = [("this tree", None)]
        if args.ref:
            trees.insert(0, (args.ref, tree_of(args.ref, Path(tmp))))
        for mode in args.modes.split(","):
            dense = MODES[mode]
            for variants in args.max_variants.split(","):
                fields = {} if variants == "default" else {"max_variants": int(variants)}
                bodies = [json.dumps({"query": q, **fields, "dense": dense}) for q in texts]
                script = Path(tmp) / f"{mode}-{variants}.lua"
                script.write_text(lua_script(bodies), encoding="utf-8")
                for connections in map(int, args.concurrency.split(",")):
                    for code, python_path in trees:
                        with server(args, python_path) as url:
                            wrk(url, script, 2, 1)  # warm-up
                            load = load_averages()[0]
                            result = wrk(url, script, connections, args.seconds)
                        rows.append((code, mode, variants, connections, load, result))
                        print(code, mode, variants, connections, load, result, file=sys.stderr)
    print(f"Machine: {machine(*workers)}; wrk {args.seconds} s a row, {len(texts)} queries in turn.")
    print()
    print(
        "| code | retrievers | variants | clients | answered | requests/s | p50 ms | p99 ms | not 200 "
        "| load |"
    )
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for code, mode, variants, connections, load, r in rows:
        # wrk's latencies are of the answered requests only: none answered, none to show.
        timing = f"{r['rps']:.1f} | {r['p50']:.1f} | {r['p99']:.1f}" if r["answered"] else "- | - | -"
        print(
            f"| {code} | {mode} | {variants} | {connections} | {r['answered']} | {timing} | {r['not_ok']} "
            f"| {load:.1f} |"
        )
    ratios = default_to_single(rows)
    if ratios:
        print()
        print("| code | retrievers | clients | default / 1 variant, requests/s | default / 1 variant, p99 |")
        print("|---|---|---:|---:|---:|")
        for (code, mode, connections), (rps, p99) in ratios.items():
            print(f"| {code} | {mode} | {connections} | {rps:.2f}x | {p99:.2f}x |")


def default_to_single(rows: list[tuple[str, str, str, int, float, dict[str, Any]]]) -> dict[Any, Any]:
    """For each server, retrievers and clients measured both ways: the default search's requests/s
    and p99 as a multiple of the question alone's (`"max_variants": 1`)."""
    measured = {(code, mode, variants, c): r for code, mode, variants, c, _, r in rows if r["answered"]}
    return {
        (code, mode, c): (r["rps"] / single["rps"], r["p99"] / single["p99"])
        for (code, mode, variants, c), r in measured.items()
        if variants == "default" and (single := measured.get((code, mode, "1", c))) is not None
    }


if __name__ == "__main__":
    main()
