"""What a fusion's result costs to build and to read, for two builds of fanfuse side by side.

    .venv/bin/python benches/fused_result_cost.py BASE_DIR AFTER_DIR [--rounds 5]

Each DIR holds a ``fanfuse`` package (with its compiled core, a release build for timing). The two
run in turn, one process per build and round (so the machine's load falls on both alike); each time
is the best of its rounds, and the ratio is AFTER / BASE. Inputs are ``workloads.py``'s: 4 lists of
100 str ids per query, ``top_k`` left at its default (all hits) unless the row says ``top 10``. The
``scored`` rows give each list its scores (combsum over min-max, which reads them) in the three forms
``fuse`` takes: ``(ids, scores)`` with a list or a float64 array of scores, and ``(id, score)`` pairs.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

from measuring import load_text

PROBE = r"""
import gc, json, random, sys
sys.path.insert(0, sys.argv[1])
import numpy as np
import fanfuse
from measuring import best_seconds, machine
from workloads import TOP_K, str_batch, str_query

def best(run, number, repeat=5):
    return best_seconds({"run": run}, repeat=repeat, number=number)["run"]

one = str_query(random.Random(1))
batch = str_batch(10_000)
results = fanfuse.rrf_batch(batch)
SCORED = {"method": "combsum", "norm": "min-max"}

def scored(query, form):
    scores = [[1.0 / (r + 1) for r in range(len(ids))] for ids in query]
    if form == "pairs":
        return [list(zip(ids, s)) for ids, s in zip(query, scores)]
    return [(ids, np.array(s) if form == "array" else s) for ids, s in zip(query, scores)]

scored_batch = [scored(q, "list") for q in batch[:2_000]]
out = {
    "rrf, one call (us)": best(lambda: fanfuse.rrf(one), 2000) * 1e6,
    "fuse, one call (us)": best(lambda: fanfuse.fuse(one), 2000) * 1e6,
    "rrf, one call, top 10 (us)": best(lambda: fanfuse.rrf(one, top_k=TOP_K), 2000) * 1e6,
    "rrf(...).ids, one call (us)": best(lambda: fanfuse.rrf(one).ids, 2000) * 1e6,
    "fuse explain, top 10 (us)": best(lambda: fanfuse.fuse(one, top_k=TOP_K, explain=True), 2000) * 1e6,
    "fuse explain + .explain, top 10 (us)": best(
        lambda: fanfuse.fuse(one, top_k=TOP_K, explain=True).explain, 2000
    ) * 1e6,
    **{
        f"fuse, scored, {form}, one call (us)": best(
            lambda q=scored(one, form): fanfuse.fuse(q, **SCORED), 2000
        ) * 1e6
        for form in ("list", "array", "pairs")
    },
    "fuse_batch, scored lists, 2k queries (ms)": best(
        lambda: fanfuse.fuse_batch(scored_batch, **SCORED), 1
    ) * 1e3,
    "rrf_batch, 10k queries (ms)": best(lambda: fanfuse.rrf_batch(batch), 1) * 1e3,
    ".ids of every result of the batch (ms)": best(lambda: [r.ids for r in results], 1) * 1e3,
    "rrf_batch + .ids of every result (ms)": best(lambda: [r.ids for r in fanfuse.rrf_batch(batch)], 1) * 1e3,
    "rrf_batch, 10k queries, top 10 (ms)": best(lambda: fanfuse.rrf_batch(batch, top_k=TOP_K), 1) * 1e3,
}

held = []

def ten_batches_kept():
    # Results that outlive their batch: were they tracked, the collector's full passes would walk
    # every input list again and again. They are freed before the next timing, outside this one.
    held.append([fanfuse.rrf_batch(batch, top_k=TOP_K) for _ in range(10)])

def start_clean():
    held.clear()
    gc.collect()

for collector, name in ((True, "on"), (False, "off")):
    kept = best_seconds({"kept": ten_batches_kept}, repeat=3, collector=collector, setup=start_clean)
    kept_ms = kept["kept"] * 1e3
    out[f"ten rrf_batch top 10, results kept, collector {name} (ms)"] = kept_ms
print(json.dumps({"machine": machine(), "rows": out}))
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("base", type=Path)
    parser.add_argument("after", type=Path)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    benches = Path(__file__).resolve().parent
    best: dict[str, dict[str, float]] = {"base": {}, "after": {}}
    machines = {}
    for _ in range(args.rounds):
        for name, directory in (("base", args.base), ("after", args.after)):
            env = {**os.environ, "PYTHONPATH": f"{directory.resolve()}{os.pathsep}{benches}"}
            probe = [sys.executable, "-c", PROBE, str(benches)]
            done = subprocess.run(probe, env=env, capture_output=True, text=True, check=True)
            measured = json.loads(done.stdout)
            machines[name] = measured["machine"]
            for row, value in measured["rows"].items():
                best[name][row] = min(value, best[name].get(row, value))
    # Each build's own line: it states the profile that build's core was compiled with.
    for name, described in machines.items():
        print(f"{name}: {described}")
    print(load_text())
    print("| row | base | after | after / base |\n|---|---:|---:|---:|")
    for row, base in best["base"].items():
        after = best["after"][row]
        print(f"| {row} | {base:.1f} | {after:.1f} | {after / base:.2f} |")


if __name__ == "__main__":
    main()
