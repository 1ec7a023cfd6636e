"""Prints the table of fanfuse.fuse against ranx.fuse, method by method (README / docs quote it).

    .venv/bin/python benches/compare_methods.py [--queries 10000] [--repeat 5] [--threads 1]

Same data for both: per query 4 runs of 100 (id, score) hits drawn from 250 ids, scores descending.
"per call": one query (ranx given a one-query Run, built beforehand; fanfuse given Python lists).
"N queries": ranx fuses N-query Runs in one call (numba, parallel over queries); fanfuse loops over
the queries in Python, one call each (garbage collector off while timing, as timeit), or makes one
fuse_batch call (GIL released) on --threads threads, passed explicitly and named in the column header
(default 1, the library's default; ranx uses every core; a batch under 256 queries runs serially
whatever --threads says); the last ratio is ranx / fuse_batch. ranx's
Condorcet is pure Python (~0.1 s a query), so that row uses 500 queries on both sides.
Best of --repeat runs, after a warm-up call (numba compiles).
"""

from __future__ import annotations

import argparse
import warnings
from collections.abc import Callable
from typing import Any

import fanfuse
import ranx
from bench_methods import make_runs
from measuring import best_seconds, machine, versions

METHODS: list[tuple[str, str, str | None, dict[str, Any]]] = [
    # (fanfuse method, ranx method, norm, params) -- norm is ranx's; fanfuse's default is the same.
    ("rrf", "rrf", None, {}),
    ("isr", "isr", None, {}),
    ("log_isr", "log_isr", None, {}),
    ("logn_isr", "logn_isr", None, {}),
    ("rbc", "rbc", None, {"phi": 0.8}),
    ("bordafuse", "bordafuse", None, {}),
    ("condorcet", "condorcet", None, {}),
    ("combsum", "sum", "min-max", {}),
    ("combmnz", "mnz", "min-max", {}),
    ("combmax", "max", "min-max", {}),
    ("combmin", "min", "min-max", {}),
    ("combmed", "med", "min-max", {}),
    ("combanz", "anz", "min-max", {}),
    ("combgmnz", "gmnz", "min-max", {"gamma": 1.5}),
    ("wsum", "wsum", "min-max", {"weights": [1.0, 0.5, 2.0, 1.0]}),
    ("wmnz", "wmnz", "min-max", {"weights": [1.0, 0.5, 2.0, 1.0]}),
    ("mixed", "mixed", "min-max", {"weights": [1.0, 0.5, 2.0, 1.0]}),
    ("combsum", "sum", "zmuv", {}),
    ("combsum", "sum", "borda", {}),
]


Queries = list[list[list[tuple[str, float]]]]


def ranx_runs(queries: Queries) -> list[Any]:
    return [
        ranx.Run({f"q{q}": dict(runs[i]) for q, runs in enumerate(queries)}) for i in range(len(queries[0]))
    ]


def row(
    spec: tuple[str, str, str | None, dict[str, Any]], one: Queries, many: Queries, repeat: int, threads: int
) -> str:
    """One table row: ranx and fanfuse on the same queries."""
    method, ranx_method, norm, params = spec
    opts: dict[str, Any] = dict(params) | ({"norm": norm} if norm is not None else {})
    if method == "condorcet":
        many = many[:500]

    def ranx_call(runs: list[Any]) -> None:
        ranx.fuse(runs, norm=norm, method=ranx_method, params=dict(params))

    ranx_one, ranx_many = ranx_runs(one), ranx_runs(many)

    def best(repeat: int, work: Callable[[], object]) -> float:
        # A warm-up call first (numba compiles on first use); the collector off while timing, as
        # timeit: the 10k-query inputs are millions of objects for it to walk.
        return best_seconds({"work": work}, repeat=repeat, warm_up=1, collector=False)["work"]

    r1 = best(repeat, lambda: ranx_call(ranx_one))
    f1 = best(repeat, lambda: fanfuse.fuse(one[0], method=method, **opts))
    rn = best(1, lambda: ranx_call(ranx_many))
    fn = best(1, lambda: [fanfuse.fuse(runs, method=method, **opts) for runs in many])
    fb = best(1, lambda: fanfuse.fuse_batch(many, method=method, threads=threads, **opts))
    return (
        f"| {method} | {norm or '-'} | {r1 * 1e6:,.0f} µs | {f1 * 1e6:,.1f} µs | {r1 / f1:,.0f}x "
        f"| {len(many):,} | {rn:,.2f} s | {fn:,.3f} s | {fb:,.3f} s | {rn / fb:,.0f}x |"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--threads", type=int, default=1, help="threads of the fuse_batch call (default 1)")
    args = parser.parse_args()
    warnings.simplefilter("ignore")  # numba's cast warnings
    one = [make_runs(seed=1)]
    many = [make_runs(seed=q) for q in range(args.queries)]
    print(f"machine: {machine(*versions('ranx', 'numba'))}")
    columns = ["method", "norm", "ranx per call", "fanfuse per call", "ratio", "queries", "ranx", "fuse loop"]
    batch = f"fuse_batch, {args.threads} thread{'s' if args.threads > 1 else ''}"
    print("\n| " + " | ".join([*columns, batch, "ratio"]) + " |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for spec in METHODS:
        print(row(spec, one, many, args.repeat, args.threads), flush=True)


if __name__ == "__main__":
    main()
