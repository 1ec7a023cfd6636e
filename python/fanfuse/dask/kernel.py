"""What runs in a Dask task: each step is one call into the Rust core, on Arrow batches.

- ``read_block``: one block of a run (a byte range of a TREC or MT-RAG file, a row group of a Parquet
  file, a partition of a Dask DataFrame) read by the core's reader into row batches, one per
  partition of the shuffle on qid (``fanfuse._core._internal.read_run_block`` / ``read_table_block``).
- ``fuse_partition``: the rows of every block for one partition's queries, fused by the core
  (``fuse_rows``): every query as ``fanfuse fuse`` fuses it, keyed by its place in the file that
  ``fanfuse fuse`` writes.
- ``evaluate_partition``: one run's rows of a partition as a Run (``run_from_rows``), evaluated.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from fanfuse._core import Qrels, evaluate
from fanfuse._core._internal import fuse_rows, read_run_block, read_table_block, run_from_rows
from fanfuse.choices import RankFrom
from fanfuse.tables import parquet_read, read_any_qrels

# A block's summary, as the core's readers give it: (run, lines, groups, first qid, last qid).
Summary = tuple[int, int, int, str | None, str | None]


@dataclass(frozen=True)
class Block:
    """One part of one run, read by one task. ``kind`` says what ``path`` and ``part`` are: ``file``,
    bytes ``[part, end)`` of a run file; ``parquet``, row group ``part`` of a Parquet file (``end``:
    the rows before it); ``frame``, partition ``part`` of a Dask DataFrame (its data comes with the
    task)."""

    run: int
    kind: str
    path: str
    part: int
    end: int = 0


def read_block(
    block: Block, partitions: int, rank_from: RankFrom, frame: Any = None
) -> tuple[Summary, list[pa.RecordBatch]]:
    """The block's rows, one batch per partition, and its summary."""
    if block.kind == "file":
        summary, batches = read_run_block(
            block.path, run=block.run, start=block.part, end=block.end, partitions=partitions
        )
    else:
        if block.kind == "parquet":
            with parquet_read(block.path):  # the file may have changed since the plan read it
                table = pq.ParquetFile(block.path).read_row_group(block.part)
            name, first_row = block.path, block.end
        else:
            table = pa.Table.from_pandas(frame, preserve_index=False)
            name, first_row = f"{block.path} partition {block.part}", 0
        summary, batches = read_table_block(
            table, run=block.run, name=name, first_row=first_row, rank_from=rank_from, partitions=partitions
        )
    return summary, _record_batches(batches)


def _record_batches(batches: Sequence[Any]) -> list[pa.RecordBatch]:
    """The core's batches as pyarrow's. The partitions that received no rows share one empty batch
    object, converted once: a block costs its rows, not a batch per partition."""
    converted: dict[int, pa.RecordBatch] = {}
    out = []
    for batch in batches:
        if id(batch) not in converted:
            converted[id(batch)] = pa.record_batch(batch)
        out.append(converted[id(batch)])
    return out


def query_ids(rows: pa.RecordBatch) -> pa.Array:
    """The distinct query ids of a block's rows."""
    return pc.unique(rows.column("qid").cast(pa.large_string()))


def count_queries(ids: Sequence[pa.Array]) -> int:
    """How many distinct query ids the blocks hold together."""
    return len(pc.unique(pa.chunked_array(list(ids), pa.large_string())))


def fuse_partition(
    rows: Sequence[pa.RecordBatch],
    summaries: Sequence[Summary],
    names: Sequence[str],
    ranges: int,
    options: dict[str, Any],
) -> list[pa.RecordBatch]:
    """One partition's queries fused: ``ranges`` batches by range of the order key (see ``fuse_rows``)."""
    fused = fuse_rows(list(rows), blocks=list(summaries), names=list(names), ranges=ranges, **options)
    return [pa.record_batch(batch) for batch in fused]


@functools.lru_cache(maxsize=4)
def _qrels(path: str, mtime_ns: int, size: int) -> Qrels:
    """The qrels file, read once per worker process (and again when it changes)."""
    return read_any_qrels(path)


def evaluate_partition(
    rows: Sequence[pa.RecordBatch],
    summaries: Sequence[Summary],
    name: str,
    qrels: str | Qrels,
    metrics: Sequence[str],
    rank_from: RankFrom,
) -> list[tuple[int, str, list[float]]]:
    """Per query of one run's rows of a partition: its first group in the run (the order in which
    one process averages the queries), its id and its value of each metric. `qrels`: a file's path,
    read once per worker, or judgments the driver read (from a pipe)."""
    if isinstance(qrels, str):
        stat = os.stat(qrels)
        qrels = _qrels(qrels, stat.st_mtime_ns, stat.st_size)
    run, firsts = run_from_rows(list(rows), blocks=list(summaries), name=name, rank_from=rank_from)
    first_of = dict(zip(run.qids(), firsts, strict=True))
    qids, values = evaluate(run, qrels, metrics=list(metrics))
    return [(first_of[q], q, [values[m][i] for m in metrics]) for i, q in enumerate(qids)]
