"""`fanfuse fuse` in one process against `--engine dask` on a LocalCluster of 1 and of 2 worker processes
(one thread each), measured in rounds of the three on the same input (and, with --engines, this
process's threads or 1 worker of 2 threads), with where the Dask time goes: reading (the core's
reader into row batches split by query), fusing (one core call per
partition, after the rows moved between workers), ordering and writing.

    .venv/bin/python benches/dask_scale.py                         # 30k queries x 3 runs x 100 docs, 3 rounds
    .venv/bin/python benches/dask_scale.py --queries 100000 --rounds 5
    .venv/bin/python benches/dask_scale.py --engines process,1,2,threads,1x2 --formats trec,parquet

Every Dask file is compared with the one-process file byte for byte. One JSON line per measurement
(wall seconds, per phase too; CPU seconds of this process and the workers, the work done, which a
busy machine slows less than the wall clock; the input in lines and MB; the 1-minute load average
before and after, since this machine is shared), then per format the medians over the rounds and the
two targets: 2 workers / 1 worker (target >= 1.7x) and one process / 2 workers (target >= 0.25). The
clusters start before the rounds and run a small warm-up job first: worker start-up and first imports
are not timed.
Inputs are those of benches/scale_fuse.py (grouped by query, same order), in a temp dir.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
from measuring import load_averages
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


def start_cluster(name: str, stack: contextlib.ExitStack) -> Any:
    """A client of a LocalCluster for engine `name`: `N` worker processes of one thread, or `NxT` of
    T threads each (loopback, no dashboard); not the default client (see `on`)."""
    from distributed import Client, LocalCluster

    workers, _, threads = name.partition("x")
    cluster = stack.enter_context(
        LocalCluster(
            n_workers=int(workers),
            threads_per_worker=int(threads or 1),
            processes=True,
            host="127.0.0.1",
            dashboard_address=None,
        )
    )
    return stack.enter_context(Client(cluster.scheduler_address, set_as_default=False))


def on(name: str, clients: dict[str, Any]) -> contextlib.AbstractContextManager[Any]:
    """Dask computations inside run on engine `name`: `threads` is this process's threads."""
    from fanfuse.dask.command import scheduler

    return scheduler(None) if name == "threads" else clients[name].as_current()


def persisted(tasks: Any) -> Any:
    """`tasks` computed and held where they were computed (the workers, or this process)."""
    import dask

    (done,) = dask.persist(tasks)
    with contextlib.suppress(ValueError):  # no distributed client: persist has computed already
        from distributed import wait

        wait([t for t in _leaves(done)])
    return done


def _leaves(tasks: Any) -> Iterator[Any]:
    if isinstance(tasks, (list, tuple)):
        for task in tasks:
            yield from _leaves(task)
    else:
        yield tasks


def dask_phases(inputs: list[str], output: Path) -> dict[str, float]:
    """The command's work in three timed steps, each held before the next starts."""
    from dask.delayed import delayed
    from fanfuse.dask import plan_runs
    from fanfuse.dask.command import write_fused
    from fanfuse.dask.kernel import fuse_partition

    times = {}
    start = time.perf_counter()
    plan = plan_runs(inputs)
    partitions = len(plan.blocks)
    summaries, rows = persisted(plan.read(partitions, "score"))
    times["read"] = time.perf_counter() - start
    start = time.perf_counter()
    options = {"top_k": TOP_K, "format": "trec"}
    fused = [delayed(fuse_partition)(part, summaries, plan.names, partitions, options) for part in rows]
    fused = persisted(fused)
    times["fuse"] = time.perf_counter() - start
    start = time.perf_counter()
    write_fused(fused, partitions, str(output), inputs)
    times["order_write"] = time.perf_counter() - start
    return times


def _process_cpu() -> float:
    times = os.times()
    return times.user + times.system


