"""Fusion and evaluation of runs on Dask: for runs beyond one machine, or kept on a cluster.

``fuse_runs(runs, ...)`` takes run files (TREC or MT-RAG, plain or gzip; Parquet) or Dask DataFrames
(columns qid, docid, score and/or rank) and returns a lazy Dask DataFrame of the fused run (qid,
docid, rank, score). Every step is a call into the Rust core on Arrow batches
(``fanfuse.dask.kernel``): each block of a run is read by the core's reader into rows split by
query id; the rows meet by query (the shuffle on qid); each partition is fused by ONE core call,
the same fusion as ``fanfuse fuse``, so every query equals the one-process result (ids, scores bit
for bit, order) and carries the key of its place in the file one process writes. The command
``fanfuse fuse --engine dask`` writes the queries in that order, so the file is the same
(docs/distributed.md). Run files must be readable by the workers (a shared file system).

Needs the ``dask`` extra: ``pip install 'fanfuse[dask]'``.
"""

from __future__ import annotations

from fanfuse.errors import MissingExtra, OutOfRange

try:
    import dask.dataframe as dd
    import pandas as pd
    import pyarrow as pa
    import pyarrow.parquet as pq
    from dask.base import tokenize
    from dask.delayed import Delayed, delayed
    from dask.highlevelgraph import HighLevelGraph
except ImportError as error:  # pragma: no cover - exercised in a process without the extra
    raise MissingExtra(
        f"fanfuse.dask needs the dask extra ({error.name} is missing): pip install 'fanfuse[dask]'",
        extra="dask",
    ) from error

from collections.abc import Sequence
from dataclasses import dataclass
from operator import getitem
from typing import TYPE_CHECKING, Any

from fanfuse._core._internal import file_blocks
from fanfuse.choices import RankFrom
from fanfuse.options import FusionOptions

if TYPE_CHECKING:
    from typing_extensions import Unpack

    from fanfuse._core import _RunFusionKeywords
from fanfuse.dask.kernel import Block, count_queries, fuse_partition, query_ids, read_block
from fanfuse.limits import check_int
from fanfuse.tables import is_parquet, parquet_read, refuse_no_rows

__all__ = ["DEFAULT_BLOCK_BYTES", "fuse_runs", "shuffle_partitions"]

DEFAULT_BLOCK_BYTES = 64 << 20
RunInput = str | dd.DataFrame


@dataclass
class Plan:
    """The runs in blocks: what each read task reads, and each run's name in errors (its path, or
    ``runs[i]`` for a DataFrame)."""

    blocks: list[Block]
    frames: list[Any]
    names: list[str]

    def tasks(self, partitions: int, rank_from: RankFrom) -> Tasks:
        """The read tasks, as a graph: each block's summary, and each partition's rows from every
        block (the shuffle: blocks x partitions entries)."""
        name = f"fanfuse-read-{tokenize(self.blocks, self.frames, partitions, rank_from)}"
        tasks = Tasks(name, {}, [], [[] for _ in range(partitions)])
        for i, (block, frame) in enumerate(zip(self.blocks, self.frames, strict=True)):
            frame_key = None
            if frame is not None:
                tasks.graph.update(frame.__dask_graph__())
                frame_key = frame.key
            tasks.graph[(name, i)] = (read_block, block, partitions, rank_from, frame_key)
            tasks.graph[(f"{name}-summary", i)] = (getitem, (name, i), 0)
            tasks.summaries.append((f"{name}-summary", i))
            for j in range(partitions):
                tasks.graph[(f"{name}-rows", i, j)] = (getitem, (getitem, (name, i), 1), j)
                tasks.rows[j].append((f"{name}-rows", i, j))
        return tasks

    def read(self, partitions: int, rank_from: RankFrom) -> tuple[list[Delayed], list[list[Delayed]]]:
        """The read tasks as Delayed objects: each block's summary, and each partition's rows from
        every block."""
        tasks = self.tasks(partitions, rank_from)
        return [tasks.delayed(key) for key in tasks.summaries], [
            [tasks.delayed(key) for key in part] for part in tasks.rows
        ]


@dataclass
class Tasks:
    """A job's tasks as one graph, a dict built entry by entry: each task costs one entry. (Built
    call by call with dask.delayed, each call merges and optimizes the graphs of its arguments: a
    task that waits for every partition makes the building grow with the square of the partitions.)"""

    name: str
    graph: dict[Any, Any]
    summaries: list[Any]
    rows: list[list[Any]]

    def delayed(self, key: Any) -> Delayed:
        """The result of task `key`, as a Delayed over the whole graph."""
        graph = HighLevelGraph.from_collections(self.name, self.graph, dependencies=())
        return Delayed(key, graph, layer=self.name)


def plan_runs(runs: Sequence[RunInput], block_bytes: int = DEFAULT_BLOCK_BYTES) -> Plan:
    """The blocks of the runs, in run order, each run's blocks in file order."""
    if isinstance(runs, (str, dd.DataFrame)) or not runs:
        raise TypeError("runs must be a non-empty list of run file paths or Dask DataFrames")
    block_bytes = check_int("block_bytes", block_bytes)
    plan = Plan([], [], [])
    for run, given in enumerate(runs):
        if isinstance(given, dd.DataFrame):
            name = f"runs[{run}]"
            parts = given.to_delayed()
            plan.blocks += [Block(run, "frame", name, p) for p in range(len(parts))]
            plan.frames += parts
        elif isinstance(given, str) and is_parquet(given):
            name = given
            with parquet_read(given):
                metadata = pq.ParquetFile(given).metadata
            refuse_no_rows(given, metadata)
            before = 0
            for group in range(metadata.num_row_groups):
                plan.blocks.append(Block(run, "parquet", given, group, before))
                plan.frames.append(None)
                before += metadata.row_group(group).num_rows
        elif isinstance(given, str):
            name = given
            ranges = file_blocks(given, block_bytes=block_bytes)
            plan.blocks += [Block(run, "file", given, start, end) for start, end in ranges]
            plan.frames += [None] * len(ranges)
        else:
            raise TypeError(
                f"runs[{run}] must be a path (str) or a Dask DataFrame, not {type(given).__name__}"
            )
        plan.names.append(name)
    return plan


