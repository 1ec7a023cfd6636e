"""Every reader of `fanfuse.tables` that reads ids from a table or a frame (`READERS`, checked against the
module's public functions) reads them through the core's table reader: a null or a NaN id, in the qid or
the docid column, of a pyarrow table or a pandas frame, is refused naming the table and the row as
`fanfuse._core.runs_from_table` refuses it, never read as the text "None" or "nan"; a column of float
ids is refused by its type, never read as "1.0"; integer ids are their decimal text; and what is no
table is a TypeError naming the argument and what is accepted."""

from __future__ import annotations

import inspect
import math
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import fanfuse.tables
import pytest
from fanfuse import FusionError
from fanfuse._core import runs_from_table
from fanfuse.tables import evaluate_table, from_frame, fuse_table, to_arrow

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")
pd = pytest.importorskip("pandas")

# The public functions of fanfuse.tables that read no ids from a table, and why.
NOT_READERS = {
    "to_arrow": "a Run to a table",
    "to_pandas": "a Run to a frame",
    "write_parquet": "writes a Run",
    "is_parquet": "reads a file's magic bytes",
    "parquet_read": "maps pyarrow's errors on a Parquet file",
    "refuse_no_rows": "counts a Parquet file's rows",
    "read_parquet": "loads the Parquet file that the readers below read ids from",
}

GOOD_IDS = {"qid": ["q1", "q1", "q2"], "docid": ["a", "b", "c"]}
# Bad id columns of three rows, a null or NaN at row 2 or float ids (refused by the column's type),
# each with the refusal the core gives (`{name}`: the table's name in errors; `{column}`: the column).
NULL = r"^{name}:2: column '{column}' is null; every row needs a value$"
FLOAT = r"^{name}: column '{column}' has Arrow type float64 .*accepted: utf8, .* or an integer type"
BAD_COLUMNS: dict[str, tuple[Callable[[], Any], str]] = {
    "arrow str null": (lambda: pa.array(["x1", None, "x3"]), NULL),
    "arrow int null": (lambda: pa.array([1, None, 3], pa.int64()), NULL),
    "arrow float NaN": (lambda: pa.array([1.0, math.nan, 3.0]), FLOAT),
    "arrow float": (lambda: pa.array([1.0, 2.0, 3.0]), FLOAT),
    "pandas None": (lambda: pd.Series(["x1", None, "x3"], dtype=object), NULL),
    "pandas NaN": (lambda: pd.Series(["x1", math.nan, "x3"], dtype=object), NULL),
    "pandas string NA": (lambda: pd.Series(["x1", pd.NA, "x3"], dtype="string"), NULL),
    "pandas Int64 NA": (lambda: pd.Series([1, pd.NA, 3], dtype="Int64"), NULL),
    "pandas float NaN": (lambda: pd.Series([1.0, math.nan, 3.0]), FLOAT),
    "pandas float": (lambda: pd.Series([1.0, 2.0, 3.0]), FLOAT),
}


def table(kind: str, columns: dict[str, Any]) -> Any:
    """A pyarrow table or a pandas frame of `columns`, as the bad column's kind is."""
    if kind.startswith("pandas"):
        return pd.DataFrame(columns)
    return pa.table(
        {name: pa.array(values) if isinstance(values, list) else values for name, values in columns.items()}
    )


def run_columns(bad: dict[str, Any]) -> dict[str, Any]:
    return {**GOOD_IDS, "score": [3.0, 2.0, 1.0], **bad}


def qrels_columns(bad: dict[str, Any]) -> dict[str, Any]:
    return {**GOOD_IDS, "relevance": [1, 0, 1], **bad}


GOOD_RUN = pa.table(run_columns({}))
GOOD_QRELS = pa.table(qrels_columns({}))


def parquet(folder: Path, columns: dict[str, Any], kind: str) -> str:
    path = folder / "ids.parquet"
    written = table(kind, columns)
    pq.write_table(written if isinstance(written, pa.Table) else pa.table(written), path)
    return str(path)


# Each reader: given the bad columns (a run's, or a qrels') and the bad column's kind, in a folder of
# its own, the read to make and the name the core's refusal gives the table.
Read = tuple[str, Callable[[], Any]]
Reader = Callable[[dict[str, Any], str, Path], Read]


def fused_second(bad: dict[str, Any], kind: str, folder: Path) -> Read:
    return "tables[1]", lambda: fuse_table([GOOD_RUN, table(kind, run_columns(bad))])


def fused_by_label(bad: dict[str, Any], kind: str, folder: Path) -> Read:
    labelled = table(kind, {**run_columns(bad), "run": ["r", "r", "r"]})
    return "table", lambda: fuse_table(labelled, run_column="run", runs=["r"])


def evaluated_run(bad: dict[str, Any], kind: str, folder: Path) -> Read:
    return "run", lambda: evaluate_table(table(kind, run_columns(bad)), GOOD_QRELS, ["map"])


def evaluated_qrels(bad: dict[str, Any], kind: str, folder: Path) -> Read:
    return "qrels", lambda: evaluate_table(GOOD_RUN, table(kind, qrels_columns(bad)), ["map"])