def cpu_seconds(name: str, clients: dict[str, Any]) -> float:
    """CPU seconds used so far by this process and, on a cluster, by its workers: the work done,
    which a busy machine slows less than it slows the wall clock."""
    workers = clients[name].run(_process_cpu).values() if name in clients else []
    return time.process_time() + sum(workers)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--queries", type=int, default=30_000)
    parser.add_argument("--rounds", type=int, default=3, help="rounds of every engine (default 3)")
    parser.add_argument("--engines", default="process,1,2", help="process, threads, N or NxT workers")
    parser.add_argument("--formats", default="trec", help="trec and/or parquet inputs")
    args = parser.parse_args()

    import fanfuse

    engines = args.engines.split(",")
    records: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="fanfuse-dask-scale-") as directory:
        root = Path(directory)
        trec = generate(root, args.queries)
        (root / "warm").mkdir()
        warm = generate(root / "warm", 200)
        size = sum(Path(p).stat().st_size for p in trec) / 1e6
        formats = {"trec": trec}
        if "parquet" in args.formats.split(","):
            formats["parquet"] = as_parquet(trec)
        base = {"queries": args.queries, "lines": args.queries * RUNS * DOCS, "trec_mb": round(size, 1)}
        expected = root / "process.trec"
        fanfuse.fuse_files(trec, str(expected), top_k=TOP_K)
        with contextlib.ExitStack() as stack:
            clients = {n: start_cluster(n, stack) for n in engines if n not in ("process", "threads")}
            for name in engines:  # a small job first: worker start-up and first imports are not timed
                if name != "process":
                    with on(name, clients):
                        dask_phases(warm, root / "warm.trec")
            for round_ in range(args.rounds):
                for name in engines:
                    for form, inputs in formats.items():
                        if name == "process" and form != "trec":
                            continue
                        record = {
                            **base,
                            "round": round_,
                            "engine": name,
                            "format": form,
                            "load_before": load_averages()[0],
                        }
                        output = root / f"{name}-{form}.trec"
                        start, cpu = time.perf_counter(), cpu_seconds(name, clients)
                        if name == "process":
                            fanfuse.fuse_files(inputs, str(output), top_k=TOP_K)
                            phases: dict[str, float] = {}
                        else:
                            with on(name, clients):
                                phases = dask_phases(inputs, output)
                        record["seconds"] = round(time.perf_counter() - start, 3)
                        record["cpu_seconds"] = round(cpu_seconds(name, clients) - cpu, 3)
                        record.update({k: round(v, 3) for k, v in phases.items()})
                        record["load_after"] = load_averages()[0]
                        record["same_file"] = output.read_bytes() == expected.read_bytes()
                        output.unlink()
                        records.append(record)
                        print(json.dumps(record), flush=True)
    summarize(records)


def summarize(records: list[dict[str, Any]]) -> None:
    """Medians over the rounds (wall and CPU seconds), and the targets' ratios from them."""
    medians: dict[tuple[str, str], float] = {}
    cpu: dict[str, float] = {}
    for key in {(r["engine"], r["format"]) for r in records}:
        mine = [r for r in records if (r["engine"], r["format"]) == key]
        medians[key] = statistics.median(r["seconds"] for r in mine)
        cpu[f"{key[0]} {key[1]}"] = statistics.median(r["cpu_seconds"] for r in mine)
    loads = [r[k] for r in records for k in ("load_before", "load_after")]
    summary: dict[str, Any] = {"medians": {f"{e} {f}": s for (e, f), s in sorted(medians.items())}}
    summary["cpu_medians"] = dict(sorted(cpu.items()))
    summary["load"] = {"min": min(loads), "max": max(loads)}
    process = medians.get(("process", "trec"))
    for form in {f for _, f in medians}:
        one, two = medians.get(("1", form)), medians.get(("2", form))
        if one and two:
            summary[f"{form}: 2 workers / 1 worker (>= 1.7)"] = round(one / two, 2)
        if two and process:
            summary[f"{form}: one process / 2 workers (>= 0.25)"] = round(process / two, 3)
    print(json.dumps(summary), flush=True)


if __name__ == "__main__":
    main()
