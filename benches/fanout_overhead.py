"""The orchestration overhead of a 4 variants x 2 retrievers search, against the bare fan-out floor
measured call by call in the same process.

    .venv/bin/python benches/fanout_overhead.py [--calls 1000] [--ab REF]

`search` over two sync retrievers, and `asearch` over one sync and one async retriever, each
sleeping 2 ms and returning a memoized list (bench_multiquery.py's), so a branch costs its wait and
nothing else; four fixed variants (a ``StaticExpander``, which needs no thread of its own). A
search's overhead is its wall time minus its slowest branch's latency; it is split into "first
start" (the search began to the first branch began: planning, expansion, the branches handed to
threads, the first thread running), "last start" (the same to the last branch began: the other
threads' turns) and "after" (the last branch ended to the search returned: the caller woken,
fusion, the result). A third case, two retrievers that answer in microseconds in the calling
thread and take a search's variants in one call (``search_batch``, as the Tantivy and dense
retrievers do), measures the fan-out where the retrievers cost nothing: one thread hand-off per
retriever instead of one per branch. The
floor is 8 calls on a bare `ThreadPoolExecutor`, measured the same way, alternating with the
searches. Then the in-thread cost of each step, best of 5 x 2000 calls. Prints the load average: on
a shared machine only the differences and ratios of one run mean something.

``--ab REF`` also loads ``fanfuse.multiquery`` as it is at git ``REF`` (beside this tree's, as the
package ``fanfuse_ref_multiquery``; the rest of fanfuse is this tree's) and alternates its searches
with this tree's call by call, then prints the paired difference: an A/B in one process.
"""

from __future__ import annotations

import argparse
import asyncio
import atexit
import importlib
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from types import ModuleType
from typing import Any

from bench_multiquery import FOUR, QUERIES, VARIANTS, SleepingAsync, SleepingSync, ranked
from fanfuse.multiquery import MultiQueryRetriever
from fanfuse.multiquery.fanout import fan_out_sync
from fanfuse.multiquery.planning import make_plan
from measuring import best_seconds, load_text, machine


def percentiles(values: list[float]) -> str:
    ordered = sorted(values)
    p99 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]
    return f"p50 {statistics.median(ordered):.3f} ms, p99 {p99:.3f} ms"


def bare_pool(pool: ThreadPoolExecutor, variants: list[str]) -> tuple[float, float]:
    """(overhead, last start) of 8 calls on the pool, in ms."""
    retriever = SleepingSync()

    def timed(query: str) -> tuple[float, float]:
        begin = time.perf_counter()
        retriever.search(query, 20)
        return begin, time.perf_counter()

    start = time.perf_counter()
    spans = list(pool.map(timed, variants))
    wall = time.perf_counter() - start
    return (wall - max(end - begin for begin, end in spans)) * 1e3, (max(b for b, _ in spans) - start) * 1e3


def searched(call: Callable[[], Any]) -> tuple[float, float, float, float]:
    """(overhead, last start, after the last end, first start) of one search, in ms."""
    start = time.perf_counter()
    result = call()
    wall = (time.perf_counter() - start) * 1e3
    branches = result.diagnostics.branches
    assert len(branches) == 8 and not result.diagnostics.failed_branches
    last_end = max(b.started_ms + b.latency_ms for b in branches)
    starts = [b.started_ms for b in branches]
    return wall - max(b.latency_ms for b in branches), max(starts), wall - last_end, min(starts)


def reference_package(ref: str) -> ModuleType:
    """``fanfuse.multiquery`` as of git ``ref``, imported as ``fanfuse_ref_multiquery``."""
    root = Path(__file__).resolve().parent.parent
    folder = "python/fanfuse/multiquery"
    git = ["git", "-C", str(root)]
    names = subprocess.run(
        [*git, "ls-tree", "--name-only", f"{ref}:{folder}"], capture_output=True, text=True, check=True
    )
    folder_on_path = tempfile.mkdtemp(prefix="fanout-ab-")
    atexit.register(shutil.rmtree, folder_on_path, ignore_errors=True)
    package = Path(folder_on_path, "fanfuse_ref_multiquery")
    package.mkdir()
    for name in names.stdout.split():
        if name.endswith(".py"):
            source = subprocess.run(
                [*git, "show", f"{ref}:{folder}/{name}"], capture_output=True, text=True, check=True
            )
            (package / name).write_text(source.stdout.replace("fanfuse.multiquery", "fanfuse_ref_multiquery"))
    sys.path.insert(0, str(package.parent))
    return importlib.import_module("fanfuse_ref_multiquery")


class InProcess:
    """A retriever that answers in microseconds, in the calling thread (as an in-memory index does),
    and takes a search's variants in one call."""

    def search(self, query: str, k: int, filter: Any = None) -> Any:
        return ranked(query, k)

    def search_batch(self, queries: list[str], k: int, filter: Any = None) -> list[Any]:
        return [ranked(query, k) for query in queries]


