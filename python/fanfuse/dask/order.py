"""The order in which `fanfuse fuse` writes queries, computed from where each query's lines are, so
that a distributed fusion writes the very same file.

One process reads the runs in turn, one group of consecutive lines of one query from each run, and
at the end of a run takes its end (docs/run-files.md). Step `(g, r)` of that reading is the g-th
group of run r, or its end when g is its number of groups; steps are in lexicographic order and
numbered `g * runs + r`. A query is written at its release step: the latest, over the runs, of the
step of its first group there, or of the run's end if the run lacks it. Queries released together
(by an end) are in order of their first step. When a run has a later group of a query after its
release, the one-process fusion restarts buffered and writes every query in order of first step.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from fanfuse.dask.rows import STRING

SUMMARY_COLUMNS = {
    "block": np.dtype("int64"),
    "run": np.dtype("int64"),
    "groups": np.dtype("int64"),
    "first": STRING,
    "last": STRING,
}
KEY_COLUMNS = {
    "qid": STRING,
    "release": np.dtype("int64"),
    "seq": np.dtype("int64"),
    "restart": np.dtype("bool"),
}


def block_summary(rows: pd.DataFrame) -> pd.DataFrame:
    """Per block of a partition: its run, number of query groups, first and last query id."""
    records = rows[rows["group"] >= 0]
    summary = records.groupby("block", sort=True).agg(
        run=("run", "first"), groups=("group", "max"), first=("qid", "first"), last=("qid", "last")
    )
    summary["groups"] += 1
    return summary.reset_index().astype(SUMMARY_COLUMNS)[list(SUMMARY_COLUMNS)]


def group_starts(summary: pd.DataFrame, blocks: int, runs: int) -> tuple[np.ndarray, list[int]]:
    """The index in its run of each block's first group (a block starting with the query the block
    before ended with continues that group), and each run's number of groups."""
    starts = np.zeros(blocks, dtype=np.int64)
    totals = [0] * runs
    last: list[str | None] = [None] * runs
    for block, run, groups, first, final in summary.sort_values("block").itertuples(index=False):
        start = totals[run] - (1 if first == last[run] else 0)
        starts[block] = start
        totals[run] = start + groups
        last[run] = final
    return starts, totals


def query_keys(rows: pd.DataFrame, starts: np.ndarray, totals: Sequence[int]) -> pd.DataFrame:
    """Per query of the partition: its release step, first step, and whether a run returns to it
    after its release (which makes the one-process fusion restart buffered)."""
    runs = len(totals)
    records = rows[rows["group"] >= 0]
    group = starts[records["block"].to_numpy()] + records["group"].to_numpy()
    steps = pd.DataFrame({"qid": records["qid"].to_numpy(), "run": records["run"].to_numpy(), "group": group})
    spans = steps.groupby(["qid", "run"], sort=False)["group"].agg(["min", "max"]).reset_index()
    first_step = spans["min"] * runs + spans["run"]
    last_step = spans["max"] * runs + spans["run"]
    ends = np.asarray(totals, dtype=np.int64) * runs + np.arange(runs, dtype=np.int64)
    wide = spans.assign(step=first_step).pivot(index="qid", columns="run", values="step")
    wide = wide.reindex(columns=range(runs))
    present = wide.notna().to_numpy()
    reached = np.where(present, wide.fillna(0).to_numpy(dtype=np.int64), ends)
    release = pd.Series(reached.max(axis=1), index=wide.index)
    seq = pd.Series(np.where(present, reached, np.iinfo(np.int64).max).min(axis=1), index=wide.index)
    late = (last_step.to_numpy() > release.reindex(spans["qid"]).to_numpy()).astype(bool)
    restart = pd.Series(late, index=spans["qid"]).groupby(level=0).any().reindex(wide.index)
    keys = pd.DataFrame({"release": release, "seq": seq, "restart": restart}).rename_axis("qid").reset_index()
    return keys.astype(KEY_COLUMNS)