def shuffle_partitions(partitions: object, plan: Plan, rank_from: RankFrom = "score") -> int:
    """The partitions of the shuffle on qid: one per block by default. A number given must not
    exceed the queries: a partition past them would be empty, yet each costs tasks of its own (a
    slot in every block's batches, a fusion call). The queries are counted (one
    more read of the input) only when the number exceeds the blocks."""
    if partitions is None:
        return len(plan.blocks)
    wanted = check_int("partitions", partitions)
    if wanted > len(plan.blocks):
        tasks = plan.tasks(1, rank_from)
        counted = f"{tasks.name}-queries"
        tasks.graph[counted] = (count_queries, [(query_ids, key) for key in tasks.rows[0]])
        queries = int(tasks.delayed(counted).compute())
        if wanted > queries:
            raise OutOfRange(
                f"partitions must be at most the number of queries, {queries} (got {wanted}): "
                "each partition holds whole queries"
            )
    return wanted


def fused_partitions(
    runs: Sequence[RunInput],
    *,
    options: FusionOptions,
    partitions: int | None = None,
    block_bytes: int = DEFAULT_BLOCK_BYTES,
    ranges: int | None = 1,
    **arguments: Any,
) -> tuple[list[Delayed], int]:
    """One task per partition of the shuffle on qid, and how many Arrow batches of fused queries each
    gives (``ranges``; ``fanfuse._core._internal.fuse_rows``, which takes ``options`` and ``arguments``:
    ``rank_from``, ``threads``, ``format``, ``tag``). ``ranges`` None: one per input block, at most
    one per partition, so that a range of the output holds about a block's worth whatever the
    partitions (the batches are ranges x partitions: as many ranges as partitions would make the
    cost grow with the square of the partitions)."""
    plan = plan_runs(runs, block_bytes)
    rank_from = arguments.get("rank_from", "score")
    count = shuffle_partitions(partitions, plan, rank_from)
    ranges = ranges or min(count, len(plan.blocks))
    tasks = plan.tasks(count, rank_from)
    call = {**arguments, "options": options}
    name = f"fanfuse-fuse-{tokenize(tasks.name, plan.names, ranges, repr(options), arguments)}"
    for j, part in enumerate(tasks.rows):
        tasks.graph[(name, j)] = (fuse_partition, part, tasks.summaries, plan.names, ranges, call)
    return [tasks.delayed((name, j)) for j in range(count)], ranges


STRING = pd.StringDtype("pyarrow")
RUN_COLUMNS = {"qid": STRING, "docid": STRING, "rank": "int64", "score": "float64"}


def _hits_frame(batches: list[pa.RecordBatch]) -> pd.DataFrame:
    """A partition's fused hits as pandas, queries in the order one process writes them."""
    table = pa.Table.from_batches(batches).select(list(RUN_COLUMNS))
    return table.to_pandas(types_mapper={pa.string(): STRING, pa.large_string(): STRING}.get)


def _meta() -> pd.DataFrame:
    return pd.DataFrame({name: pd.Series([], dtype=dtype) for name, dtype in RUN_COLUMNS.items()})


def fuse_runs(
    runs: Sequence[RunInput],
    *,
    partitions: int | None = None,
    block_bytes: int = DEFAULT_BLOCK_BYTES,
    rank_from: RankFrom = "score",
    threads: int | None = None,
    options: FusionOptions | None = None,
    **keywords: Unpack[_RunFusionKeywords],
) -> dd.DataFrame:
    """Fuses runs on Dask: a lazy DataFrame with columns qid, docid, rank, score.

    ``runs``: run file paths (TREC or MT-RAG, plain or gzip, read in blocks of ``block_bytes``;
    Parquet, read by row groups) or Dask DataFrames, tables with columns qid (or q_id), docid (or
    doc_id), and score and/or rank (their row order is the file order of ``rank_from="file"``).
    ``partitions``: partitions of the shuffle on qid (default: as many as input blocks). The fusion
    options are one ``fanfuse.FusionOptions`` (``options=``) or its keywords, as ``fanfuse.fuse_files``
    takes them. Each query is the one-process result, hits in written order; the queries of a
    partition in the order ``fanfuse fuse`` writes them.
    A malformed line fails the computation with a FusionError naming the file and line (a frame's
    row: ``runs[1] partition 2:5`` as read, ``runs[1]:N`` counted over the frame once fused).
    """
    if options is not None and keywords:
        raise TypeError(f"fuse_runs() takes options= or its keywords, not both (got {', '.join(keywords)})")
    value = options if options is not None else FusionOptions(**keywords)
    fused, _ = fused_partitions(
        runs,
        partitions=partitions,
        block_bytes=block_bytes,
        options=value,
        rank_from=rank_from,
        threads=threads,
    )
    frames = [delayed(_hits_frame)(part) for part in fused]
    return dd.from_delayed(frames, meta=_meta(), verify_meta=False)