def fan_out_table(calls: int, reference: ModuleType | None) -> None:
    sync_only = MultiQueryRetriever({"a": SleepingSync(), "b": SleepingSync()}, expander=FOUR, max_variants=4)
    mixed = MultiQueryRetriever([SleepingSync(), SleepingAsync()], expander=FOUR, max_variants=4)
    in_process = MultiQueryRetriever({"a": InProcess(), "b": InProcess()}, expander=FOUR, max_variants=4)
    loop = asyncio.new_event_loop()
    cases: dict[str, Callable[[], Any]] = {
        "search, 2 sync retrievers": lambda: sync_only.search(QUERIES[0]),
        "asearch, sync + async": lambda: loop.run_until_complete(mixed.asearch(QUERIES[0])),
        "search, 2 in-process retrievers": lambda: in_process.search(QUERIES[0]),
    }
    if reference is not None:
        four = reference.StaticExpander(VARIANTS)  # that package's own expander class
        old_sync = reference.MultiQueryRetriever(
            {"a": SleepingSync(), "b": SleepingSync()}, expander=four, max_variants=4
        )
        old_mixed = reference.MultiQueryRetriever(
            [SleepingSync(), SleepingAsync()], expander=four, max_variants=4
        )
        old_in_process = reference.MultiQueryRetriever(
            {"a": InProcess(), "b": InProcess()}, expander=four, max_variants=4
        )
        cases["search at REF"] = lambda: old_sync.search(QUERIES[0])
        cases["asearch at REF"] = lambda: loop.run_until_complete(old_mixed.asearch(QUERIES[0]))
        cases["in-process at REF"] = lambda: old_in_process.search(QUERIES[0])
    variants = [v.text for v in sync_only.expander.expand(QUERIES[0], max_variants=4).variants] * 2
    pool = ThreadPoolExecutor(16)
    ours: dict[str, list[tuple[float, float, float, float]]] = {label: [] for label in cases}
    floor: list[tuple[float, float]] = []
    shuffle = random.Random(0)
    for i in range(calls + 100):  # every case and the floor, call by call
        order = list(cases)
        shuffle.shuffle(order)  # no case always runs right after the same one (the pool's wake-ups)
        measured = {label: searched(cases[label]) for label in order}
        bare = bare_pool(pool, variants)
        if i >= 100:  # warm-up: threads started, caches filled
            for label, value in measured.items():
                ours[label].append(value)
            floor.append(bare)
    floor_p50 = statistics.median(f for f, _ in floor)
    print(
        f"bare pool floor {percentiles([f for f, _ in floor])} "
        f"(last start p50 {statistics.median(s for _, s in floor):.3f} ms)"
    )
    for label, call in cases.items():
        overhead = [o for o, *_ in ours[label]]
        cpu_start = time.thread_time()
        for _ in range(200):
            call()
        cpu = (time.thread_time() - cpu_start) / 200 * 1e3
        print(f"{label}: overhead {percentiles(overhead)}; calling thread's CPU {cpu:.3f} ms a search")
        print(
            f"  first start p50 {statistics.median(f for *_, f in ours[label]):.3f} ms, "
            f"last start p50 {statistics.median(s for _, s, _, _ in ours[label]):.3f} ms, "
            f"after the last end p50 {statistics.median(a for _, _, a, _ in ours[label]):.3f} ms; "
            f"minus the floor at p50: {statistics.median(overhead) - floor_p50:.3f} ms"
        )
    if reference is not None:
        for new, old in (
            ("search, 2 sync retrievers", "search at REF"),
            ("asearch, sync + async", "asearch at REF"),
            ("search, 2 in-process retrievers", "in-process at REF"),
        ):
            paired = [o[0] - n[0] for o, n in zip(ours[old], ours[new], strict=True)]
            print(f"{old} minus this tree, paired call by call: p50 {statistics.median(paired):.3f} ms")
    pool.shutdown()
    loop.close()


def step_table() -> None:
    retriever = MultiQueryRetriever({"a": SleepingSync(), "b": SleepingSync()}, expander=FOUR, max_variants=4)
    plan = make_plan(retriever, QUERIES[0], {}, "search")
    variants = retriever._variant_source()
    chosen, _ = variants.expand_sync(plan)
    branches = retriever._branches(plan, chosen)
    outcomes = fan_out_sync(branches, k=plan.branch_k, filter=None, timeout=10.0, started=time.perf_counter())
    steps: dict[str, Callable[[], Any]] = {
        "make_plan": lambda: make_plan(retriever, QUERIES[0], {}, "search"),
        "expand (4 fixed variants)": lambda: variants.expand_sync(plan),
        "8 branches": lambda: retriever._branches(plan, chosen),
        "fusion (provenance read on demand)": lambda: retriever._fuse(plan, outcomes),
        "fusion, then every hit's provenance read": lambda: [
            h.provenance for h in retriever._fuse(plan, outcomes)[0]
        ],
    }
    # Step after step, best of 5 x 2000 calls, the collector off while timing (as timeit).
    best = best_seconds(steps, repeat=5, number=2000, interleaved=False, collector=False)
    for label, seconds in best.items():
        print(f"  {label}: {seconds * 1e6:.1f} µs")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=1000)
    parser.add_argument("--ab", metavar="REF", help="also time fanfuse.multiquery as of this git ref")
    args = parser.parse_args()
    reference = None if args.ab is None else reference_package(args.ab)
    print(f"machine: {machine()}; {load_text()}")
    fan_out_table(args.calls, reference)
    print("in-thread cost per call:")
    step_table()
    print(load_text())


if __name__ == "__main__":
    main()
