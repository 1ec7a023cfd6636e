"""Runs as Arrow tables, Parquet files and pandas frames: fusion and evaluation of tables, Parquet runs
for the CLI, a run to and from a data frame (``to_pandas``, ``from_frame``).

Tables go into the Rust core through the Arrow PyCapsule protocol (``__arrow_c_stream__`` /
``__arrow_c_array__``): pyarrow Tables and RecordBatches, polars DataFrames, pandas DataFrames (through
``pyarrow.table(df)``), Dask partitions. The core reads the Arrow buffers in place, no Python object
per row. Results come back as pyarrow Tables, so pyarrow (``pip install fanfuse[arrow]``) is needed
here and is imported on first use: ``import fanfuse`` does not load it.

The column convention (docs/run-files.md, "Tables and Parquet"): ``qid`` (or ranx's ``q_id``),
``docid`` (or ``doc_id``), ``score`` and/or ``rank``, and, for several runs in one table, a run label
column named by ``run_column``. Ids may be strings or integers (read as their decimal text).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from fanfuse._core import (
    FusionError,
    Qrels,
    Run,
    evaluate,
    fuse_tables,
    qrels_from_table,
    runs_from_table,
)
from fanfuse._core._internal import read_run_block, read_table_block
from fanfuse.choices import RankFrom
from fanfuse.errors import MissingExtra
from fanfuse.limits import check_sequence
from fanfuse.options import FusionOptions

if TYPE_CHECKING:
    from typing_extensions import Unpack

    from fanfuse._core import _RunFusionKeywords

EXTRA = "arrow"
PARQUET_MAGIC = b"PAR1"


def _pyarrow() -> Any:
    try:
        import pyarrow  # type: ignore[import-untyped,import-not-found,unused-ignore]
    except ImportError:
        raise MissingExtra(
            f"Arrow tables and Parquet runs need pyarrow: pip install 'fanfuse[{EXTRA}]'", extra=EXTRA
        ) from None
    return pyarrow


# What a table argument may be, for the refusal of anything else.
TABLES = (
    "an Arrow table (an object with __arrow_c_stream__ or __arrow_c_array__: a pyarrow Table or "
    "RecordBatch, a polars DataFrame) or a pandas DataFrame"
)


def _is_pandas_frame(value: object) -> bool:
    kind = type(value)
    return kind.__name__ == "DataFrame" and kind.__module__.startswith("pandas")


def _is_table(value: object) -> bool:
    return (
        _is_pandas_frame(value) or hasattr(value, "__arrow_c_stream__") or hasattr(value, "__arrow_c_array__")
    )


def _arrow_input(table: Any, argument: str) -> Any:
    """`table` as something with the Arrow PyCapsule interface, for the core's table reader, which
    checks every value (nulls and empty ids named by row, ids that are neither text nor integers by
    column). pandas goes through pyarrow here, even where the frame exports Arrow itself, so that a
    column pyarrow cannot convert (an object column of mixed types) is refused naming `argument`."""
    if _is_pandas_frame(table):
        pa = _pyarrow()
        try:
            return pa.table(table)
        except (pa.ArrowInvalid, pa.ArrowTypeError) as error:
            reason = "; ".join(str(part) for part in error.args)
            raise TypeError(
                f"{argument}: pyarrow cannot make an Arrow table of this pandas frame ({reason}); give "
                "each column values of one type (ids str or int, scores numbers)"
            ) from None
    if _is_table(table):
        return table
    raise TypeError(f"{argument} must be {TABLES} (got {type(table).__name__})")


def to_arrow(run: Run) -> Any:
    """A run as a pyarrow Table: qid, docid (string), rank (int64, from 1), score (float64); one row
    per hit, queries in run order, hits in rank order. The Run's own Arrow batch
    (``pyarrow.record_batch(run)`` takes it through the PyCapsule protocol)."""
    pa = _pyarrow()
    return pa.Table.from_batches([pa.record_batch(run)])


def fuse_table(
    tables: Any,
    *,
    run_column: str | None = None,
    runs: Sequence[str] | None = None,
    rank_from: RankFrom = "score",
    threads: int | None = None,
    options: FusionOptions | None = None,
    **kwargs: Unpack[_RunFusionKeywords],
) -> Any:
    """Fuses runs held as Arrow tables; returns a pyarrow Table (qid, docid, rank, score).

    ``tables`` is either a sequence of tables, one run each, fused in that order; or, with
    ``run_column``, ONE table holding several runs, told apart by the label in that column (string
    or integer, compared as text), with ``runs`` the labels in fusion order (required: the order
    decides ``weights`` and the summation order of the scores, so it must not depend on the rows).
    A label not in ``runs`` is an error; a label of ``runs`` absent from the table is a run without
    queries. A table is anything with ``__arrow_c_stream__`` or ``__arrow_c_array__`` (pyarrow,
    polars) or a pandas DataFrame; its columns follow the module's convention, other columns are
    ignored. Rows of one query need not be adjacent, nor queries in the same order across runs.

    The fusion options are those of ``fanfuse.fuse_runs`` / ``fuse_files``: a ``FusionOptions``
    (``options=``) or its keywords (``top_k`` unset keeps 1000 a query); ``threads`` fuses queries
    in parallel; ``rank_from`` as in ``read_run``: ``score`` needs a score column, ``rank`` a rank
    column, ``file`` takes the row order. The result is the run ``fanfuse
    fuse`` writes for the same rows written as run files: the same queries in the same order, the
    same hits in the same order (fused score descending, ties by docid descending), bit-identical
    scores; the output rank counts from 1 per query.

    The work is one call into the core (the same as ``fanfuse fuse --engine dask`` makes for each of
    its partitions, and Spark or Ray can make for theirs: docs/distributed.md): reading the table(s),
    fusing every query (in parallel with ``threads``), building the output. Errors name the table
    (``tables[1]``, or ``table``) and the row (``tables[1]:5: column 'score' ...``).
    """
    pa = _pyarrow()  # the result is a pyarrow Table: say what is missing before any work
    if run_column is not None:
        given, names = [_arrow_input(tables, "tables")], ["table"]
    else:
        if _is_table(tables):
            raise TypeError(
                "tables must be a sequence of tables (one run each), or one table with run_column="
            )
        listed = check_sequence(tables, "tables", "tables (one run each)")
        names = [f"tables[{i}]" for i in range(len(listed))]
        given = [_arrow_input(t, name) for t, name in zip(listed, names, strict=True)]
    fused = fuse_tables(
        given,
        names=names,
        run_column=run_column,
        runs=runs,
        rank_from=rank_from,
        threads=threads,
        options=options,
        **kwargs,
    )
    return pa.Table.from_batches([pa.record_batch(fused)]).select(["qid", "docid", "rank", "score"])


def read_run_table(path: str) -> Any:
    """A run file (TREC or MT-RAG, plain or gzip; Parquet) read by the core's reader, the one of
    ``read_run`` with its checks and messages, as a pyarrow Table of its hits: qid, docid, score
    (NaN for a Parquet run without scores), rank (the rank column; an MT-RAG context's position; 0
    for a Parquet run without ranks) and line (the line, or row, of the hit: with ``rank``, the file
    order). What Spark or Ray workers read run files with before ``fuse_table`` (docs/distributed.md)."""
    pa = _pyarrow()
    if is_parquet(path):
        _, batches = read_table_block(read_parquet(path), name=path, rank_from="file")
    else:
        _, batches = read_run_block(path)
    import pyarrow.compute as pc  # type: ignore[import-untyped,import-not-found,unused-ignore]

    table = pa.Table.from_batches([pa.record_batch(b) for b in batches])
    # A row without a docid stands for an MT-RAG record without contexts: not a hit.
    hits = table.filter(pc.not_equal(table["docid"], ""))
    return hits.select(["qid", "docid", "score", "rank", "line"])


def evaluate_table(run: Any, qrels: Any, metrics: Sequence[str], *, rank_from: RankFrom = "score") -> Any:
    """Per-query metric values of a run table against a qrels table (or a ``Qrels``), as a pyarrow
    Table: a ``qid`` column, then one float64 column per metric, one row per query in both the run
    and the qrels (the mean of a column is the mean ``fanfuse eval`` prints).

    The run table follows the module's convention; it is evaluated in the order ``rank_from`` says,
    by default trec_eval's (score descending, ties by docid descending, so a score column is
    needed), else the rank column's or the rows'. The qrels table has qid, docid and an integer
    ``relevance`` (or ``score``, as ranx and BEIR name it) column.
    """
    pa = _pyarrow()
    read = runs_from_table(_arrow_input(run, "run"), name="run", rank_from=rank_from)[0]
    judged = (
        qrels if isinstance(qrels, Qrels) else qrels_from_table(_arrow_input(qrels, "qrels"), name="qrels")
    )
    # The core checks `metrics` (a str is no list of metrics); its values come in their order.
    qids, values = evaluate(read, judged, metrics=metrics)
    columns = {"qid": pa.array(qids, pa.string())}
    columns.update({m: pa.array(v, pa.float64()) for m, v in values.items()})
    return pa.table(columns)


def is_parquet(path: str | Path) -> bool:
    """Whether the file starts with Parquet's magic bytes (a renamed file works, as for gzip). A pipe is
    not asked (its bytes would be gone for the reader that follows; Parquet needs a file to seek in)."""
    if not os.path.isfile(path):
        return False
    try:
        with open(path, "rb") as file:
            return file.read(4) == PARQUET_MAGIC
    except OSError:
        return False  # the core reports the path


@contextlib.contextmanager
def parquet_read(path: str) -> Iterator[None]:
    """Around a read of the Parquet file ``path`` (whole, its metadata or a row group): a file pyarrow
    cannot read is a FusionError naming it, wherever it is read."""
    try:
        yield
    except (OSError, _pyarrow().ArrowException) as error:
        raise FusionError(f"{path}: not a readable Parquet file ({error})") from None


def refuse_no_rows(path: str, parquet: Any) -> None:
    """A Parquet run or qrels file of no rows (``parquet``: its table or its metadata) is refused,
    as an empty text file is."""
    if parquet.num_rows == 0:
        raise FusionError(
            f"{path}: the Parquet file has no rows; a run has rows of qid, docid and score (or rank), "
            "qrels rows of qid, docid and relevance"
        )


def read_parquet(path: str) -> Any:
    """A Parquet run or qrels file as a pyarrow Table; a file pyarrow cannot read, or of no rows, is a
    FusionError naming it."""
    pq = _parquet()
    with parquet_read(path):
        table = pq.read_table(path)
    refuse_no_rows(path, table)
    return table


def read_parquet_run(path: str, *, rank_from: RankFrom = "score") -> Run:
    """A Parquet run file as a Run (one run per file; rows are ``path:row`` in errors)."""
    return runs_from_table(read_parquet(path), name=path, rank_from=rank_from)[0]


def read_any_run(path: str, *, rank_from: RankFrom = "score") -> Run:
    """A run file of any format: Parquet (by its magic bytes) through pyarrow, else the core's reader."""
    from fanfuse._core import read_run

    return (
        read_parquet_run(path, rank_from=rank_from)
        if is_parquet(path)
        else read_run(path, rank_from=rank_from)
    )


