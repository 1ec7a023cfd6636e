"""`--engine dask` and `fanfuse.dask` against one process: the same fused file byte for byte, the same
queries from the Python twin, the same evaluation; errors that name the file and line and leave no
output. One real two-process `LocalCluster` (loopback only) serves the cluster tests of this module;
the others run on the threaded scheduler."""

from __future__ import annotations

import contextlib
import json
import subprocess
from collections.abc import Iterator
from pathlib import Path

import fanfuse
import pytest
from dask_inputs import COMMAND_SECONDS, python_has_no, time_limit, write_runs
from dask_inputs import fanfuse as run_command

dd = pytest.importorskip("dask.dataframe", reason="the dask extra is not installed")
distributed = pytest.importorskip("distributed", reason="the dask extra is not installed")
pd = pytest.importorskip("pandas")
pyarrow = pytest.importorskip("pyarrow")
import fanfuse.dask  # noqa: E402


@pytest.fixture(scope="module")
def cluster() -> Iterator[str]:
    """Two worker processes on 127.0.0.1, no dashboard; the address of their scheduler."""
    with (
        time_limit(),
        fanfuse_dask_config(),
        distributed.LocalCluster(
            n_workers=2,
            threads_per_worker=1,
            processes=True,
            host="127.0.0.1",
            dashboard_address=None,
            worker_dashboard_address=None,
        ) as local,
    ):
        yield local.scheduler_address


def fanfuse_dask_config() -> contextlib.AbstractContextManager[None]:
    import dask

    return dask.config.set(
        {"distributed.comm.timeouts.connect": "20s", "distributed.comm.timeouts.tcp": "60s"}
    )


@pytest.fixture(scope="module")
def client(cluster: str) -> Iterator[object]:
    with distributed.Client(cluster, timeout=30) as connected:
        yield connected


def single_and_dask(
    tmp_path: Path, paths: list[str], *options: str, scheduler: str | None
) -> tuple[bytes, bytes]:
    one, many = tmp_path / "one.trec", tmp_path / "many.trec"
    assert run_command("fuse", *paths, "-o", str(one), *options)[0] == 0
    engine = ["--engine", "dask", "--partitions", "3", *(["--scheduler", scheduler] if scheduler else [])]
    code, _, stderr = run_command("fuse", *paths, "-o", str(many), *options, *engine)
    assert code == 0, stderr
    return one.read_bytes(), many.read_bytes()


@pytest.mark.parametrize("interleaved", [False, True], ids=["grouped-in-other-orders", "interleaved"])
def test_the_fused_file_is_the_one_process_file_on_a_cluster(
    tmp_path: Path, cluster: str, interleaved: bool
) -> None:
    paths = write_runs(tmp_path, seed=5 + interleaved, interleaved=interleaved)
    options = ["--method", "combmnz", "--top-k", "7", "--weights", "1,0.5,2"]
    one, many = single_and_dask(tmp_path, paths, *options, scheduler=cluster)
    assert one.count(b"\n") > 100
    assert many == one


def test_the_threaded_scheduler_writes_the_same_file(tmp_path: Path) -> None:
    paths = write_runs(tmp_path, seed=11, interleaved=True)
    one, many = single_and_dask(tmp_path, paths, "--rank-from", "file", scheduler=None)
    assert many == one


@pytest.mark.parametrize(
    "method", [("rbc", "--phi", "0.5"), ("logn_isr", "--sigma", "0.3"), ("combgmnz", "--gamma", "2")]
)
def test_a_method_parameter_fuses_on_dask_as_in_one_process(tmp_path: Path, method: tuple[str, ...]) -> None:
    name, flag, value = method
    paths = write_runs(tmp_path, seed=12, interleaved=True)
    one, many = single_and_dask(tmp_path, paths, "--method", name, flag, value, scheduler=None)
    default_one, _ = single_and_dask(tmp_path, paths, "--method", name, scheduler=None)
    assert many == one and one != default_one  # the parameter reached both, and it changes the run
    expected = tmp_path / "api.trec"
    parameter = {flag.lstrip("-"): float(value)}
    fanfuse.fuse_files(paths, str(expected), method=name, **parameter)
    with threads():
        fused = fanfuse.dask.fuse_runs(paths, method=name, partitions=3, **parameter).compute()
    got: dict[str, list[tuple[str, int, float]]] = {}
    for q, d, r, s in fused.itertuples(index=False):
        got.setdefault(q, []).append((d, r, s))
    assert got == columns_of(str(expected))


