"""TREC runs as Arrow tables and Parquet files, row for line, for tests comparing the two paths."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

from generated_runs import generated_runs, write_trec


def generated_trec_runs(folder: Path, seed: int, queries: int) -> list[str]:
    """Three generated TREC runs: ties, queries missing from some runs, lines interleaved in the
    second and third (their fusion goes through the buffered mode)."""
    rng = random.Random(seed)
    runs = generated_runs(rng, runs=3, queries=queries)
    return [write_trec(folder / f"run{i}.trec", run, rng, interleaved=i > 0) for i, run in enumerate(runs)]


def trec_table(path: str | Path) -> Any:
    """The lines of a TREC run as a pyarrow table, row for line, in file order (scores parsed as the
    core parses them: correctly rounded)."""
    import pyarrow as pa

    lines = Path(path).read_text(encoding="utf-8").splitlines()
    rows = [line.split() for line in lines if line.strip()]
    return pa.table(
        {
            "qid": [r[0] for r in rows],
            "docid": [r[2] for r in rows],
            "rank": pa.array([int(r[3]) for r in rows], pa.int64()),
            "score": [float(r[4]) for r in rows],
        }
    )


def trec_to_parquet(path: str | Path, out: Path, **rename: str) -> str:
    """Writes the TREC run at `path` as Parquet at `out` (columns renamed by `rename`, e.g. ranx's
    names `qid="q_id"`); returns `out` as str."""
    import pyarrow.parquet as pq

    table = trec_table(path)
    pq.write_table(table.rename_columns([rename.get(c, c) for c in table.column_names]), out)
    return str(out)
