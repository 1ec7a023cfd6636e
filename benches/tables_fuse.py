"""Arrow tables and Parquet runs against TREC files: the same 3 runs x 100 docs per query fused by every
path, timed in one process (ratios against the TREC path, so the machine's speed cancels out).

    .venv/bin/python benches/tables_fuse.py                    # 10k queries, best of 3
    .venv/bin/python benches/tables_fuse.py --queries 100000 --repeat 3

Paths timed (each returns or writes the same fused rows; checked at the end):
- trec files:     `fuse_files` on the TREC files (the `fanfuse fuse` path: parse, fuse, write TREC)
- trec in memory: `read_run` of each file, `fuse_runs`, the result as a pyarrow Table
- fuse_table:     `fuse_table` on pyarrow Tables already in memory (the Dask partition path)
- run column:     `fuse_table` on ONE table holding the 3 runs, told apart by a `run` column
- parquet files:  `fanfuse fuse` on the runs as Parquet (pyarrow reads, the core replays, writes TREC)
- pyarrow read:   `pyarrow.parquet.read_table` of the 3 files alone (part of the line above)
"""

from __future__ import annotations

import argparse
import random
import tempfile
from collections.abc import Callable
from pathlib import Path

import fanfuse
import pyarrow as pa
import pyarrow.parquet as pq
from fanfuse.tables import fuse_table, read_parquet_run, to_arrow
from measuring import best_seconds

RUNS, DOCS = 3, 100


def generate(folder: Path, queries: int) -> tuple[list[str], list[str], list[pa.Table]]:
    """TREC files, the same runs as Parquet files and as in-memory tables (row for line)."""
    rng = random.Random(0)
    trec, parquet, tables = [], [], []
    for r in range(RUNS):
        qids, docids, ranks, scores = [], [], [], []
        for q in range(queries):
            for i, d in enumerate(rng.sample(range(1000), DOCS)):
                qids.append(f"q{q}")
                docids.append(f"doc{d:06d}")
                ranks.append(i + 1)
                scores.append(round(100.0 - i * 0.37 + rng.random(), 4))
        path = folder / f"run{r}.trec"
        with open(path, "w", encoding="utf-8") as out:
            for row in zip(qids, docids, ranks, scores, strict=True):
                out.write(f"{row[0]} Q0 {row[1]} {row[2]} {row[3]!r} run{r}\n")
        table = pa.table({"qid": qids, "docid": docids, "rank": ranks, "score": scores})
        pq.write_table(table, folder / f"run{r}.parquet")
        trec.append(str(path))
        parquet.append(str(folder / f"run{r}.parquet"))
        tables.append(table)
    return trec, parquet, tables


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--queries", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        trec, parquet, tables = generate(folder, args.queries)
        labelled = pa.concat_tables(
            [t.append_column("run", pa.array([f"run{r}"] * t.num_rows)) for r, t in enumerate(tables)]
        )
        labels = [f"run{r}" for r in range(RUNS)]
        out = str(folder / "out.trec")

        def in_memory() -> pa.Table:
            return to_arrow(fanfuse.fuse_runs([fanfuse.read_run(p) for p in trec]))

        paths: dict[str, Callable[[], object]] = {
            "trec files": lambda: fanfuse.fuse_files(trec, out),
            "trec in memory": in_memory,
            "fuse_table": lambda: fuse_table(tables),
            "run column": lambda: fuse_table(labelled, run_column="run", runs=labels),
            "parquet files": lambda: fanfuse.fuse_files([read_parquet_run(p) for p in parquet], out),
            "pyarrow read": lambda: [pq.read_table(p) for p in parquet],
        }
        # Path after path, each timed --repeat times in a row.
        seconds = best_seconds(paths, repeat=args.repeat, interleaved=False)
        same = fuse_table(tables).equals(in_memory())
        rows = RUNS * DOCS * args.queries
        print(
            f"{args.queries} queries x {RUNS} runs x {DOCS} docs = {rows} input rows; best of {args.repeat}"
        )
        print(f"{'path':<16} {'seconds':>8} {'rows/s':>12} {'vs trec files':>14}")
        for name, s in seconds.items():
            print(f"{name:<16} {s:8.3f} {rows / s:12.3g} {s / seconds['trec files']:13.2f}x")
        print(f"fuse_table equals the TREC path in memory: {same}")


if __name__ == "__main__":
    main()
