"""Runs as Dask DataFrames of raw TREC lines, one partition per block of a file (or per partition of a
given frame), with what the Rust reader needs to give the answer one process would give.

Every row keeps its line as written: parsing, checking and fusing stay in the Rust core, which reads
the lines of each shuffled partition as it reads a file. Per row: `run` (index of the run), `qid`
(the first field, the shuffle key; empty for a `#` comment), `line`, `block` (index into the list of
blocks) and `row` (1-based line number in the block), and `group`: the index in the block of the
group of consecutive lines of one query the line belongs to (-1 for a comment); the Rust reader takes
a run one such group at a time, which decides the order of the output (see `order.py`).
"""

from __future__ import annotations

import gzip
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import BinaryIO

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from fanfuse._core import RUN_TABLE_COLUMNS, FusionError, read_run

STRING = pd.StringDtype("pyarrow")
# Rows of a run file carry their line; rows of a table (a frame's partition, a Parquet file) carry
# qid, docid and the score and/or rank columns the table has, for the core's table reader.
COLUMNS = {
    "run": np.dtype("int32"),
    "qid": STRING,
    "line": STRING,
    "docid": STRING,
    "score": np.dtype("float64"),
    "rank": np.dtype("int64"),
    "block": np.dtype("int64"),
    "row": np.dtype("int64"),
    "group": np.dtype("int64"),
}
NUMBER_COLUMNS = ("score", "rank")
# TREC field separators, as the Rust reader splits (other whitespace in a line is an error there).
_SEPARATORS = " \t\x0b\x0c"
_FIRST_FIELD = f"^[{_SEPARATORS}]*(?P<field>[^{_SEPARATORS}]*)"
DEFAULT_BLOCK_BYTES = 64 << 20


@dataclass(frozen=True)
class Block:
    """A part of one run: bytes [start, end) of a file (lines that start there), or one partition of a
    frame (`path` is then a label such as `runs[1]` and `start` the partition number)."""

    run: int
    path: str
    start: int
    end: int
    in_frame: bool = False

    def describe(self, row: int) -> str:
        """Where row `row` (1-based) of this block is, for an error message: `file:line`, or the
        partition and row of a frame."""
        if self.in_frame:
            return f"{self.path} partition {self.start} row {row}"
        if self.start == 0:
            return f"{self.path}:{row}"
        with open(self.path, "rb") as stream:
            first = _first_line_start(stream, self.start)
        return f"{self.path}:{_lines_before(self.path, first) + row}"


def _first_line_start(stream: BinaryIO, start: int) -> int:
    """Offset of the first line that starts at or after `start` (a line belongs to the block it
    starts in)."""
    if start == 0:
        return 0
    stream.seek(start - 1)
    return start - 1 + len(stream.readline())


def _lines_before(path: str, offset: int) -> int:
    """Lines that end before byte `offset` (only counted when an error needs a line number)."""
    if offset == 0:
        return 0
    count = 0
    with open(path, "rb") as stream:
        remaining = offset
        while remaining:
            chunk = stream.read(min(remaining, 1 << 24))
            if not chunk:
                break
            count += chunk.count(b"\n")
            remaining -= len(chunk)
    return count


def file_blocks(paths: Sequence[str], block_bytes: int = DEFAULT_BLOCK_BYTES) -> list[Block]:
    """The blocks of each run file; a gzip file is one block (it cannot be split)."""
    blocks = []
    for run, path in enumerate(paths):
        try:
            size = os.path.getsize(path)
            with open(path, "rb") as stream:
                gzipped = stream.read(2) == b"\x1f\x8b"
        except OSError as error:
            raise FusionError(f"{path}: {error.strerror}") from None
        if size == 0 or gzipped:
            blocks.append(Block(run, path, 0, size))
            continue
        blocks += [Block(run, path, s, min(s + block_bytes, size)) for s in range(0, size, block_bytes)]
    return blocks


def _read_text(block: Block) -> str:
    """The lines that start in the block, decoded; a block that is not UTF-8 is handed to the Rust
    reader, whose error names the line (else one is raised here)."""
    with open(block.path, "rb") as stream:
        if stream.read(2) == b"\x1f\x8b":
            stream.seek(0)
            data = gzip.GzipFile(fileobj=stream).read()
        else:
            start = _first_line_start(stream, block.start)
            stream.seek(start)
            data = stream.read(max(block.end - start, 0))
            if data and not data.endswith(b"\n"):
                data += stream.readline()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        _raise_from_reader(block, data, data.count(b"\n", 0, error.start) + 1)
    return text.removeprefix("\ufeff") if block.start == 0 else text


def _raise_from_reader(block: Block, data: bytes, row: int) -> None:
    """Raises the Rust reader's error for these lines, with the block's place in the file."""
    import tempfile

    with tempfile.NamedTemporaryFile(suffix=".trec") as temporary:
        temporary.write(data)
        temporary.flush()
        try:
            read_run(temporary.name)
        except FusionError as error:
            raise relocate(error, temporary.name, block.describe, block.path) from None
    raise FusionError(f"{block.describe(row)}: is not valid UTF-8")


