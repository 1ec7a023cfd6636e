"""CPU per search in process: the default search of `fanfuse.open_index` against the question alone
on the same retrievers (`variants=1`), over the MT-RAG ClapNQ pool with its neural vectors.

Each mode has its own `open_index` (its own query-vector cache), and every query is asked once per
mode, so every question is unseen: each search embeds what it searches. The modes alternate query by
query (A/B in one process), and the table gives the process CPU time per search (every thread: the
encoder's, the retrievers', the caller's), its median wall time, and the ratio default / single.

    .venv/bin/python benches/profile_search.py                      # the ratio, 200 queries
    FANFUSE_ENCODER_THREADS=1 .venv/bin/python benches/profile_search.py --only default \
        --profile /tmp/default.json                                # where the CPU goes (yappi)

`--only MODE` runs one mode; `--profile PATH` profiles its searches with yappi (`pip install yappi`)
on the CPU clock of every thread and writes the stats there for `benches/profile_table.py`. One
encoder thread keeps the model's work on the Python thread that calls it, where the profiler sees
it. `--index DIR` searches an index built by `fanfuse index --dense` instead of the cached MT-RAG
pool (benches/mtrag_indexes.py).
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import fanfuse
from measuring import machine, versions
from mtrag_indexes import neural_dense, pool_index

DEFAULT_DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "mtrag"
MODES: dict[str, dict[str, Any]] = {"default": {}, "single": {"max_variants": 1}}
CPU_KEY = "process CPU time of the searches"
_SPEAKER = re.compile(r"\|user\|:\s*")


def questions(path: Path, limit: int) -> list[str]:
    with path.open(encoding="utf-8") as lines:
        texts = [_SPEAKER.sub("", json.loads(line)["text"]).strip() for line in lines if line.strip()]
    return list(dict.fromkeys(t for t in texts if t))[:limit]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--index", type=Path, help="an index built by `fanfuse index --dense`")
    parser.add_argument("--query-set", default="rewrite", choices=("lastturn", "rewrite"))
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--only", choices=tuple(MODES))
    parser.add_argument("--profile", type=Path, help="with --only: yappi's stats of the searches, here")
    args = parser.parse_args()
    if args.profile is not None and args.only is None:
        parser.error("--profile profiles one mode: give --only too")
    if args.index is None:
        neural_dense(pool_index(args.data, "clapnq"))  # embeds the pool once, on the first run
        index: Any = pool_index(args.data, "clapnq")
    else:
        index = str(args.index)
    texts = questions(args.data / "queries" / "clapnq" / f"clapnq_{args.query_set}.jsonl", args.queries)
    modes = [args.only] if args.only else list(MODES)
    searchers = {mode: fanfuse.open_index(index) for mode in modes}
    for mode in modes:  # warm-up: the model, the index pages, the threads
        searchers[mode].search("what is the warm up question", **MODES[mode])
    if args.profile is not None:
        import yappi

        yappi.set_clock_type("cpu")
        yappi.start(profile_threads=True)
    cpu: dict[str, list[float]] = {m: [] for m in modes}
    wall: dict[str, list[float]] = {m: [] for m in modes}
    for text in texts:
        for mode in modes:
            c0, w0 = time.process_time(), time.perf_counter()
            searchers[mode].search(text, **MODES[mode])
            cpu[mode].append((time.process_time() - c0) * 1e3)
            wall[mode].append((time.perf_counter() - w0) * 1e3)
    if args.profile is not None:
        yappi.stop()
        # Seconds of CPU inside each function, callees included, by "file:Class.function".
        inside: dict[str, float] = {}
        for stat in yappi.get_func_stats():
            key = f"{Path(stat.module).name}:{stat.name}"
            inside[key] = inside.get(key, 0.0) + stat.ttot
        # The searches' process CPU time (every thread), beside which the functions' times are read.
        inside[CPU_KEY] = sum(cpu[args.only]) / 1e3
        args.profile.write_text(json.dumps(inside), encoding="utf-8")
    described = machine(*versions("onnxruntime", "tantivy"))
    print(f"{len(texts)} ClapNQ {args.query_set} questions; machine: {described}")
    print("| search | CPU ms / search (mean) | wall ms (p50) |\n|---|---:|---:|")
    for mode in modes:
        print(f"| {mode} | {statistics.fmean(cpu[mode]):.1f} | {statistics.median(wall[mode]):.1f} |")
    if len(modes) == 2:
        ratio = statistics.fmean(cpu["default"]) / statistics.fmean(cpu["single"])
        print(f"\ndefault / single, CPU per search: {ratio:.2f}x")
    for searcher in searchers.values():
        searcher.close()


if __name__ == "__main__":
    sys.exit(main())
