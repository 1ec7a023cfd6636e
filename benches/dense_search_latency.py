"""Query latency of exact dense search over stored, memory-mapped vectors, by corpus size: where an
approximate (ANN) index would take over.

    .venv/bin/python benches/dense_search_latency.py                         # 10k, 100k, 1M x 384
    .venv/bin/python benches/dense_search_latency.py --sizes 10000,100000 --dimensions 768

Random unit vectors (the cost of exact search does not depend on the values) are written as the
`.npy` file `open_dense` maps, and searched through `DenseRetriever` exactly as a stored index is:
the timed part is the search alone (the query vector is fixed), best of `--repeat` warm queries and
their median. With `fanfuse[embed]` it also times embedding one short query with the default model.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import numpy.typing as npt
from fanfuse.retrievers.dense import DenseRetriever, unit_rows
from measuring import load_text


def timed_search(retriever: DenseRetriever, repeat: int) -> list[float]:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        retriever.search("query", 10)
        times.append(time.perf_counter() - start)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10000,100000,1000000")
    parser.add_argument("--dimensions", type=int, default=384)
    parser.add_argument("--repeat", type=int, default=20)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    query = unit_rows(rng.normal(size=(1, args.dimensions)).astype(np.float32))

    def fixed_query(texts: Sequence[str]) -> npt.NDArray[np.float32]:
        return np.repeat(query, len(texts), axis=0)

    print(f"exact search, {args.dimensions} dimensions, k=10; {load_text()}")
    print("| vectors | file MB | open ms | best ms/query | median ms/query |")
    print("|---:|---:|---:|---:|---:|")
    with tempfile.TemporaryDirectory() as scratch:
        for size in (int(s) for s in args.sizes.split(",")):
            path = Path(scratch) / f"vectors-{size}.npy"
            vectors = np.lib.format.open_memmap(path, "w+", np.float32, (size, args.dimensions))
            for start in range(0, size, 100_000):  # in slices: a 1M x 768 float64 draw is 6 GB
                block = rng.normal(size=(min(100_000, size - start), args.dimensions)).astype(np.float32)
                vectors[start : start + len(block)] = unit_rows(block)
            vectors.flush()
            del vectors
            ids = [f"d{i}" for i in range(size)]
            start = time.perf_counter()
            mapped = np.load(path, mmap_mode="r")
            retriever = DenseRetriever(fixed_query, ids, mapped, normalized=True)
            opened = time.perf_counter() - start
            timed_search(retriever, 2)  # warm the page cache
            times = timed_search(retriever, args.repeat)
            print(
                f"| {size:,} | {path.stat().st_size / 1e6:.0f} | {opened * 1e3:.0f} | {min(times) * 1e3:.1f} "
                f"| {statistics.median(times) * 1e3:.1f} |"
            )
            del retriever, mapped
            path.unlink()
    embed_query_latency(args.repeat)


def embed_query_latency(repeat: int) -> None:
    from fanfuse.retrievers.default_encoder import default_encoder, embed_extra_installed

    if not embed_extra_installed():
        return
    for threads in (1, None):
        encoder = default_encoder(threads=threads)
        encoder.embed_queries(["warm up"])
        times = []
        for _ in range(repeat):
            start = time.perf_counter()
            encoder.embed_queries(["how do I split a file path into directory and name"])
            times.append(time.perf_counter() - start)
        print(
            f"embedding one query with the default model ({threads or 'all'} threads): best "
            f"{min(times) * 1e3:.1f} ms, median {statistics.median(times) * 1e3:.1f} ms"
        )


if __name__ == "__main__":
    main()
