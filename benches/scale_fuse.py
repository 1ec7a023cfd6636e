"""End-to-end scale benchmark of `fanfuse fuse`: parse + fuse + write of 3 TREC runs x 100 docs per query,
against a naive pure-Python fuser and ranx, each in its own child process (wall time and peak RSS).

    .venv/bin/python benches/scale_fuse.py                     # 10k and 100k queries
    .venv/bin/python benches/scale_fuse.py --sizes 10000,100000,1000000
    .venv/bin/python benches/scale_fuse.py --ranx-max 10000    # ranx only up to this size
    .venv/bin/python benches/scale_fuse.py --repeat 5          # each engine 5 times: min and median

Two measurements per engine: "fuse" is the parse + fuse + write call timed inside the child after its
imports (interpreter start-up, imports and ranx's numba compilation excluded: the ratios of engines run
in the same process), and "process" is the whole child as the parent sees it (start-up included), with
its CPU time and peak RSS.

Inputs are synthetic, grouped by query in the same order (as retrieval systems write them), in a temp dir.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from measuring import machine, versions

RUNS = 3
DOCS = 100

# Each engine runs in a fresh interpreter: it imports (`setup`), then times `body` (wall and CPU time,
# user + system of all threads; CPU time is the steadier number on a shared machine), then prints those
# with the CPU time and peak RSS of the whole process.
CHILD = """
import json, resource, sys, time
{setup}
start, cpu = time.perf_counter(), time.process_time()
{body}
seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
usage = resource.getrusage(resource.RUSAGE_SELF)
print(json.dumps({{"seconds": seconds, "cpu": cpu, "process_cpu": usage.ru_utime + usage.ru_stime,
                   "rss_mb": usage.ru_maxrss / 1024}}))
"""

FANFUSE_SETUP = "import fanfuse"
FANFUSE = """
fanfuse.fuse_files(sys.argv[1:-1], sys.argv[-1], k=60.0, top_k=100)
"""

NAIVE = """
def read(path):
    queries = {}
    with open(path) as f:
        for line in f:
            qid, _, docid, rank, score, _ = line.split()
            queries.setdefault(qid, []).append((docid, float(score)))
    for hits in queries.values():
        hits.sort(key=lambda h: (-h[1], [-ord(c) for c in h[0]]))  # score desc, docid desc
    return queries

runs = [read(p) for p in sys.argv[1:-1]]
qids = list(dict.fromkeys(q for run in runs for q in run))
with open(sys.argv[-1], "w") as out:
    for qid in qids:
        scores = {}
        for run in runs:
            seen = set()
            for rank, (docid, _) in enumerate(run.get(qid, []), start=1):
                if docid in seen:
                    continue
                seen.add(docid)
                scores[docid] = scores.get(docid, 0.0) + 1.0 / (60.0 + rank)
        # A fused run is written as it is evaluated: score descending, equal scores by docid descending.
        ranked = sorted(sorted(scores, reverse=True), key=lambda d: -scores[d])[:100]
        out.writelines(f"{qid} Q0 {d} {r} {scores[d]!r} naive\\n" for r, d in enumerate(ranked, start=1))
