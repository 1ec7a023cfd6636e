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

from fanfuse._core import FusionError, Qrels, evaluate, fuse_files, read_qrels, read_run
from fanfuse.dask.order import query_keys
from fanfuse.dask.rows import STRING, Block, relocate

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


def _write_lines(directory: Path, rows: pd.DataFrame, runs: int) -> tuple[list[str], list[pd.DataFrame]]:
    """One file per run with its rows in input order, and those rows (line i of a file is row i-1).
    A run without a record here gets one placeholder query, since the reader refuses an empty file."""
    placeholder = _placeholder(rows["qid"])
    paths, ordered = [], []
    for run in range(runs):
        mine = rows[rows["run"] == run].sort_values(["block", "row"], kind="stable")
        text = "\n".join(mine["line"].tolist())
        if not (mine["group"] >= 0).any():
            text += f"\n{placeholder} Q0 placeholder 1 0 placeholder"
        path = directory / f"{run}.trec"
        path.write_text(text + "\n", encoding="utf-8")
        paths.append(str(path))
        ordered.append(mine)
    return paths, ordered


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
    starts: np.ndarray,
    totals: Sequence[int],
    options: dict[str, Any],
) -> pd.DataFrame:
    """Fuses the queries of one partition (rows of every run, shuffled on qid): one row per query with
    its TREC lines as `fanfuse fuse` writes them, and its order keys."""
    runs = len(totals)
    if not (rows["group"] >= 0).any():
        _check_comments(rows, runs, blocks)
        return pd.DataFrame({name: pd.Series([], dtype=dtype) for name, dtype in FUSED_COLUMNS.items()})
    with tempfile.TemporaryDirectory(prefix="fanfuse-dask-") as directory:
        paths, ordered = _write_lines(Path(directory), rows, runs)
        output = os.path.join(directory, "fused.trec")
        try:
            fuse_files(paths, output, **options)
        except FusionError as error:
            raise _relocated(error, paths, ordered, blocks) from None
        with open(output, encoding="utf-8") as stream:
            written = stream.read()
    texts = _split_queries(written)
    keys = query_keys(rows, starts, totals)
    frame = pd.DataFrame(
        {"qid": pd.array(list(texts), dtype=STRING), "text": pd.array(list(texts.values()), dtype=STRING)}
    )
    frame = frame.merge(keys, on="qid", how="inner")
    return frame.astype(FUSED_COLUMNS)


def _check_comments(rows: pd.DataFrame, runs: int, blocks: Sequence[Block]) -> None:
    """A partition holding only comment lines: the reader still checks them."""
    if rows.empty:
        return
    with tempfile.TemporaryDirectory(prefix="fanfuse-dask-") as directory:
        paths, ordered = _write_lines(Path(directory), rows, runs)
        for path in paths:
            try:
                read_run(path)
            except FusionError as error:
                raise _relocated(error, paths, ordered, blocks) from None


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
    return read_qrels(path)


def evaluate_partition(
    rows: pd.DataFrame, blocks: Sequence[Block], qrels_path: str, metrics: Sequence[str]
) -> pd.DataFrame:
    """Per-query values of the metrics for one run's rows of a partition, and each query's first line
    (the order in which one process averages them)."""
    columns = evaluation_columns(metrics)
    if not (rows["group"] >= 0).any():
        _check_comments(rows, 1, blocks)
        return pd.DataFrame({name: pd.Series([], dtype=dtype) for name, dtype in columns.items()})
    stat = os.stat(qrels_path)
    qrels = _qrels(qrels_path, stat.st_mtime_ns, stat.st_size)
    with tempfile.TemporaryDirectory(prefix="fanfuse-dask-") as directory:
        paths, ordered = _write_lines(Path(directory), rows.assign(run=0), 1)
        try:
            run = read_run(paths[0])
        except FusionError as error:
            raise _relocated(error, paths, ordered, blocks) from None
    qids, values = evaluate(run, qrels, metrics=list(metrics))
    records = rows[rows["group"] >= 0]
    position = records["block"].to_numpy() << 32 | records["row"].to_numpy()
    first = pd.Series(position, index=records["qid"].to_numpy()).groupby(level=0).min()
    frame = pd.DataFrame({"qid": pd.array(qids, dtype=STRING), **{m: values[m] for m in metrics}})
    frame["first"] = first.reindex(frame["qid"]).to_numpy()
    return frame.astype(columns)[list(columns)]
