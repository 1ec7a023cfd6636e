"""What `--partitions N` costs `fanfuse fuse --engine dask`: peak memory and wall time of the command,
under `/usr/bin/time -v`, at several N on the same generated runs (2 runs x 5,000 queries x 2 hits,
about 630 KB: enough queries for 5,000 partitions), on this process's threads (no --scheduler).

    .venv/bin/python benches/dask_partitions.py                      # N = 60, 240, 500, 5000
    .venv/bin/python benches/dask_partitions.py --partitions 60,240 --timeout 300

One JSON line per N (exit code, wall seconds, peak RSS in MB), then a Markdown table. The cost of a
partition should be that of its rows and a few tasks: wall and memory about flat in N here, where the
rows are fixed.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from scale_fuse import generate

RUNS, QUERIES, HITS = 2, 5000, 2
ENTRY = "import sys; from fanfuse.cli import main; sys.exit(main())"


def measure(runs: list[str], output: str, partitions: int, timeout: float) -> dict[str, object]:
    command = ["/usr/bin/time", "-v", sys.executable, "-c", ENTRY, "fuse", *runs, "-o", output]
    command += ["--engine", "dask", "--partitions", str(partitions)]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout, check=False)
    except subprocess.TimeoutExpired:
        return {"partitions": partitions, "exit": None, "wall_s": f">{timeout:g}", "peak_mb": None}
    wall = re.search(r"Elapsed \(wall clock\) time \(h:mm:ss or m:ss\): (\S+)", done.stderr)
    peak = re.search(r"Maximum resident set size \(kbytes\): (\d+)", done.stderr)
    clock = reversed(wall.group(1).split(":")) if wall else []
    seconds = sum(float(part) * 60**i for i, part in enumerate(clock)) if wall else None
    return {
        "partitions": partitions,
        "exit": done.returncode,
        "wall_s": seconds,
        "peak_mb": round(int(peak.group(1)) / 1024) if peak else None,
        "error": done.stderr.splitlines()[0] if done.returncode else "",
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--partitions", default="60,240,500,5000")
    parser.add_argument("--timeout", type=float, default=900)
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        runs = generate(Path(tmp), QUERIES, runs=RUNS, hits=HITS)
        size = sum(os.path.getsize(p) for p in runs)
        print(json.dumps({"runs": RUNS, "queries": QUERIES, "input_kb": round(size / 1024)}), flush=True)
        for n in (int(part) for part in args.partitions.split(",")):
            row = measure(runs, str(Path(tmp) / f"fused{n}.trec"), n, args.timeout)
            print(json.dumps(row), flush=True)
            rows.append(row)
    print("\n| --partitions | exit | wall (s) | peak RSS (MB) |\n|---:|---:|---:|---:|")
    for row in rows:
        print(f"| {row['partitions']} | {row['exit']} | {row['wall_s']} | {row['peak_mb']} |")


if __name__ == "__main__":
    main()
