"""What runs inside one partition: the lines of every run for the partition's queries go through the
Rust core in ONE call (`fuse_files` on the partition's lines: the same reader, checks, fusion and
writer as `fanfuse fuse`), and per-query evaluation through `read_run` + `evaluate`."""

from __future__ import annotations

import functools
import os
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa

from fanfuse._core import FusionError, Qrels, Run, evaluate, fuse_files, read_run, runs_from_table
from fanfuse.dask.order import query_keys
from fanfuse.dask.rows import STRING, Block, relocate
from fanfuse.tables import read_any_qrels

# Columns of a fused partition: one row per query, its written TREC lines, and its place in the
# order of the output (`order.py`).
FUSED_COLUMNS = {
    "qid": STRING,
    "text": STRING,
    "release": np.dtype("int64"),
    "seq": np.dtype("int64"),
    "restart": np.dtype("bool"),
}
RUN_COLUMNS = {"qid": STRING, "docid": STRING, "rank": np.dtype("int64"), "score": np.dtype("float64")}


# What a run is in a partition: a file (None: its rows are lines) or a table with these number columns.
RunKind = tuple[str, ...] | None


def _inputs(
    directory: Path, rows: pd.DataFrame, kinds: Sequence[RunKind], blocks: Sequence[Block], rank_from: str
) -> tuple[list[str | Run], list[str], list[pd.DataFrame]]:
    """The partition's rows of each run, in input order, as the core's input: a file of its lines, or
    a Run read from a table of its columns. Also each input's name in errors and its rows (line or
    row i of the input is row i-1). A file without a record gets one placeholder query, since the
    reader refuses an empty file."""
    placeholder = _placeholder(rows["qid"])
    inputs: list[str | Run] = []
    names, ordered = [], []
    for run, kind in enumerate(kinds):
        mine = rows[rows["run"] == run].sort_values(["block", "row"], kind="stable")
        name = str(directory / f"{run}.trec")
        if kind is None:
            text = "\n".join(mine["line"].tolist())
            if not (mine["group"] >= 0).any():
                text += f"\n{placeholder} Q0 placeholder 1 0 placeholder"
            Path(name).write_text(text + "\n", encoding="utf-8")
            inputs.append(name)
        else:
            # NumPy numbers keep a NaN score a NaN (pandas would make it null), for the core to refuse.
            numbers = {c: pa.array(mine[c].to_numpy()) for c in kind}
            table = pa.table({"qid": pa.array(mine["qid"]), "docid": pa.array(mine["docid"]), **numbers})
            try:
                inputs.append(runs_from_table(table, name=name, rank_from=rank_from)[0])
            except FusionError as error:
                raise _relocated(error, [name], [mine], blocks) from None
        names.append(name)
        ordered.append(mine)
    return inputs, names, ordered


def _placeholder(qids: pd.Series) -> str:
    """A query id that no row of the partition has."""
    taken = set(qids.unique())
    name = "fanfuse.placeholder"
    while name in taken:
        name += "_"
    return name


def _relocated(
    error: FusionError, paths: list[str], ordered: list[pd.DataFrame], blocks: Sequence[Block]
) -> FusionError:
    """The error of the Rust reader about a partition file, naming the input file and line instead."""
    for path, mine in zip(paths, ordered, strict=True):
        if str(error).startswith(f"{path}:"):

            def place(line: int, mine: pd.DataFrame = mine) -> str:
                if line > len(mine):
                    return "a partition's placeholder line"
                row = mine.iloc[line - 1]
                return blocks[int(row["block"])].describe(int(row["row"]))

            name = blocks[int(mine["block"].iloc[0])].path if len(mine) else path
            return relocate(error, path, place, name)
    return error


def fuse_partition(
    rows: pd.DataFrame,
    blocks: Sequence[Block],
    kinds: Sequence[RunKind],
    starts: np.ndarray,
    totals: Sequence[int],
    options: dict[str, Any],
) -> pd.DataFrame:
    """Fuses the queries of one partition (rows of every run, shuffled on qid): one row per query with
    its TREC lines as `fanfuse fuse` writes them, and its order keys."""
    if not (rows["group"] >= 0).any():
        _check_comments(rows, kinds, blocks)
        return pd.DataFrame({name: pd.Series([], dtype=dtype) for name, dtype in FUSED_COLUMNS.items()})
    with tempfile.TemporaryDirectory(prefix="fanfuse-dask-") as directory:
        rank_from = options.get("rank_from", "score")
        inputs, names, ordered = _inputs(Path(directory), rows, kinds, blocks, rank_from)
        output = os.path.join(directory, "fused.trec")
        try:
            fuse_files(inputs, output, **options)
        except FusionError as error:
            raise _relocated(error, names, ordered, blocks) from None
        with open(output, encoding="utf-8") as stream:
            written = stream.read()
    texts = _split_queries(written)
    keys = query_keys(rows, starts, totals)
    frame = pd.DataFrame(
        {"qid": pd.array(list(texts), dtype=STRING), "text": pd.array(list(texts.values()), dtype=STRING)}
    )
    frame = frame.merge(keys, on="qid", how="inner")
    return frame.astype(FUSED_COLUMNS)