def threads() -> contextlib.AbstractContextManager[None]:
    """This process's threads, whatever client the cluster tests made the default."""
    from fanfuse.dask.command import scheduler

    return scheduler(None)


def columns_of(path: str) -> dict[str, list[tuple[str, int, float]]]:
    qids, docids, ranks, scores = fanfuse.read_run(path, rank_from="file").columns()
    out: dict[str, list[tuple[str, int, float]]] = {}
    for q, d, r, s in zip(qids, docids, ranks, scores, strict=True):
        out.setdefault(q, []).append((d, r, s))
    return out


def test_the_python_twin_gives_each_query_as_one_process_from_files_and_frames(
    tmp_path: Path, client: object
) -> None:
    paths = write_runs(tmp_path, seed=3, interleaved=True)
    expected = tmp_path / "one.trec"
    fanfuse.fuse_files(paths, str(expected), method="rrf", k=20)
    # The second run as a Dask DataFrame of three partitions (its line order kept).
    qids, docids, ranks, scores = fanfuse.read_run(paths[1], rank_from="file").columns()
    frame = pd.DataFrame({"qid": qids, "docid": docids, "rank": ranks, "score": scores})
    inputs = [paths[0], dd.from_pandas(frame, npartitions=3), paths[2]]
    fused = fanfuse.dask.fuse_runs(inputs, k=20, block_bytes=2000, partitions=4)
    result = client.compute(fused).result(timeout=COMMAND_SECONDS)  # type: ignore[attr-defined]
    got: dict[str, list[tuple[str, int, float]]] = {}
    for q, d, r, s in result.itertuples(index=False):
        got.setdefault(q, []).append((d, r, s))
    assert got == columns_of(str(expected))


