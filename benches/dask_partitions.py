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
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from measuring import fanfuse_command, print_measured, time_command
from scale_fuse import generate

RUNS, QUERIES, HITS = 2, 5000, 2


def measure(runs: list[str], output: str, partitions: int, timeout: float) -> dict[str, object]:
    command = fanfuse_command(
        "fuse", *runs, "-o", output, "--engine", "dask", "--partitions", str(partitions)
    )
    timed = time_command(command, timeout)
    if timed is None:
        return {"partitions": partitions, "exit": None, "wall_s": f">{timeout:g}", "peak_mb": None}
    return {"partitions": partitions, **timed}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--partitions", default="60,240,500,5000")
    parser.add_argument("--timeout", type=float, default=900)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        runs = generate(Path(tmp), QUERIES, runs=RUNS, hits=HITS)
        size = sum(os.path.getsize(p) for p in runs)
        print(json.dumps({"runs": RUNS, "queries": QUERIES, "input_kb": round(size / 1024)}), flush=True)
        rows = (
            measure(runs, str(Path(tmp) / f"fused{n}.trec"), n, args.timeout)
            for n in (int(part) for part in args.partitions.split(","))
        )
        print_measured(
            rows, "--partitions=partitions | exit | wall (s)=wall_s | peak RSS (MB)=peak_mb", "rrrr"
        )


if __name__ == "__main__":
    main()