def framed(bad: dict[str, Any], kind: str, folder: Path) -> Read:
    return "bm25", lambda: from_frame(table(kind, run_columns(bad)), name="bm25")


def parquet_reader(read: Callable[[str], Any], *, qrels: bool = False) -> Reader:
    def reader(bad: dict[str, Any], kind: str, folder: Path) -> Read:
        path = parquet(folder, (qrels_columns if qrels else run_columns)(bad), kind)
        return path, lambda: read(path)

    reader.__name__ = read.__name__
    return reader


READERS: dict[str, list[Reader]] = {
    "fuse_table": [fused_second, fused_by_label],
    "evaluate_table": [evaluated_run, evaluated_qrels],
    "from_frame": [framed],
    "read_parquet_run": [parquet_reader(fanfuse.tables.read_parquet_run)],
    "read_any_run": [parquet_reader(fanfuse.tables.read_any_run)],
    "read_any_qrels": [parquet_reader(fanfuse.tables.read_any_qrels, qrels=True)],
    "read_run_table": [parquet_reader(fanfuse.tables.read_run_table)],
}
CASES = [
    pytest.param(reader, column, kind, id=f"{reader.__name__}-{column}-{kind}".replace(" ", "_"))
    for readers in READERS.values()
    for reader in readers
    for column in ("qid", "docid")
    for kind in BAD_COLUMNS
]


def test_every_public_function_of_the_module_is_a_reader_or_reads_no_ids() -> None:
    public = {
        name
        for name, value in vars(fanfuse.tables).items()
        if inspect.isfunction(value) and value.__module__ == "fanfuse.tables" and not name.startswith("_")
    }
    assert set(READERS).isdisjoint(NOT_READERS)
    assert public == set(READERS) | set(NOT_READERS)


@pytest.mark.parametrize(("reader", "column", "kind"), CASES)
def test_a_bad_id_is_refused_naming_the_table_and_the_row(
    reader: Reader, column: str, kind: str, tmp_path: Path
) -> None:
    values, refusal = BAD_COLUMNS[kind]
    name, read = reader({column: values()}, kind, tmp_path)
    with pytest.raises(FusionError, match=refusal.format(name=re.escape(name), column=column)):
        read()


def test_the_refusal_is_the_cores() -> None:
    """from_frame refuses as the core's reader of the same table does, message for message."""
    for kind, (values, _) in BAD_COLUMNS.items():
        for column in ("qid", "docid"):
            frame = table(kind, run_columns({column: values()}))
            with pytest.raises(FusionError) as core:
                runs_from_table(frame if kind.startswith("arrow") else pa.table(frame), name="run")
            with pytest.raises(FusionError) as ours:
                from_frame(frame)
            assert str(ours.value) == str(core.value), (kind, column)


@pytest.mark.parametrize("kind", ["arrow", "pandas"])
def test_integer_ids_are_their_decimal_text(kind: str) -> None:
    ids = {"qid": [7, 7, -2], "docid": [10, 2**62, 0], "score": [1.0, 2.0, 3.0]}
    columns = (
        {k: pa.array(v, pa.int64()) if k != "score" else pa.array(v) for k, v in ids.items()}
        if kind == "arrow"
        else ids
    )
    run = from_frame(table(kind, columns))
    assert to_arrow(run).to_pydict() == {
        "qid": ["7", "7", "-2"],
        "docid": [str(2**62), "10", "0"],
        "rank": [1, 2, 1],
        "score": [2.0, 1.0, 3.0],
    }


def test_a_column_pandas_cannot_make_arrow_is_a_type_error_naming_the_argument() -> None:
    frame = pd.DataFrame({"qid": ["q1", "q1"], "docid": ["a", "b"], "score": [1.0, "x"]})
    with pytest.raises(TypeError, match=r"^frame: .*'x' with type str.*column score"):
        from_frame(frame)
    with pytest.raises(TypeError, match=r"^tables\[0\]: .*'x' with type str.*column score"):
        fuse_table([frame, frame])


@pytest.mark.parametrize(
    ("call", "argument"),
    [
        (lambda value: from_frame(value), "frame"),
        (lambda value: from_frame(value, name="bm25"), "frame"),
        (lambda value: fuse_table([GOOD_RUN, value]), r"tables\[1\]"),
        (lambda value: fuse_table(value, run_column="run", runs=["r"]), "tables"),
        (lambda value: evaluate_table(value, GOOD_QRELS, ["map"]), "run"),
        (lambda value: evaluate_table(GOOD_RUN, value, ["map"]), "qrels"),
    ],
)
@pytest.mark.parametrize("value", [[1, 2], None, {"qid": ["q"], "docid": ["d"], "score": [1.0]}, "t.parquet"])
def test_what_is_no_table_is_a_type_error_naming_the_argument(
    call: Callable[[Any], Any], argument: str, value: Any
) -> None:
    with pytest.raises(
        TypeError,
        match=rf"^{argument} must be an Arrow table \(an object with __arrow_c_stream__ .*\) or a "
        rf"pandas DataFrame \(got {type(value).__name__}\)$",
    ):
        call(value)
