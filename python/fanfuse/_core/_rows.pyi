"""The internal entry points of the distributed engine (``fanfuse.dask``; docs/distributed.md): runs
as Arrow rows, read by block, fused where a query's rows meet, and the fused text written in order.
Not public: their signatures follow the engine."""

from collections.abc import Iterable, Sequence
from typing import Literal, Unpack

from fanfuse._core import ArrowBatch, Run, _RankFrom, _RunFusionKeywords
from fanfuse.options import FusionOptions

__all__ = [
    "file_blocks",
    "fuse_rows",
    "read_run_block",
    "read_table_block",
    "run_from_rows",
    "write_run_text",
]

_BlockSummary = tuple[int, int, int, str | None, str | None]

def file_blocks(path: str, /, *, block_bytes: int) -> list[tuple[int, int]]:
    """Byte ranges ``(start, end)`` of about ``block_bytes`` each that cover a run file, for
    ``read_run_block``: one range for a gzip file (it cannot be split) and for an empty one."""

def read_run_block(
    path: str, /, *, run: int = 0, start: int = 0, end: int = ..., partitions: int = 1
) -> tuple[_BlockSummary, list[ArrowBatch]]:
    """Reads the lines of a TREC or MT-RAG run file that start in bytes ``[start, end)`` (default: to
    the end; a gzip file whole) with the reader of ``read_run``: the same formats, checks and
    messages, naming the line in the whole file. Returns the block's summary (``run``, its lines,
    its groups of consecutive lines of one query, its first and last query id) and ``partitions``
    row batches: rows of query q go to batch ``hash(q) % partitions``, the same in every process.
    ``partitions`` is at most 100,000; the partitions that receive no rows share one empty batch
    object, so that memory follows the rows, not the partitions. A row is one hit: qid, docid,
    score, rank, line and group (both counted in the block); an MT-RAG record without contexts is
    one row with an empty docid."""

def read_table_block(
    table: object,
    /,
    *,
    run: int = 0,
    name: str = "table",
    first_row: int = 0,
    rank_from: _RankFrom | str = "score",
    partitions: int = 1,
) -> tuple[_BlockSummary, list[ArrowBatch]]:
    """``read_run_block`` for a run table (or a part of one: rows are numbered after ``first_row``),
    read with the column rules and checks of ``runs_from_table`` (one run; no run column)."""

def fuse_rows(
    rows: Sequence[object],
    /,
    *,
    blocks: Sequence[_BlockSummary],
    names: Sequence[str],
    ranges: int = 1,
    format: Literal["trec"] | None = None,
    tag: str = "fanfuse",
    rank_from: _RankFrom | str = "score",
    threads: int | None = None,
    options: FusionOptions | None = None,
    **kwargs: Unpack[_RunFusionKeywords],
) -> list[ArrowBatch]:
    """Fuses every query of ``rows`` (one row batch per block of ``blocks``, in the same order; every
    row of a query there) as ``fuse_files`` fuses it. ``format=None``: one row per fused hit (qid,
    docid, rank, score); ``"trec"``: one row per query (qid, text: its lines as ``fuse_files`` writes
    them, with its checks and messages). Each row also has ``order``: ``fuse_files`` writes query A
    before B exactly when A's order is smaller (docs/run-files.md, "Order of a fused run"). The
    result is ``ranges`` batches (at most 100,000, like ``partitions``), batch k holding the k-th of equal
    ranges of the order, in order.
    The options are those of ``fuse_files``."""

def run_from_rows(
    rows: Sequence[object],
    /,
    *,
    blocks: Sequence[_BlockSummary],
    name: str,
    rank_from: _RankFrom | str = "score",
) -> tuple[Run, list[int]]:
    """The rows of one run (``name`` in errors) as a Run, as ``read_run`` reads the whole run, and
    each query's first group in the run (the order of the queries in the whole run)."""

def write_run_text(output: str, chunks: Iterable[object], /, *, inputs: Sequence[str] | None = None) -> int:
    """Writes the ``text`` column of each chunk (tables with ``qid`` and ``text``: ``fuse_rows(format=
    "trec")``) into ``output``, in order, atomically as ``fuse_files`` writes (``inputs``: files the
    output must not be). Returns the number of rows (queries)."""
