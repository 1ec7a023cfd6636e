"""Fusion and evaluation of runs on Dask: for runs beyond one machine, or kept on a cluster.

``fuse_runs(runs, ...)`` takes run files (TREC, plain or gzip; Parquet) or Dask DataFrames (columns
qid, docid, score and/or rank) and returns a lazy Dask DataFrame of the fused run (qid, docid, rank,
score). The runs are shuffled on qid, so that each query's lists meet in one partition, and each
partition is fused by ONE call into the Rust core, the same reader, checks and fusion as
``fanfuse fuse``: every query equals the one-process result (ids, scores bit for bit, order). The
command ``fanfuse fuse --engine dask`` also writes the queries in the one-process order, so the file
is the same (docs/distributed.md). Run files must be readable by the workers (a shared file system).

Needs the ``dask`` extra: ``pip install 'fanfuse[dask]'``.
"""

from __future__ import annotations

try:
    import dask.dataframe as dd
    import pandas as pd
    import pyarrow  # noqa: F401  (the rows are Arrow strings)
    from dask.delayed import delayed
except ImportError as error:  # pragma: no cover - exercised in a process without the extra
    raise ImportError(
        f"fanfuse.dask needs the dask extra ({error.name} is missing): pip install 'fanfuse[dask]'"
    ) from error

from collections.abc import Sequence
from typing import Any

from fanfuse._core import FusionError
from fanfuse.dask.kernel import FUSED_COLUMNS, RUN_COLUMNS, RunKind, fuse_partition, text_to_columns
from fanfuse.dask.order import SUMMARY_COLUMNS, block_summary, group_starts
from fanfuse.dask.rows import (
    COLUMNS,
    DEFAULT_BLOCK_BYTES,
    NUMBER_COLUMNS,
    Block,
    block_rows,
    file_blocks,
    frame_rows,
    table_columns,
)
from fanfuse.limits import check_int
from fanfuse.tables import is_parquet

__all__ = ["DEFAULT_BLOCK_BYTES", "fuse_runs", "read_rows", "shuffle_partitions"]

RunInput = str | dd.DataFrame


def _meta(columns: dict[str, Any]) -> pd.DataFrame:
    return pd.DataFrame({name: pd.Series([], dtype=dtype) for name, dtype in columns.items()})


def read_rows(
    runs: Sequence[RunInput], *, block_bytes: int = DEFAULT_BLOCK_BYTES
) -> tuple[dd.DataFrame, list[Block], list[RunKind]]:
    """The runs as one Dask DataFrame of rows (``fanfuse.dask.rows``), one partition per block of a
    file or partition of a table; the blocks (for error messages) and what each run is."""
    if isinstance(runs, (str, dd.DataFrame)) or not runs:
        raise TypeError("runs must be a non-empty list of run file paths or Dask DataFrames")
    if not isinstance(block_bytes, int) or isinstance(block_bytes, bool) or block_bytes < 1:
        raise FusionError(f"block_bytes must be an int >= 1 (got {block_bytes!r})")
    blocks: list[Block] = []
    kinds: list[RunKind] = []
    parts = []
    for run, given in enumerate(runs):
        first = len(blocks)
        if isinstance(given, str) and is_parquet(given):
            table: dd.DataFrame | None = dd.read_parquet(given)
            label = given
        elif isinstance(given, dd.DataFrame):
            table, label = given, f"runs[{run}]"
        elif isinstance(given, str):
            table, label = None, given
        else:
            raise TypeError(
                f"runs[{run}] must be a path (str) or a Dask DataFrame, not {type(given).__name__}"
            )
        if table is None:
            mine = [Block(run, b.path, b.start, b.end) for b in file_blocks([label], block_bytes)]
            blocks += mine
            kinds.append(None)
            parts.append(
                dd.from_map(
                    block_rows, mine, range(first, len(blocks)), meta=_meta(COLUMNS), enforce_metadata=False
                )
            )
        else:
            names = table_columns(list(table.columns), label)
            kinds.append(tuple(c for c in NUMBER_COLUMNS if c in names))
            blocks += [Block(run, label, p, p, in_frame=True) for p in range(table.npartitions)]
            parts.append(table.map_partitions(_frame_partition, run, first, label, meta=_meta(COLUMNS)))
    return dd.concat(parts), blocks, kinds


