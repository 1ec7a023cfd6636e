"""`fanfuse serve` under load on loopback, with wrk (Debian: `apt-get install -y wrk`).

    .venv/bin/fanfuse index ../shared/data/mtrag/passages/clapnq_pool.jsonl.gz --index /tmp/clapnq \
        --id-field document_id --dense
    .venv/bin/python benches/load_service.py --index /tmp/clapnq --queries \
        ../shared/data/mtrag/queries/clapnq/clapnq_rewrite.jsonl

Starts `fanfuse serve` (one uvicorn process) on 127.0.0.1, then for BM25 alone and hybrid (BM25 +
dense, `"dense": true`), 1 and 4 query variants, and each concurrency (wrk connections), drives
`POST /search` for `--seconds` with the queries in turn, and prints a Markdown table: requests
answered, requests/s, p50 and p99 latency of the answered ones, and the answers that were not 200.
Each (mode, variants) pair is warmed for one second first (the dense encoder, the index pages).
Bounded: 12 runs of `--seconds` plus warm-up.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from service_server import serve_command

MODES = {"bm25": False, "hybrid": True}
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--index", required=True, type=Path)
    parser.add_argument("--queries", required=True, type=Path, help="JSONL with a `text` per line")
    parser.add_argument("--count", type=int, default=50, help="queries cycled through")
    parser.add_argument("--concurrency", default="1,8,64")
    parser.add_argument("--seconds", type=int, default=5)
    args = parser.parse_args()
    if shutil.which("wrk") is None:
        sys.exit("load_service.py: wrk is not installed (Debian: apt-get install -y wrk)")
    texts = questions(args.queries, args.count)
    print(f"load: {os.getloadavg()[0]:.2f} (1-min average) on {os.cpu_count()} cores", file=sys.stderr)
    rows = []
    with serve_command("--index", str(args.index)) as (url, _), tempfile.TemporaryDirectory() as tmp:
        for mode, dense in MODES.items():
            for variants in (1, 4):
                bodies = [json.dumps({"query": q, "variants": variants, "dense": dense}) for q in texts]
                script = Path(tmp) / f"{mode}-{variants}.lua"
                script.write_text(lua_script(bodies), encoding="utf-8")
                wrk(url, script, 2, 1)  # warm-up
                for connections in map(int, args.concurrency.split(",")):
                    result = wrk(url, script, connections, args.seconds)
                    rows.append((mode, variants, connections, result))
                    print(mode, variants, connections, result, file=sys.stderr)
    print("| retrievers | variants | clients | answered | requests/s | p50 ms | p99 ms | not 200 |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for mode, variants, connections, r in rows:
        # wrk's latencies are of the answered requests only: none answered, none to show.
        timing = f"{r['rps']:.1f} | {r['p50']:.1f} | {r['p99']:.1f}" if r["answered"] else "- | - | -"
        print(f"| {mode} | {variants} | {connections} | {r['answered']} | {timing} | {r['not_ok']} |")


if __name__ == "__main__":
    main()
