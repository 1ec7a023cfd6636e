"""TREC runs as Arrow tables and Parquet files, row for line, for tests comparing the two paths."""

from __future__ import annotations

from pathlib import Path
from typing import Any


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