def relocate(error: FusionError, path: str, place: Callable[[int], str], name: str) -> FusionError:
    """The Rust reader's error about `path:LINE` (or `path`), naming `place(LINE)` (or `name`)."""
    message = str(error)
    prefix = f"{path}:"
    if not message.startswith(prefix):
        return error
    line, _, rest = message[len(prefix) :].partition(":")
    if line.isdigit() and int(line) > 0:
        return FusionError(f"{place(int(line))}:{rest}")
    return FusionError(f"{name}:{message[len(prefix) :]}")


def block_rows(block: Block, block_id: int) -> pd.DataFrame:
    """The rows of one file block (blank lines dropped: the reader skips them without a check)."""
    return lines_frame(_read_text(block).split("\n"), block.run, block_id)


def lines_frame(lines: list[str], run: int, block_id: int) -> pd.DataFrame:
    """Rows of the given lines (line numbers from 1), with their first field and query groups."""
    if lines and lines[-1] == "":
        lines.pop()
    array = pa.array(lines, pa.large_string())
    first = pc.struct_field(pc.extract_regex(array, _FIRST_FIELD), [0])
    kept = pc.not_equal(first, "")
    comment = pc.starts_with(first, "#").to_numpy(zero_copy_only=False)
    qid = pc.if_else(pc.starts_with(first, "#"), "", first)
    rows = np.arange(1, len(lines) + 1, dtype=np.int64)
    frame = pd.DataFrame(
        {
            "run": np.full(len(lines), run, dtype=np.int32),
            "qid": pd.array(qid.cast(pa.string()), dtype=STRING),
            "line": pd.array(array.cast(pa.string()), dtype=STRING),
            "docid": pd.array(pa.nulls(len(lines), pa.string()), dtype=STRING),
            "score": np.zeros(len(lines)),
            "rank": np.zeros(len(lines), dtype=np.int64),
            "block": np.full(len(lines), block_id, dtype=np.int64),
            "row": rows,
            "group": _groups(qid, comment),
        }
    )
    return frame[kept.to_numpy(zero_copy_only=False)].reset_index(drop=True)


def _groups(qid: pa.Array, comment: np.ndarray) -> np.ndarray:
    """Index of each record line's group of consecutive lines with one query id (comments and blank
    lines do not end a group; they get -1)."""
    records = np.flatnonzero(~comment & (pc.not_equal(qid, "").to_numpy(zero_copy_only=False)))
    groups = np.full(len(qid), -1, dtype=np.int64)
    if len(records):
        ids = qid.take(pa.array(records))
        starts = np.ones(len(records), dtype=bool)
        starts[1:] = pc.not_equal(ids[1:], ids[:-1]).to_numpy(zero_copy_only=False)
        groups[records] = np.cumsum(starts) - 1
    return groups


def table_columns(columns: Sequence[str], label: str) -> dict[str, str]:
    """Which of a run table's columns are its qid, docid, score and rank (the last two optional)."""
    found = {}
    for role, names in RUN_TABLE_COLUMNS.items():
        named = [n for n in names if n in columns]
        if len(named) > 1:
            raise FusionError(f"{label} has columns {' and '.join(named)}; keep one of them")
        if named:
            found[role] = named[0]
    missing = [role for role in ("qid", "docid") if role not in found]
    if missing or not any(n in found for n in NUMBER_COLUMNS):
        raise FusionError(
            f"{label} has columns {', '.join(map(str, columns))}; a run table needs qid (or q_id), "
            "docid (or doc_id), and score and/or rank"
        )
    return found


def frame_rows(partition: pd.DataFrame, run: int, block_id: int, label: str) -> pd.DataFrame:
    """Rows of one partition of a run table, in its row order (the file order of a table)."""
    names = table_columns(list(partition.columns), label)
    n = len(partition)
    for role in NUMBER_COLUMNS:
        if role in names and not is_numeric_column(column := partition[names[role]]):
            raise FusionError(
                f"{label}: column {names[role]!r} has type {column.dtype}; accepted: an integer or "
                "floating-point type"
            )
    score = partition[names["score"]].to_numpy(dtype=np.float64) if "score" in names else np.zeros(n)
    rank = partition[names["rank"]].to_numpy(dtype=np.int64) if "rank" in names else np.zeros(n, np.int64)
    qid = partition[names["qid"]].astype(str).astype(STRING).reset_index(drop=True)
    frame = pd.DataFrame(
        {
            "run": np.full(n, run, dtype=np.int32),
            "qid": qid,
            "line": pd.array(pa.nulls(n, pa.string()), dtype=STRING),
            "docid": partition[names["docid"]].astype(str).astype(STRING).reset_index(drop=True),
            "score": score,
            "rank": rank,
            "block": np.full(n, block_id, dtype=np.int64),
            "row": np.arange(1, n + 1, dtype=np.int64),
            "group": _groups(pa.array(qid, pa.string()), np.zeros(n, dtype=bool)),
        }
    )
    return frame.astype(COLUMNS)


def is_numeric_column(column: pd.Series) -> bool:
    """An integer or floating-point column, as the core's table reader takes (booleans are not)."""
    return pd.api.types.is_numeric_dtype(column.dtype) and not pd.api.types.is_bool_dtype(column.dtype)
