"""Prints the README's performance table: fanfuse against the pure-Python reference and NumPy per
call, and rrf_batch against its bare kernel, all timed in this one process (ratios, not absolutes,
are what carries over to another machine).

Usage: python benches/compare.py [--queries N] [--rounds R]    (`make compare` runs the defaults)
"""

from __future__ import annotations

import argparse
import os
import random
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import fanfuse
from fanfuse import reference
from fanfuse._core._internal import _kernel_seconds

sys.path.insert(0, str(Path(__file__).resolve().parent))
from measuring import best_seconds, machine, versions
from numpy_rrf import rrf_numpy
from workloads import LIST_LEN, N_LISTS, TOP_K, int64_query, str_batch, str_query


def fanfuse_call(lists: Any) -> Callable[[], Any]:
    def call() -> Any:
        fused = fanfuse.rrf(lists, top_k=TOP_K)
        return fused.ids, fused.scores  # the same Python lists the other contenders return

    return call


def per_call_rows(rounds: int) -> list[str]:
    rows = []
    rng = random.Random(1)
    for label, lists in (("str ids (lists)", str_query(rng)), ("int64 NumPy arrays", int64_query(rng))):
        contenders: dict[str, Callable[[], Any]] = {
            "fanfuse": fanfuse_call(lists),
            "reference": lambda lists=lists: reference.rrf(lists, top_k=TOP_K),
            "numpy": lambda lists=lists: rrf_numpy(lists, top_k=TOP_K),
        }
        # Interleaved rounds of as many calls as take 0.05 s, the collector off (as timeit).
        t = best_seconds(contenders, repeat=rounds, number=None, min_seconds=0.05, collector=False)
        rows.append(
            f"| one call, {N_LISTS} x {LIST_LEN} {label}, top {TOP_K} | {t['fanfuse'] * 1e6:.1f} µs "
            f"| {t['reference'] * 1e6:.0f} µs (**{t['reference'] / t['fanfuse']:.1f}x**) "
            f"| {t['numpy'] * 1e6:.0f} µs (**{t['numpy'] / t['fanfuse']:.1f}x**) |"
        )
    return rows


def read_results(results: list[fanfuse.Fused]) -> list[tuple[list[Any], list[float]]]:
    """Each result's ids and scores as Python lists, as a caller reads them: a result builds its
    Python ids on access, so a batch timed without reading them would leave that work out."""
    return [(fused.ids, fused.scores) for fused in results]


def batch_rows(n_queries: int, rounds: int) -> list[str]:
    batch = str_batch(n_queries, seed=2)
    cores = os.cpu_count() or 1
    contenders: dict[str, Callable[[], Any]] = {
        "rrf_batch, 1 thread": lambda: read_results(fanfuse.rrf_batch(batch, top_k=TOP_K, threads=1)),
        f"rrf_batch, {cores} threads": lambda: read_results(
            fanfuse.rrf_batch(batch, top_k=TOP_K, threads=cores)
        ),
        "loop of rrf": lambda: read_results([fanfuse.rrf(q, top_k=TOP_K) for q in batch]),
    }
    # A call each (one first, uncounted), interleaved rounds, the collector off.
    t = best_seconds(contenders, repeat=rounds, number=None, min_seconds=0, collector=False)
    # The bare kernel: the same queries already copied into Rust, timed in Rust on one thread.
    kernel = _kernel_seconds(batch, top_k=TOP_K, repeat=rounds)
    rows = [f"| bare kernel, 1 thread (timed in Rust) | {kernel / n_queries * 1e6:.2f} µs | 1.00x |"]
    rows += [f"| {name} | {s / n_queries * 1e6:.2f} µs | {s / kernel:.2f}x |" for name, s in t.items()]
    return rows


def rustc_version() -> str:
    try:
        return subprocess.run(
            ["rustc", "--version"], capture_output=True, text=True, check=True
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "rustc unknown"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, default=10_000, help="queries in the batch (default 10000)")
    parser.add_argument("--rounds", type=int, default=7, help="timing rounds; the best counts (default 7)")
    args = parser.parse_args()
    print("| per call | fanfuse | pure-Python reference | NumPy |")
    print("|---|---|---|---|")
    print("\n".join(per_call_rows(args.rounds)))
    print()
    print(
        f"| batch of {args.queries:,} queries, {N_LISTS} x {LIST_LEN} str ids each, top {TOP_K} "
        "| per query | vs bare kernel |"
    )
    print("|---|---|---|")
    print("\n".join(batch_rows(args.queries, max(3, args.rounds // 2))))
    print()
    print(f"Machine: {machine(rustc_version(), *versions('numpy'))}.  ")
    print(f"Command: `{' '.join(['python benches/compare.py', *sys.argv[1:]])}`")


if __name__ == "__main__":
    main()
