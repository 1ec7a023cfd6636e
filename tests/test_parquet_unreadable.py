"""A file that starts as Parquet but that pyarrow cannot read is refused by name wherever fanfuse reads
Parquet: a run or qrels read whole, the distributed engine's plan (the file's metadata) and its read of
a row group (the file may change between the two), and the commands."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from fanfuse import FusionError
from fanfuse.tables import read_any_qrels, read_any_run

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")


@pytest.fixture()
def unreadable(tmp_path: Path) -> Path:
    """Parquet's magic bytes, then a cut-off file: recognised as Parquet, unreadable by pyarrow."""
    good = tmp_path / "good.parquet"
    pq.write_table(pa.table({"qid": ["q1"], "docid": ["d1"], "score": [1.0]}), good)
    bad = tmp_path / "bad.parquet"
    bad.write_bytes(good.read_bytes()[:20])
    return bad


def refused(path: Path) -> str:
    return rf"{path}: not a readable Parquet file \("


def test_a_run_and_qrels_read_whole(unreadable: Path) -> None:
    with pytest.raises(FusionError, match=refused(unreadable)):
        read_any_run(str(unreadable))
    with pytest.raises(FusionError, match=refused(unreadable)):
        read_any_qrels(str(unreadable))


def test_the_distributed_plan_and_its_read_of_a_row_group(unreadable: Path, tmp_path: Path) -> None:
    pytest.importorskip("dask.dataframe")
    from fanfuse.dask import plan_runs
    from fanfuse.dask.kernel import read_block

    with pytest.raises(FusionError, match=refused(unreadable)):
        plan_runs([str(unreadable)])
    # Planned while readable, then cut off before the task reads its row group.
    changed = tmp_path / "changed.parquet"
    pq.write_table(pa.table({"qid": ["q1"], "docid": ["d1"], "score": [1.0]}), changed)
    plan = plan_runs([str(changed)])
    changed.write_bytes(unreadable.read_bytes())
    with pytest.raises(FusionError, match=refused(changed)):
        read_block(plan.blocks[0], partitions=1, rank_from="score")


@pytest.mark.parametrize(
    "command", [["fuse", "-o", "-"], ["eval", "--qrels", "QRELS", "--metrics", "ndcg@10"]]
)
def test_the_commands_exit_2_naming_the_file(unreadable: Path, tmp_path: Path, command: list[str]) -> None:
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("q1 0 d1 1\n", encoding="utf-8")
    words = [str(qrels) if word == "QRELS" else word for word in command]
    main = "import sys; from fanfuse.cli import main; sys.exit(main())"
    done = subprocess.run(
        [sys.executable, "-c", main, *words, str(unreadable), str(unreadable)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 2, done.stderr
    assert f"{unreadable}: not a readable Parquet file (" in done.stderr
    assert "Traceback" not in done.stderr