def read_any_qrels(path: str) -> Qrels:
    """Qrels of any format: Parquet (qid, docid, relevance columns) or the core's TREC / BEIR reader."""
    from fanfuse._core import read_qrels

    if is_parquet(path):
        return qrels_from_table(read_parquet(path), name=path)
    return read_qrels(path)


def write_parquet(run: Run, path: str) -> None:
    """Writes a run as Parquet (qid, docid, rank, score), atomically as every output of fanfuse."""
    from fanfuse.output_guard import OutputFile

    pq = _parquet()
    table = to_arrow(run)
    with OutputFile(path) as stream:
        pq.write_table(table, stream)


def _parquet() -> Any:
    _pyarrow()
    import pyarrow.parquet as pq  # type: ignore[import-untyped,import-not-found,unused-ignore]

    return pq


def to_pandas(run: Run) -> Any:
    """The run as a pandas DataFrame with columns qid, docid, rank, score (needs pandas and pyarrow:
    ``pip install fanfuse[frames]``): the frame of ``to_arrow``, the one conversion."""
    return to_arrow(run).to_pandas()


def from_frame(frame: Any, *, name: str = "run", rank_from: RankFrom = "score") -> Run:
    """A run from a frame: a pandas DataFrame or any Arrow table (pyarrow, polars), read by the core's
    table reader as ``fuse_table`` reads one (``fanfuse._core.runs_from_table``); ``name`` is the run's.

    Columns as the module's convention has them: qid and docid, str or integers (read as their
    decimal text), and score (or, with ``rank_from`` "rank" or "file", a rank column or the row
    order). A null or NaN id, an empty id or a non-finite score is refused naming the row
    (``run:3: column 'docid' is null``), a column of another type (float ids) naming the column.
    ``rank_from="file"`` keeps the row order within each query.
    """
    return runs_from_table(_arrow_input(frame, "frame"), name=name, rank_from=rank_from)[0]
