"""The entry points of the package's own layers, not its API (their signatures follow those layers):
the distributed engine's (``fanfuse.dask``; docs/distributed.md), runs as Arrow rows, read by block,
fused where a query's rows meet, and the fused text written in order; the handles of the output
guard and the line reader; and the benches' timer of the bare kernel."""

from collections.abc import Iterable, Sequence
from typing import Literal, Self, Unpack, final

from fanfuse._core import ArrowBatch, Run, _IdList, _RrfKeywords, _RunFusionKeywords
from fanfuse.choices import RankFrom
from fanfuse.options import FusionOptions

__all__ = [
    "_Lines",
    "_Output",
    "_StagedDirectory",
    "_check_paths",
    "_kernel_seconds",
    "_retire_directory",
    "_sync_directory",
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
    rank_from: RankFrom = "score",
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
    rank_from: RankFrom = "score",
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
    rank_from: RankFrom = "score",
) -> tuple[Run, list[int]]:
    """The rows of one run (``name`` in errors) as a Run, as ``read_run`` reads the whole run, and
    each query's first group in the run (the order of the queries in the whole run)."""

def write_run_text(output: str, chunks: Iterable[object], /, *, inputs: Sequence[str] | None = None) -> int:
    """Writes the ``text`` column of each chunk (tables with ``qid`` and ``text``: ``fuse_rows(format=
    "trec")``) into ``output``, in order, atomically as ``fuse_files`` writes (``inputs``: files the
    output must not be). Returns the number of rows (queries)."""

# The handles of the output guard and the line reader (rust/output/, docs/run-files.md "Output
# paths"); their faces are ``fanfuse.output_guard`` and ``fanfuse.corpus``. Paths are str; a refused
# output raises InvalidOutput, a bad line FusionError (which the corpus reader raises as its own class).

@final
class _Output:
    """A file being written (``fanfuse.output_guard.OutputFile``), until ``commit`` or ``discard``."""

    def __new__(cls, path: str, inputs: list[str], /) -> Self: ...
    def is_stdout(self) -> bool: ...
    def fileno(self) -> int:
        """A descriptor of the output of its own, which the caller closes."""
    def commit(self) -> None: ...
    def discard(self) -> None:
        """Removes the temporary: the previous file stays."""

@final
class _StagedDirectory:
    """A folder being staged (``fanfuse.output_guard.StagedDirectory``), removed at ``discard``
    unless published."""

    def __new__(cls, target: str, /) -> Self: ...
    @property
    def path(self) -> str: ...
    @property
    def published(self) -> bool: ...
    def publish(self, target: str, /) -> None: ...
    def discard(self) -> None: ...

def _retire_directory(path: str, /) -> None: ...
def _sync_directory(path: str, /) -> None: ...
def _check_paths(
    outputs: list[tuple[str, str]],
    output_directories: list[tuple[str, str]],
    inputs: list[tuple[str, str]],
    /,
) -> None: ...

@final
class _Lines:
    """The numbered lines of a plain or gzip text file, ``(line_number, line)`` without the line
    end, read by the run readers' rules (UTF-8, a UTF-8 byte-order mark at the start skipped, lines
    end at ``\\n``, at most ``READER_LIMITS["line"]`` bytes each); a bad line raises FusionError
    naming ``file:line``."""

    def __new__(cls, path: str, /) -> Self: ...
    def __iter__(self) -> Self: ...
    def __next__(self) -> tuple[int, str]: ...

def _kernel_seconds(
    queries: Iterable[Iterable[_IdList]],
    /,
    *,
    options: FusionOptions | None = None,
    repeat: int = 1,
    **kwargs: Unpack[_RrfKeywords],
) -> float:
    """Seconds the bare kernel takes for the batch on one thread (benchmarks only, not public API).

    No copying out of Python and no result objects: 64 queries are copied at a time, as in
    ``rrf_batch``, then the kernel is timed on them (best of ``repeat``) and the chunks are summed.
    """
