"""The Spark and Ray recipes of docs/distributed.md, run as they are written there (Spark in local mode,
Ray in a local cluster, both on 127.0.0.1), on generated runs in three formats: every query equals
what `fanfuse fuse` writes for the same files."""

from __future__ import annotations

import os
import re
import shutil
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from dask_inputs import as_gzip, as_mtrag, columns_of, time_limit, write_runs
from dask_inputs import fanfuse as run_command

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")

DOCS = Path(__file__).resolve().parents[1] / "docs" / "distributed.md"
# Starting a JVM or a Ray head on a busy 2-core machine takes long; nothing may hang for ever.
START_SECONDS = 600


def recipes() -> list[str]:
    """The python blocks of the "Spark and Ray" section: the shared work, Spark's, Ray's."""
    section = DOCS.read_text(encoding="utf-8").split("## Spark and Ray", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```python\n(.*?)```", section, re.DOTALL)
    assert len(blocks) == 3, "the section has the shared block, Spark's and Ray's"
    return blocks


@pytest.fixture
def runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, list[tuple[str, int, float]]]:
    """The recipe's runs/ folder (TREC, gzip TREC, MT-RAG) in the working directory, and what
    `fanfuse fuse --top-k 100` writes for them, by query."""
    monkeypatch.chdir(tmp_path)
    generated = write_runs(tmp_path, seed=41, interleaved=False, queries=60)
    Path("runs").mkdir()
    shutil.copyfile(generated[0], "runs/bm25.trec")
    as_gzip(generated[1], Path("runs/dense.trec.gz"))
    as_mtrag(generated[2], Path("runs/splade.jsonl"))
    paths = ["runs/bm25.trec", "runs/dense.trec.gz", "runs/splade.jsonl"]
    code, _, stderr = run_command("fuse", *paths, "-o", "one.trec", "--top-k", "100")
    assert code == 0, stderr
    return columns_of("one.trec")


def fused_by_query(folder: str) -> dict[str, list[tuple[str, int, float]]]:
    table = pq.read_table(folder)
    out: dict[str, list[tuple[str, int, float]]] = {}
    rows = zip(*(table.column(c).to_pylist() for c in ("qid", "docid", "rank", "score")), strict=True)
    for qid, docid, rank, score in sorted(rows, key=lambda r: (r[0], r[2])):
        out.setdefault(qid, []).append((docid, rank, score))
    return out


@pytest.fixture
def spark() -> Iterator[object]:
    pytest.importorskip("pyspark", reason="pyspark is not installed")
    if shutil.which("java") is None:
        pytest.skip("Spark needs a Java runtime (java is not on PATH)")
    from pyspark.sql import SparkSession

    os.environ["PYSPARK_PYTHON"] = sys.executable  # the workers import fanfuse from this environment
    scratch = tempfile.gettempdir()
    with time_limit(START_SECONDS):
        session = (
            SparkSession.builder.master("local[2]")
            .config("spark.driver.host", "127.0.0.1")
            .config("spark.driver.bindAddress", "127.0.0.1")
            .config("spark.ui.enabled", "false")
            .config("spark.sql.shuffle.partitions", "4")
            # The JVM's scratch files go where the run's other temporary files go (Java reads /tmp,
            # not TMPDIR), and it keeps no performance-data file (/tmp/hsperfdata_USER).
            .config("spark.local.dir", scratch)
            .config("spark.driver.extraJavaOptions", f"-Djava.io.tmpdir={scratch} -XX:-UsePerfData")
            .getOrCreate()
        )
        yield session
        session.stop()


def test_the_spark_recipe_fuses_every_query_as_one_process(
    runs: dict[str, list[tuple[str, int, float]]], spark: object
) -> None:
    shared, spark_block, _ = recipes()
    with time_limit(START_SECONDS):
        exec(compile(shared + spark_block, str(DOCS), "exec"), {"spark": spark})
    assert fused_by_query("fused-spark") == runs
    assert fused_by_query("fused-by-query") == runs


def test_the_ray_recipe_fuses_every_query_as_one_process(
    runs: dict[str, list[tuple[str, int, float]]],
) -> None:
    ray = pytest.importorskip("ray", reason="ray is not installed")
    shared, _, ray_block = recipes()
    with time_limit(START_SECONDS):
        ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, _node_ip_address="127.0.0.1")
        try:
            exec(compile(shared + ray_block, str(DOCS), "exec"), {})
        finally:
            ray.shutdown()
    assert fused_by_query("fused-ray") == runs
