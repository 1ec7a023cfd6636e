"""The memory bound of `fanfuse fuse` (one process): peak RSS and wall time of the command under
`/usr/bin/time -v`, on 3 generated TREC runs of 100,000 queries x 20 hits (6M lines), in the cases of
docs/run-files.md "Memory bound": the runs in the same query order, the second and third in reverse
order, a query missing from the second run, the third run coming back to its first query at its end
(unsorted: the buffered mode); and on three MT-RAG runs of /work/shared/data/mtrag when present.

    .venv/bin/python benches/fuse_memory.py
    .venv/bin/python benches/fuse_memory.py --queries 10000 --cases same,reversed

One JSON line per case (exit code, wall seconds, peak RSS in MB), then a Markdown table.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from measuring import fanfuse_command, print_measured, time_command

HITS = 20
MTRAG = Path("/work/shared/data/mtrag/runs")
MTRAG_RUNS = [f"{name}_clapnq_rewrite.jsonl" for name in ("bm25", "bge", "elser")]


def write_run(path: Path, run: int, queries: list[int], skip: int | None = None, back: bool = False) -> str:
    """Run `run` over `queries` in that order, HITS hits each; without query `skip`; with `back`, the
    first query's last line moved to the end of the file."""
    moved = ""
    with path.open("w") as f:
        for q in queries:
            if q == skip:
                continue
            scores = [100 - h + (q * 7 + h * run) % 10 / 20 for h in range(1, HITS + 1)]
            lines = [
                f"q{q} Q0 d{q}x{(h + 3 * run) % 40} {h} {score:.2f} run{run}\n"
                for h, score in enumerate(scores, 1)
            ]
            if back and not moved:
                moved = lines.pop()
            f.writelines(lines)
        f.write(moved)
    return str(path)


def cases(directory: Path, queries: int) -> dict[str, list[str]]:
    order = list(range(1, queries + 1))
    same = [write_run(directory / f"same{r}.trec", r, order) for r in range(3)]
    reverse = [write_run(directory / f"reverse{r}.trec", r, order[::-1]) for r in (1, 2)]
    missing = write_run(directory / "missing1.trec", 1, order, skip=1)
    back = write_run(directory / "back2.trec", 2, order, back=True)
    found = {
        "same": same,
        "reversed": [same[0], *reverse],
        "missing": [same[0], missing, same[2]],
        "unsorted": [same[0], same[1], back],
    }
    if all((MTRAG / name).is_file() for name in MTRAG_RUNS):
        found["mtrag"] = [str(MTRAG / name) for name in MTRAG_RUNS]
    return found


def measure(name: str, runs: list[str], output: str) -> dict[str, object]:
    timed = time_command(fanfuse_command("fuse", *runs, "-o", output))
    assert timed is not None  # no timeout
    return {
        "case": name,
        **{key: timed[key] for key in ("exit", "wall_s", "peak_mb")},
        "input_mb": round(sum(os.path.getsize(p) for p in runs) / 2**20),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, default=100_000)
    parser.add_argument("--cases", default="same,reversed,missing,unsorted,mtrag")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        found = cases(Path(tmp), args.queries)
        rows = (
            measure(name, found[name], str(Path(tmp) / f"fused-{name}.trec"))
            for name in args.cases.split(",")
            if name in found
        )
        print_measured(
            rows, "case | input (MB)=input_mb | exit | wall (s)=wall_s | peak RSS (MB)=peak_mb", "lrrrr"
        )


if __name__ == "__main__":
    main()
