"""The MT-RAG passage pools as fanfuse indexes, built once and kept for the next run.

A pool's index lives in `CACHE_DIR/<domain>-<first 16 hex of the pool file's sha256>`: a changed pool
file is a new directory, so a stale index is never read. The neural vectors (the default MiniLM
encoder, `fanfuse[embed]`) are stored inside the index by `neural_dense_for_index` the first time they
are asked for, as `fanfuse index --dense` stores them.
"""

from __future__ import annotations

import hashlib
import sys
import time
from pathlib import Path

from fanfuse.corpus import Fields, read_jsonl
from fanfuse.retrievers.dense import DenseRetriever
from fanfuse.retrievers.index_versions import MANIFEST
from fanfuse.retrievers.tantivy_index import TantivyRetriever

CACHE_DIR = Path(__file__).resolve().parents[1] / ".cache" / "mtrag-indexes"


def pool_path(data: Path, domain: str) -> Path:
    return data / "passages" / f"{domain}_pool.jsonl.gz"


def pool_index(data: Path, domain: str, cache: Path = CACHE_DIR) -> TantivyRetriever:
    """The BM25 index of the domain's passage pool, from the cache or built into it now."""
    pool = pool_path(data, domain)
    digest = hashlib.sha256(pool.read_bytes()).hexdigest()[:16]
    directory = cache / f"{domain}-{digest}"
    if (directory / MANIFEST).is_file():
        return TantivyRetriever(directory)
    started = time.perf_counter()
    index = TantivyRetriever.build(read_jsonl(pool, Fields(id="document_id")), directory)
    print(
        f"{domain}: {len(index)} passages indexed in {time.perf_counter() - started:.1f} s", file=sys.stderr
    )
    return index


def neural_dense(index: TantivyRetriever) -> tuple[DenseRetriever, float | None]:
    """The default encoder's retriever over the index; the seconds spent embedding, None if cached."""
    from fanfuse.retrievers.dense_cache import neural_dense_for_index

    started = time.perf_counter()
    dense, embedded_now = neural_dense_for_index(index)
    seconds = time.perf_counter() - started if embedded_now else None
    if seconds is not None:
        print(
            f"{index.directory.name}: {len(dense.ids)} passages embedded in {seconds:.0f} s", file=sys.stderr
        )
    return dense, seconds


if __name__ == "__main__":  # warm the cache: `python benches/mtrag_indexes.py [DATA]`
    folder = (
        Path(sys.argv[1])
        if len(sys.argv) > 1
        else Path(__file__).resolve().parents[2] / "shared" / "data" / "mtrag"
    )
    for name in ("clapnq", "cloud"):
        neural_dense(pool_index(folder, name))
