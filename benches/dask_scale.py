"""`fanfuse fuse` in one process against `--engine dask`: the threaded scheduler of this process and a
LocalCluster of 1 and 2 worker processes, on 3 runs x 100 docs per query (TREC, and Parquet), with
where the Dask time goes: reading + shuffle on qid, the kernel per partition, ordering + writing.

    .venv/bin/python benches/dask_scale.py                       # 100k queries
    .venv/bin/python benches/dask_scale.py --queries 10000       # a smaller size
    .venv/bin/python benches/dask_scale.py --engines process,threads,1,2 --formats trec,parquet

Every Dask result is compared with the one-process file (byte for byte) and the figures are printed as
one JSON line per measurement (wall seconds; the input in lines and MB). Inputs are those of
benches/scale_fuse.py (grouped by query, same order), in a temp dir.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from scale_fuse import DOCS, RUNS, generate

TOP_K = 100


def as_parquet(paths: list[str]) -> list[str]:
    """The same runs as Parquet (qid, docid, rank, score), rows in line order."""
    import pyarrow.csv as csv
    import pyarrow.parquet as pq

    names = ["qid", "q0", "docid", "rank", "score", "tag"]
    converted = []
    for path in paths:
        options = csv.ReadOptions(column_names=names)
        table = csv.read_csv(path, read_options=options, parse_options=csv.ParseOptions(delimiter=" "))
        target = path.replace(".trec", ".parquet")
        pq.write_table(table.select(["qid", "docid", "rank", "score"]), target, row_group_size=1 << 20)
        converted.append(target)
    return converted


@contextlib.contextmanager
def engine(name: str) -> Iterator[None]:
    """`threads`: this process; a number: a LocalCluster of that many worker processes (loopback)."""
    from fanfuse.dask.command import scheduler

    if name == "threads":
        with scheduler(None):
            yield
        return
    from distributed import LocalCluster

    workers = int(name)
    with (
        LocalCluster(
            n_workers=workers,
            threads_per_worker=max(1, 2 // workers),
            processes=True,
            host="127.0.0.1",
            dashboard_address=None,
        ) as cluster,
        scheduler(cluster.scheduler_address),
    ):
        yield


def dask_phases(inputs: list[str], output: Path, partitions: int | None) -> dict[str, float]:
    """The command's work in three timed steps (each persisted before the next starts)."""
    import fanfuse.dask as fd
    from distributed import wait
    from fanfuse._core import OutputFile
    from fanfuse.dask import kernel
    from fanfuse.dask.command import write_fused

    times = {}
    start = time.perf_counter()
    rows, blocks, kinds = fd.read_rows(inputs)
    shuffled = rows.shuffle(on="qid", npartitions=partitions or rows.npartitions).persist()
    with contextlib.suppress(ValueError):  # no distributed client: persist already computed
        wait(shuffled)
    times["read_shuffle"] = time.perf_counter() - start
    start = time.perf_counter()
    from fanfuse.dask.order import block_summary, group_starts

    summary = rows.map_partitions(block_summary).compute()
    starts, totals = group_starts(summary, len(blocks), len(inputs))
    options = {"top_k": TOP_K}
    fused = shuffled.map_partitions(
        kernel.fuse_partition, blocks, kinds, starts, totals, options, meta=fd._meta(kernel.FUSED_COLUMNS)
    ).persist()
    with contextlib.suppress(ValueError):
        wait(fused)
    times["fuse"] = time.perf_counter() - start
    start = time.perf_counter()
    with OutputFile(output) as stream:
        write_fused(fused, stream)
    times["order_write"] = time.perf_counter() - start
    return times


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--queries", type=int, default=100_000)
    parser.add_argument("--engines", default="process,threads,1,2")
    parser.add_argument("--formats", default="trec,parquet")
    parser.add_argument("--partitions", type=int, help="partitions of the shuffle (default: one per block)")
    args = parser.parse_args()

    import fanfuse

    with tempfile.TemporaryDirectory(prefix="fanfuse-dask-scale-") as directory:
        root = Path(directory)
        trec = generate(root, args.queries)
        size = sum(Path(p).stat().st_size for p in trec) / 1e6
        formats = {"trec": trec}
        if "parquet" in args.formats.split(","):
            formats["parquet"] = as_parquet(trec)
        base = {"queries": args.queries, "lines": args.queries * RUNS * DOCS, "trec_mb": round(size, 1)}
        expected = root / "process.trec"
        start = time.perf_counter()
        fanfuse.fuse_files(trec, str(expected), top_k=TOP_K)
        process = time.perf_counter() - start
        if "process" in args.engines.split(","):
            print(json.dumps({**base, "engine": "process", "format": "trec", "seconds": round(process, 2)}))
        for name in (e for e in args.engines.split(",") if e != "process"):
            with engine(name):
                for form, inputs in formats.items():
                    output = root / f"{name}-{form}.trec"
                    start = time.perf_counter()
                    phases = dask_phases(inputs, output, args.partitions)
                    seconds = time.perf_counter() - start
                    same = output.read_bytes() == expected.read_bytes()
                    record = {**base, "engine": f"dask {name}", "format": form, "seconds": round(seconds, 2)}
                    record.update({k: round(v, 2) for k, v in phases.items()})
                    print(json.dumps({**record, "same_file": same}), flush=True)
                    output.unlink()


if __name__ == "__main__":
    main()
