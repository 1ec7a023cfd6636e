"""The order of queries in a fused run file: each query is written once every run has moved past it
(or ended), and queries released by the same run's end come out in order of first appearance, so
the same inputs give the same file at every run."""

from __future__ import annotations

from pathlib import Path

import fanfuse


def test_queries_released_by_a_run_ending_come_out_in_order_of_first_appearance(tmp_path: Path) -> None:
    # Run a holds 3 queries, run b one, run c 40 (q5...q44, q9 included): when a ends, the queries c
    # has already passed are released together; when c ends, those only a had.
    runs = {
        "a": ["q1", "q2", "q3"],
        "b": ["q9"],
        "c": [f"q{i}" for i in range(5, 45)],
    }
    paths = []
    for name, qids in runs.items():
        path = tmp_path / f"{name}.trec"
        path.write_text("".join(f"{q} Q0 d-{name} 1 1.0 {name}\n" for q in qids))
        paths.append(str(path))
    out = tmp_path / "fused.trec"
    for _ in range(3):
        summary = fanfuse.fuse_files(paths, str(out))
        assert not summary["buffered"]
        order = list(dict.fromkeys(line.split()[0] for line in out.read_text().splitlines()))
        assert order == [*(f"q{i}" for i in range(5, 45)), "q1", "q2", "q3"]