def test_a_malformed_line_fails_the_job_naming_file_and_line_and_leaves_no_output(
    tmp_path: Path, cluster: str
) -> None:
    paths = write_runs(tmp_path, seed=8, interleaved=True)
    lines = Path(paths[2]).read_text().splitlines(keepends=True)
    lines[len(lines) * 2 // 3] = "q-bad Q0 doc 1 not-a-number gen\n"
    Path(paths[2]).write_text("".join(lines))
    one = run_command("fuse", *paths, "-o", str(tmp_path / "one.trec"))
    assert one[0] == 2 and f"{paths[2]}:{len(lines) * 2 // 3 + 1}:" in one[2]
    before = sorted(p.name for p in tmp_path.iterdir())
    many = run_command(
        "fuse", *paths, "-o", str(tmp_path / "many.trec"), "--engine", "dask", "--scheduler", cluster
    )
    assert many == one
    assert sorted(p.name for p in tmp_path.iterdir()) == before  # no output, no temporary left


def test_an_error_in_a_later_block_or_a_frame_names_its_line_or_partition_and_row(tmp_path: Path) -> None:
    paths = write_runs(tmp_path, seed=9, interleaved=False)
    lines = Path(paths[0]).read_text().splitlines(keepends=True)
    lines[-3] = "q1 Q0 doc 1 0.5\n"
    Path(paths[0]).write_text("".join(lines))
    with pytest.raises(fanfuse.FusionError) as one:
        fanfuse.fuse_files(paths, str(tmp_path / "one.trec"))
    with pytest.raises(fanfuse.FusionError) as many, threads():
        fanfuse.dask.fuse_runs(paths, block_bytes=256).compute()
    assert str(many.value) == str(one.value) and f"{paths[0]}:{len(lines) - 2}:" in str(many.value)
    frame = pd.DataFrame(
        {"qid": ["q1", "q1", "q2"], "docid": ["a", "b", "d"], "score": [1.0, float("nan"), 2.0]}
    )
    bad_row = r"^runs\[1\] partition 0 row 2: column 'score' holds NaN"
    with pytest.raises(fanfuse.FusionError, match=bad_row), threads():
        fanfuse.dask.fuse_runs([paths[1], dd.from_pandas(frame, npartitions=2)]).compute()


@pytest.mark.parametrize("column", ["score", "rank"])
def test_a_frame_whose_number_column_holds_text_is_refused_naming_it(tmp_path: Path, column: str) -> None:
    paths = write_runs(tmp_path, seed=9, interleaved=False)
    frame = pd.DataFrame({"qid": ["q1", "q2"], "docid": ["a", "b"], column: ["1", "x"]})
    refused = rf"^runs\[1\]: column '{column}' has type .*; accepted: an integer or floating"
    with pytest.raises(fanfuse.FusionError, match=refused), threads():
        fanfuse.dask.fuse_runs([paths[1], dd.from_pandas(frame, npartitions=1)]).compute()


def as_parquet(path: str) -> str:
    """The run's lines as a Parquet table, in line order, several row groups."""
    pq = pytest.importorskip("pyarrow.parquet")
    fields = [line.split() for line in Path(path).read_text().splitlines()]
    records = [f for f in fields if f and not f[0].startswith("#")]
    table = pd.DataFrame(
        {
            "q_id": [f[0] for f in records],
            "doc_id": [f[2] for f in records],
            "rank": [int(f[3]) for f in records],
            "score": [float(f[4]) for f in records],
        }
    )
    target = path.replace(".trec", ".parquet")
    pq.write_table(pyarrow.Table.from_pandas(table, preserve_index=False), target, row_group_size=64)
    return target


def test_parquet_runs_fuse_to_the_file_of_the_same_runs_as_trec(tmp_path: Path) -> None:
    paths = write_runs(tmp_path, seed=12, interleaved=True)
    mixed = [as_parquet(paths[0]), paths[1], as_parquet(paths[2])]
    one = tmp_path / "one.trec"
    assert run_command("fuse", *paths, "-o", str(one), "--rank-from", "file")[0] == 0
    code, _, stderr = run_command(
        "fuse", *mixed, "-o", str(tmp_path / "many.trec"), "--engine", "dask", "--rank-from", "file"
    )
    assert code == 0, stderr
    assert (tmp_path / "many.trec").read_bytes() == one.read_bytes()


def test_the_table_column_names_are_those_the_core_reads() -> None:
    from fanfuse._core import RUN_TABLE_COLUMNS, runs_from_table

    for qid in RUN_TABLE_COLUMNS["qid"]:
        for docid in RUN_TABLE_COLUMNS["docid"]:
            table = pyarrow.table({qid: ["q"], docid: ["d"], "score": [1.0]})
            assert runs_from_table(table)[0].columns()[:2] == (["q"], ["d"])
    with pytest.raises(fanfuse.FusionError):
        runs_from_table(pyarrow.table({"query": ["q"], "docid": ["d"], "score": [1.0]}))


def test_eval_on_a_cluster_prints_what_one_process_prints(tmp_path: Path, cluster: str) -> None:
    paths = write_runs(tmp_path, seed=4, interleaved=True, queries=40)
    qrels = str(tmp_path / "qrels.txt")
    metrics = ["--metrics", "ndcg@5,map,recall@10,P_5", "--json", "--baseline", "1", "--test", "fisher"]
    metrics += ["--iterations", "200"]
    one = run_command("eval", *paths, "--qrels", qrels, *metrics)
    many = run_command("eval", *paths, "--qrels", qrels, *metrics, "--engine", "dask", "--scheduler", cluster)
    assert one[0] == 0, one[2]
    assert many[:2] == one[:2], many[2]
    assert json.loads(many[1])["runs"][1]["queries"] > 20


def test_without_the_extra_the_engine_is_a_one_line_error_naming_it(tmp_path: Path) -> None:
    paths = write_runs(tmp_path, seed=1, interleaved=False, runs=2, queries=5)
    done = subprocess.run(
        [*python_has_no("dask"), "fuse", *paths, "-o", "out.trec", "--engine", "dask"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=COMMAND_SECONDS,
        check=False,
    )
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and "pip install 'fanfuse[dask]'" in done.stderr
    assert not (tmp_path / "out.trec").exists()


def test_engine_options_without_the_engine_are_refused(tmp_path: Path) -> None:
    paths = write_runs(tmp_path, seed=1, interleaved=False, runs=2, queries=5)
    code, _, stderr = run_command("fuse", *paths, "-o", str(tmp_path / "out.trec"), "--partitions", "4")
    assert code == 2 and "--engine dask" in stderr