"""

# Imports and numba's compilation of the fusion kernels (a fuse of two tiny runs) stay outside the timing.
RANX_SETUP = """
from ranx import Run, fuse
fuse([Run({"q": {"a": 2.0, "b": 1.0}}), Run({"q": {"b": 2.0, "c": 1.0}})], method="rrf", params={"k": 60})
"""
RANX = """
runs = [Run.from_file(p, kind="trec") for p in sys.argv[1:-1]]
fused = fuse(runs, method="rrf", params={"k": 60})
fused.save(sys.argv[-1], kind="trec")
"""


def generate(
    directory: Path, queries: int, seed: int = 0, *, runs: int = RUNS, hits: int = DOCS
) -> list[str]:
    """`runs` runs of `hits` docs per query drawn from a per-query pool of 300, so that lists overlap
    (as query variants do); scores strictly descending."""
    rng = random.Random(seed)
    paths = []
    for r in range(runs):
        path = directory / f"run{r}.trec"
        with path.open("w") as f:
            for q in range(queries):
                docs = rng.sample(range(300), hits)
                f.writelines(
                    f"q{q} Q0 doc{q}_{d} {i + 1} {100.0 - i * 0.5} run{r}\n" for i, d in enumerate(docs)
                )
        paths.append(str(path))
    return paths


SETUP = {"fanfuse": FANFUSE_SETUP, "naive python": "", "ranx": RANX_SETUP}


def run_engine(body: str, inputs: list[str], output: str, setup: str = "") -> dict[str, float]:
    # Every repeat writes a new file, like the first: replacing the last output costs a 30 MB unlink.
    Path(output).unlink(missing_ok=True)
    started = time.perf_counter()
    result = subprocess.run(
        [sys.executable, "-c", CHILD.format(setup=setup, body=body), *inputs, output],
        capture_output=True,
        text=True,
        check=False,
    )
    if result.returncode != 0:
        raise RuntimeError(result.stderr[-2000:])
    measured: dict[str, float] = json.loads(result.stdout.strip().splitlines()[-1])
    measured["process_seconds"] = time.perf_counter() - started
    return measured


def summary(runs: list[dict[str, float]]) -> dict[str, float]:
    """Per measure, the minimum and median over repeated runs (peak RSS: the maximum)."""
    out = {}
    for key in runs[0]:
        values = sorted(r[key] for r in runs)
        out[key] = values[-1] if key == "rss_mb" else values[0]
        out[key + "_median"] = statistics.median(values)
    return out


def have_ranx() -> bool:
    return (
        subprocess.run([sys.executable, "-c", "import ranx"], capture_output=True, check=False).returncode
        == 0
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sizes", default="10000,100000", help="query counts (add 1000000 for the 1M run)")
    parser.add_argument("--ranx-max", type=int, default=10_000, help="largest size ranx is run at")
    parser.add_argument(
        "--naive-max", type=int, default=100_000, help="largest size the naive fuser is run at"
    )
    parser.add_argument("--repeat", type=int, default=1, help="runs per engine (min and median reported)")
    parser.add_argument(
        "--engines", default="fanfuse,naive python,ranx", help="comma-separated subset of the engines"
    )
    args = parser.parse_args()
    chosen = set(args.engines.split(","))
    print(f"machine: {machine(*versions('ranx', 'numba'))}")
    ranx = have_ranx()
    rows = []
    for size in [int(s) for s in args.sizes.split(",")]:
        with tempfile.TemporaryDirectory() as tmp:
            started = time.perf_counter()
            inputs = generate(Path(tmp), size)
            lines = RUNS * DOCS * size
            mb = sum(Path(p).stat().st_size for p in inputs) / 1e6
            print(
                f"\n{size} queries: {lines} input lines, {mb:.0f} MB "
                f"(generated in {time.perf_counter() - started:.0f}s)"
            )
            engines = [("fanfuse", FANFUSE)]
            if size <= args.naive_max:
                engines.append(("naive python", NAIVE))
            if ranx and size <= args.ranx_max:
                engines.append(("ranx", RANX))
            results = {}
            for name, body in [e for e in engines if e[0] in chosen]:
                output = str(Path(tmp) / f"{name}.out")
                runs = [run_engine(body, inputs, output, SETUP[name]) for _ in range(args.repeat)]
                results[name] = r = summary(runs)
                print(
                    f"  {name:<13} fuse {r['seconds']:7.2f} s wall (median {r['seconds_median']:.2f}) "
                    f"{r['cpu']:7.2f} s cpu (median {r['cpu_median']:.2f})  "
                    f"{lines / r['seconds'] / 1e6:5.2f} M lines/s | "
                    f"process {r['process_seconds']:7.2f} s wall "
                    f"{r['process_cpu']:7.2f} s cpu  peak {r['rss_mb']:5.0f} MB"
                )
            for name in results:
                if name != "fanfuse" and "fanfuse" in results:
                    ours, theirs = results["fanfuse"], results[name]
                    print(
                        f"  fanfuse vs {name}: "
                        f"fuse {theirs['seconds'] / ours['seconds']:.1f}x less wall time, "
                        f"{theirs['cpu'] / ours['cpu']:.1f}x less CPU time (medians: "
                        f"{theirs['seconds_median'] / ours['seconds_median']:.1f}x, "
                        f"{theirs['cpu_median'] / ours['cpu_median']:.1f}x) | process "
                        f"{theirs['process_seconds'] / ours['process_seconds']:.1f}x wall, "
                        f"{theirs['process_cpu'] / ours['process_cpu']:.1f}x CPU"
                    )
            rows.append((size, results))
    if not ranx:
        print("\nranx is not installed (pip install ranx); its column was skipped")


if __name__ == "__main__":
    main()