def _frame_partition(
    partition: pd.DataFrame, run: int, first: int, label: str, partition_info: dict[str, Any] | None = None
) -> pd.DataFrame:
    number = partition_info["number"] if partition_info else 0
    return frame_rows(partition, run, first + number, label)


def shuffle_partitions(partitions: object, rows: dd.DataFrame) -> int:
    """The partitions of the shuffle on qid: one per input block by default. A number given must not
    exceed the queries: a partition past them would be empty, yet each costs tasks and memory of its
    own. The queries are counted (one more read of the input) only when it exceeds the blocks."""
    if partitions is None:
        return int(rows.npartitions)
    wanted = check_int("partitions", partitions)
    if wanted > rows.npartitions:
        queries = int(rows[rows["group"] >= 0]["qid"].nunique().compute())
        if wanted > queries:
            raise FusionError(
                f"partitions must be at most the number of queries, {queries} (got {wanted}): "
                "each partition holds whole queries"
            )
    return wanted


def fused_queries(
    runs: Sequence[RunInput],
    *,
    partitions: int | None = None,
    block_bytes: int = DEFAULT_BLOCK_BYTES,
    **options: Any,
) -> dd.DataFrame:
    """One row per fused query: its TREC lines as ``fanfuse fuse`` writes them and its order keys
    (``fanfuse.dask.order``). ``options`` are those of ``fanfuse.fuse_files`` for TREC output."""
    rows, blocks, kinds = read_rows(runs, block_bytes=block_bytes)
    partitions = shuffle_partitions(partitions, rows)
    summary = rows.map_partitions(block_summary, meta=_meta(SUMMARY_COLUMNS))
    plan = delayed(group_starts, nout=2)(summary, len(blocks), len(runs))
    shuffled = rows.shuffle(on="qid", npartitions=partitions)
    return shuffled.map_partitions(
        fuse_partition,
        blocks,
        kinds,
        plan[0],
        plan[1],
        options,
        meta=_meta(FUSED_COLUMNS),
        enforce_metadata=False,
    )


def fuse_runs(
    runs: Sequence[RunInput],
    *,
    partitions: int | None = None,
    block_bytes: int = DEFAULT_BLOCK_BYTES,
    method: str = "rrf",
    norm: str | None = None,
    k: float = 60.0,
    weights: Sequence[float] | None = None,
    top_k: int | None = 1000,
    tie_break: str = "rank",
    rank_from: str = "score",
    threads: int | None = None,
    phi: float | None = None,
    sigma: float | None = None,
    gamma: float | None = None,
) -> dd.DataFrame:
    """Fuses runs on Dask: a lazy DataFrame with columns qid, docid, rank, score.

    ``runs``: run file paths (TREC, plain or gzip, read in blocks of ``block_bytes``; Parquet, read
    by row groups) or Dask DataFrames, tables with columns qid (or q_id), docid (or doc_id), and score
    and/or rank (their row order is the file order of ``rank_from="file"``). ``partitions``:
    partitions of the shuffle on qid (default: as many as input blocks). The other options are
    those of ``fanfuse.fuse_files`` (``phi``, ``sigma``, ``gamma``: None keeps the core's default).
    Each query is the one-process result, hits in written order; queries in a partition in order of
    first appearance.
    A malformed line fails the computation with a FusionError naming the file and line (or the run,
    partition and row of a frame).
    """
    options = {
        "method": method,
        "norm": norm,
        "k": k,
        "weights": weights,
        "top_k": top_k,
        "tie_break": tie_break,
        "rank_from": rank_from,
        "threads": threads,
    }
    given = {"phi": phi, "sigma": sigma, "gamma": gamma}
    options.update({name: value for name, value in given.items() if value is not None})
    fused = fused_queries(runs, partitions=partitions, block_bytes=block_bytes, **options)
    return fused.map_partitions(text_to_columns, meta=_meta(RUN_COLUMNS), enforce_metadata=False)