def _check_comments(rows: pd.DataFrame, kinds: Sequence[RunKind], blocks: Sequence[Block]) -> None:
    """A partition holding only comment lines: the reader still checks them."""
    if rows.empty:
        return
    with tempfile.TemporaryDirectory(prefix="fanfuse-dask-") as directory:
        inputs, names, ordered = _inputs(Path(directory), rows, kinds, blocks, "score")
        for given in inputs:
            try:
                if isinstance(given, str):
                    read_run(given)
            except FusionError as error:
                raise _relocated(error, names, ordered, blocks) from None


def _split_queries(written: str) -> dict[str, str]:
    """The written lines of each query (consecutive in the file), keyed by query id."""
    texts: dict[str, str] = {}
    lines = written.splitlines(keepends=True)
    start = 0
    for i in range(1, len(lines) + 1):
        if i == len(lines) or lines[i].split(" ", 1)[0] != lines[start].split(" ", 1)[0]:
            texts[lines[start].split(" ", 1)[0]] = "".join(lines[start:i])
            start = i
    return texts


def text_to_columns(partition: pd.DataFrame) -> pd.DataFrame:
    """The fused queries of a partition as run columns (qid, docid, rank, score), queries in order of
    first appearance, hits as written; scores read back to the very doubles that were written."""
    if partition.empty:
        return pd.DataFrame({name: pd.Series([], dtype=dtype) for name, dtype in RUN_COLUMNS.items()})
    text = "".join(partition.sort_values("seq")["text"].tolist())
    with tempfile.TemporaryDirectory(prefix="fanfuse-dask-") as directory:
        path = Path(directory, "fused.trec")
        path.write_text(text, encoding="utf-8")
        qids, docids, ranks, scores = read_run(str(path), rank_from="file").columns()
    frame = pd.DataFrame({"qid": qids, "docid": docids, "rank": ranks, "score": scores})
    return frame.astype(RUN_COLUMNS)


def evaluation_columns(metrics: Sequence[str]) -> dict[str, Any]:
    """Columns of an evaluated partition: the query, its first line, a value per metric."""
    return {"qid": STRING, "first": np.dtype("int64"), **{m: np.dtype("float64") for m in metrics}}


@functools.lru_cache(maxsize=4)
def _qrels(path: str, mtime_ns: int, size: int) -> Qrels:
    """The qrels file, read once per worker process (and again when it changes)."""
    return read_any_qrels(path)


def evaluate_partition(
    rows: pd.DataFrame, blocks: Sequence[Block], kind: RunKind, qrels_path: str, metrics: Sequence[str]
) -> pd.DataFrame:
    """Per-query values of the metrics for one run's rows of a partition, and each query's first line
    (the order in which one process averages them)."""
    columns = evaluation_columns(metrics)
    if not (rows["group"] >= 0).any():
        _check_comments(rows.assign(run=0), [kind], blocks)
        return pd.DataFrame({name: pd.Series([], dtype=dtype) for name, dtype in columns.items()})
    stat = os.stat(qrels_path)
    qrels = _qrels(qrels_path, stat.st_mtime_ns, stat.st_size)
    with tempfile.TemporaryDirectory(prefix="fanfuse-dask-") as directory:
        inputs, names, ordered = _inputs(Path(directory), rows.assign(run=0), [kind], blocks, "score")
        given = inputs[0]
        try:
            run = read_run(given) if isinstance(given, str) else given
        except FusionError as error:
            raise _relocated(error, names, ordered, blocks) from None
    qids, values = evaluate(run, qrels, metrics=list(metrics))
    records = rows[rows["group"] >= 0]
    position = records["block"].to_numpy() << 32 | records["row"].to_numpy()
    first = pd.Series(position, index=records["qid"].to_numpy()).groupby(level=0).min()
    frame = pd.DataFrame({"qid": pd.array(qids, dtype=STRING), **{m: values[m] for m in metrics}})
    frame["first"] = first.reindex(frame["qid"]).to_numpy()
    return frame.astype(columns)[list(columns)]
