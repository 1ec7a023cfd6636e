"""What searching a private copy of an index costs (`TantivyRetriever(DIR, private_copy=True)`, what
`fanfuse serve` opens): the copy and its checksum test at open, and a search on the copy against one
on the files in place, interleaved in one process.

    .venv/bin/python benches/index_copy_cost.py                      # MT-RAG's cloud pool, if present
    .venv/bin/python benches/index_copy_cost.py --corpus C.jsonl.gz --id-field document_id --vectors 100000

`--vectors N` adds N x 384 float32 vectors to the version (as `fanfuse index --dense` stores them),
so the copy's cost per megabyte is seen on a bigger directory as well.
"""

from __future__ import annotations

import argparse
import gc
import json
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np
from fanfuse.corpus import Fields, read_jsonl
from fanfuse.retrievers.tantivy_index import TantivyRetriever
from measuring import load_averages

DEFAULT_CORPUS = Path(__file__).resolve().parents[1].parent / "shared/data/mtrag/passages/cloud_pool.jsonl.gz"
QUERIES = [
    "how do I rotate the logs",
    "partitioned database query",
    "delete a kubernetes cluster",
    "api key permissions",
    "backup and restore",
    "what is the rate limit",
    "configure a private endpoint",
    "upgrade the worker nodes",
]


def megabytes(directory: Path) -> float:
    return sum(p.stat().st_size for p in directory.rglob("*") if p.is_file()) / 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS)
    parser.add_argument("--id-field", default="document_id")
    parser.add_argument("--vectors", type=int, default=0, help="N x 384 float32 vectors beside the index")
    parser.add_argument("--opens", type=int, default=7)
    parser.add_argument("--rounds", type=int, default=30, help="passes over the queries, each copy and not")
    args = parser.parse_args()
    load_before = load_averages()[0]

    with tempfile.TemporaryDirectory() as scratch:
        index = TantivyRetriever.build(
            read_jsonl(args.corpus, Fields(id=args.id_field)), Path(scratch) / "idx"
        )
        if args.vectors:
            dense = index.data_directory / "dense"
            dense.mkdir()
            vectors = np.random.default_rng(0).standard_normal((args.vectors, 384), dtype=np.float32)
            np.save(dense / "vectors.npy", vectors)
        size = megabytes(index.data_directory)
        opens: dict[bool, list[float]] = {False: [], True: []}
        for _ in range(args.opens):
            for copy in (False, True):
                gc.collect()
                start = time.perf_counter()
                opened = TantivyRetriever(index.directory, private_copy=copy)
                opens[copy].append(time.perf_counter() - start)
                del opened
        in_place = TantivyRetriever(index.directory)
        copied = TantivyRetriever(index.directory, private_copy=True)
        searches: dict[bool, list[float]] = {False: [], True: []}
        for _ in range(args.rounds):
            for query in QUERIES:
                for copy, retriever in ((False, in_place), (True, copied)):
                    start = time.perf_counter()
                    retriever.search(query, 20)
                    searches[copy].append(time.perf_counter() - start)
        pairs = [c / p for p, c in zip(searches[False], searches[True], strict=True)]
        open_ms = {copy: statistics.median(times) * 1e3 for copy, times in opens.items()}
        report = {
            "corpus": str(args.corpus),
            "documents": len(index),
            "version MB": round(size, 1),
            "open in place, median ms": round(open_ms[False], 1),
            "open with a private copy, median ms": round(open_ms[True], 1),
            "copy and check, MB/s": round(size / (open_ms[True] - open_ms[False]) * 1e3),
            "search in place, median ms": round(statistics.median(searches[False]) * 1e3, 3),
            "search on the copy, median ms": round(statistics.median(searches[True]) * 1e3, 3),
            "per search, copy / in place, median of pairs": round(statistics.median(pairs), 3),
            "1-minute load average before / after": [load_before, load_averages()[0]],
        }
        print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
