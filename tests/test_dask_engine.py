"""`--engine dask` and `fanfuse.dask` against one process: the same fused file byte for byte for every
option of `fanfuse fuse` (enumerated from its parser), every method and every run format, with the
runs cut into many blocks; the same queries from the Python API, the same evaluation; errors that
name the file and line and leave no output. One real two-process `LocalCluster` (loopback only)
serves the cluster tests of this module; the others run on the threaded scheduler."""

from __future__ import annotations

import argparse
import contextlib
import json
import subprocess
from collections.abc import Iterator
from pathlib import Path

import fanfuse
import pytest
from dask_inputs import COMMAND_SECONDS, FORMATS, columns_of, python_has_no, time_limit, write_runs
from dask_inputs import fanfuse as run_command
from fanfuse.cli import build_parser

dd = pytest.importorskip("dask.dataframe", reason="the dask extra is not installed")
distributed = pytest.importorskip("distributed", reason="the dask extra is not installed")
pd = pytest.importorskip("pandas")
pyarrow = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")
import fanfuse.dask  # noqa: E402
import fanfuse.dask.command  # noqa: E402

# Small blocks, so that every run file is read by several tasks and groups cross block boundaries.
BLOCK_BYTES = 700


@pytest.fixture(autouse=True)
def small_blocks(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(fanfuse.dask.command, "BLOCK_BYTES", BLOCK_BYTES)


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


def threads() -> contextlib.AbstractContextManager[None]:
    """This process's threads, whatever client the cluster tests made the default."""
    return fanfuse.dask.command.scheduler(None)


def one_and_dask(
    tmp_path: Path, paths: list[str], *options: str, engine: tuple[str, ...] = ("--partitions", "3")
) -> tuple[tuple[int, str, bytes | None], tuple[int, str, bytes | None]]:
    """`fanfuse fuse` in one process and with `--engine dask` and the `engine` options: exit code,
    stderr and the output."""
    results = []
    for chosen in ([], ["--engine", "dask", *engine]):
        output = tmp_path / ("dask.out" if chosen else "one.out")
        output.unlink(missing_ok=True)
        code, _, stderr = run_command("fuse", *paths, "-o", str(output), *options, *chosen)
        results.append((code, stderr, output.read_bytes() if output.exists() else None))
    return results[0], results[1]


def assert_same_file(
    tmp_path: Path, paths: list[str], *options: str, engine: tuple[str, ...] = ("--partitions", "3")
) -> None:
    one, many = one_and_dask(tmp_path, paths, *options, engine=engine)
    assert one[0] == 0, one[1]
    assert many[0] == 0, many[1]
    assert one[2] and one[2].count(b"\n") > 20
    assert many[2] == one[2], options


# --- the runs in every format the readers take -------------------------------------------------


@pytest.mark.parametrize("interleaved", [False, True], ids=["grouped-in-other-orders", "interleaved"])
@pytest.mark.parametrize("form", sorted(FORMATS))
def test_every_run_format_fuses_to_the_one_process_file(tmp_path: Path, form: str, interleaved: bool) -> None:
    paths = write_runs(tmp_path, seed=21 + interleaved, interleaved=interleaved)
    converted = [FORMATS[form](p, Path(p).with_name(f"{Path(p).stem}-{form}")) for p in paths]
    assert_same_file(tmp_path, converted, "--rank-from", "file")
    assert_same_file(tmp_path, [converted[0], paths[1], converted[2]])  # mixed with plain TREC


# --- every option of `fanfuse fuse`, from its parser ----------------------------------------------


def fuse_options() -> dict[str, object]:
    parser = build_parser("fuse")
    subparsers = next(a for a in parser._actions if a.dest == "command")
    # Not the renamed spellings (their dest is SUPPRESS): they only exit naming the new flag.
    return {
        a.dest: a for a in subparsers.choices["fuse"]._actions if a.dest not in ("help", argparse.SUPPRESS)
    }


# What each option of `fanfuse fuse` is tried with: argument lists that fuse alike in both engines,
# and those the Dask engine refuses (with the reason it names). Every option of the parser must be
# here, so that a new one is tried too.
SAME_FILE: dict[str, list[list[str]]] = {
    "runs": [[]],
    "output": [[]],
    "method": [["--method", m] for m in fanfuse.METHODS],
    "norm": [["--method", "combsum", "--norm", n] for n in fanfuse.NORMS],
    "rrf_k": [["--rrf-k", "7.5"]],
    "weights": [["--weights", "1,0.25,2"], ["--method", "wsum", "--weights", "0,1,3"]],
    "phi": [["--method", "rbc", "--phi", "0.5"]],
    "sigma": [["--method", "logn_isr", "--sigma", "0.3"]],
    "gamma": [["--method", "combgmnz", "--gamma", "2"]],
    "top_k": [["--top-k", "0"], ["--top-k", "3"]],
    "rank_from": [["--rank-from", r] for r in fanfuse.RANK_SOURCES],
    "run_format": [["--run-format", "trec"]],
    "tag": [["--tag", "mine"]],
    "threads": [["--threads", "2"]],
}
# The engine's own options, given to the Dask side only (--scheduler: the cluster tests).
ENGINE: dict[str, list[tuple[str, ...]]] = {
    "engine": [()],
    "partitions": [("--partitions", "1"), ("--partitions", "7")],
    "scheduler": [],
}
REFUSED: dict[str, tuple[list[str], str]] = {
    "run_format": (["--run-format", "mtrag"], "--engine dask writes TREC runs only"),
    "train_runs": (
        ["--method", "probfuse", "--train-runs", "R0", "R1", "R2", "--train-qrels", "Q"],
        "trained",
    ),
    "train_qrels": (
        ["--method", "probfuse", "--train-runs", "R0", "R1", "R2", "--train-qrels", "Q"],
        "trained",
    ),
    "model": (["--method", "probfuse", "--model", "MODEL"], "trained"),
    # The Dask engine writes TREC runs only, which have no collection.
    "collection": (["--collection", "other"], "--collection goes with --run-format mtrag"),
    "save_model": (
        [
            "--method",
            "probfuse",
            "--train-runs",
            "R0",
            "R1",
            "R2",
            "--train-qrels",
            "Q",
            "--save-model",
            "M2",
        ],
        "trained",
    ),
    "segments": (
        ["--method", "probfuse", "--segments", "5", "--train-runs", "R0", "R1", "R2", "--train-qrels", "Q"],
        "trained",
    ),
    "window": (
        ["--method", "slidefuse", "--window", "2", "--train-runs", "R0", "R1", "R2", "--train-qrels", "Q"],
        "trained",
    ),
}
# Options both engines refuse alike (none at present: a choice that can never work is not listed).
BOTH_REFUSE: dict[str, list[str]] = {}


def test_every_option_of_fuse_is_tried() -> None:
    untried = set(fuse_options()) - set(SAME_FILE) - set(ENGINE) - set(REFUSED) - set(BOTH_REFUSE)
    assert not untried, f"say how --engine dask takes {sorted(untried)}"


@pytest.mark.parametrize(
    "arguments",
    [a for options in SAME_FILE.values() for a in options if a],
    ids=lambda a: " ".join(a),
)
def test_each_option_fuses_on_dask_to_the_one_process_file(tmp_path: Path, arguments: list[str]) -> None:
    paths = write_runs(tmp_path, seed=31, interleaved=False)
    assert_same_file(tmp_path, paths, *arguments)


@pytest.mark.parametrize("engine", [e for options in ENGINE.values() for e in options], ids=" ".join)
def test_each_engine_option_fuses_to_the_one_process_file(tmp_path: Path, engine: tuple[str, ...]) -> None:
    paths = write_runs(tmp_path, seed=33, interleaved=True)
    assert_same_file(tmp_path, paths, engine=engine)


def test_what_dask_refuses_it_refuses_naming_why_and_writes_nothing(tmp_path: Path) -> None:
    paths = write_runs(tmp_path, seed=32, interleaved=False, runs=3, queries=20)
    model = tmp_path / "model.json"
    code, _, stderr = run_command(
        "fuse", *paths, "-o", str(tmp_path / "m.trec"), "--method", "probfuse",
        "--train-runs", *paths, "--train-qrels", str(tmp_path / "qrels.txt"), "--save-model", str(model),
    )  # fmt: skip
    assert code == 0, stderr
    names = {
        "R0": paths[0],
        "R1": paths[1],
        "R2": paths[2],
        "Q": str(tmp_path / "qrels.txt"),
        "MODEL": str(model),
        "M2": str(tmp_path / "m2.json"),
    }
    for arguments, reason in REFUSED.values():
        given = [names.get(a, a) for a in arguments]
        output = tmp_path / "dask.out"
        code, _, stderr = run_command("fuse", *paths, "-o", str(output), *given, "--engine", "dask")
        assert code == 2 and reason in stderr and stderr.count("\n") == 1, (given, stderr)
        assert not output.exists() and not Path(names["M2"]).exists()  # refused before any work
    for arguments in BOTH_REFUSE.values():
        one, many = one_and_dask(tmp_path, paths, *arguments)
        assert one[0] == many[0] == 2 and one[1] == many[1] and one[2] is many[2] is None


# --- on a real cluster ----------------------------------------------------------------------------


@pytest.mark.parametrize("interleaved", [False, True], ids=["grouped-in-other-orders", "interleaved"])
def test_the_fused_file_is_the_one_process_file_on_a_cluster(
    tmp_path: Path, cluster: str, interleaved: bool
) -> None:
    paths = write_runs(tmp_path, seed=5 + interleaved, interleaved=interleaved)
    options = ["--method", "combmnz", "--top-k", "7", "--weights", "1,0.5,2"]
    assert_same_file(tmp_path, paths, *options, engine=("--scheduler", cluster, "--partitions", "3"))


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


def test_a_duplicate_found_when_fusing_names_the_line_in_the_whole_file(tmp_path: Path) -> None:
    paths = write_runs(tmp_path, seed=9, interleaved=False)
    lines = Path(paths[1]).read_text().splitlines(keepends=True)
    at = next(i for i in range(len(lines) - 1, 0, -1) if lines[i].split()[:1] == lines[i - 1].split()[:1])
    fields = lines[at].split()
    fields[2] = lines[at - 1].split()[2]  # the document of the line before, for the same query
    lines[at] = " ".join(fields) + "\n"
    Path(paths[1]).write_text("".join(lines))
    one, many = one_and_dask(tmp_path, paths)
    assert one[0] == many[0] == 2 and many[1] == one[1] and f"{paths[1]}:{at + 1}:" in one[1]


def test_the_python_api_gives_each_query_as_one_process_from_files_and_frames(
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
    assert list(result.columns) == ["qid", "docid", "rank", "score"]
    got: dict[str, list[tuple[str, int, float]]] = {}
    for q, d, r, s in result.itertuples(index=False):
        got.setdefault(q, []).append((d, r, s))
    assert got == columns_of(str(expected))


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
    frame = pd.DataFrame({"qid": ["q1", "q1", "q2"], "docid": ["a", "b", "d"], "score": [1.0, None, 2.0]})
    bad_row = r"^runs\[1\] partition 0:2: column 'score' is null"
    with pytest.raises(fanfuse.FusionError, match=bad_row), threads():
        fanfuse.dask.fuse_runs([paths[1], dd.from_pandas(frame, npartitions=2)]).compute()


@pytest.mark.parametrize("column", ["score", "rank"])
def test_a_frame_whose_number_column_holds_text_is_refused_naming_it(tmp_path: Path, column: str) -> None:
    paths = write_runs(tmp_path, seed=9, interleaved=False)
    frame = pd.DataFrame({"qid": ["q1", "q2"], "docid": ["a", "b"], column: ["1", "x"]})
    refused = (
        rf"^runs\[1\] partition 0: column '{column}' has Arrow type .*; accepted: an integer or floating"
    )
    with pytest.raises(fanfuse.FusionError, match=refused), threads():
        fanfuse.dask.fuse_runs([paths[1], dd.from_pandas(frame, npartitions=1)]).compute()


@pytest.mark.parametrize("form", ["trec", "mtrag.gz", "parquet"])
def test_eval_on_dask_prints_what_one_process_prints(tmp_path: Path, form: str) -> None:
    paths = write_runs(tmp_path, seed=4, interleaved=True, queries=40)
    converted = [FORMATS[form](p, Path(p).with_name(f"{Path(p).stem}-{form}")) for p in paths]
    qrels = str(tmp_path / "qrels.txt")
    metrics = ["--metrics", "ndcg@5,map,recall@10,P_5", "--json", "--test", "fisher", "--iterations", "200"]
    one = run_command("eval", *converted, "--qrels", qrels, *metrics)
    many = run_command(
        "eval", *converted, "--qrels", qrels, *metrics, "--engine", "dask", "--partitions", "3"
    )
    assert one[0] == 0, one[2]
    assert many[:2] == one[:2], many[2]
    assert json.loads(many[1])["runs"][1]["queries"] > 20


def test_eval_on_a_cluster_prints_what_one_process_prints(tmp_path: Path, cluster: str) -> None:
    paths = write_runs(tmp_path, seed=4, interleaved=True, queries=40)
    qrels = str(tmp_path / "qrels.txt")
    metrics = [
        "--metrics",
        "ndcg@5,map",
        "--json",
        "--baseline",
        "1",
        "--test",
        "fisher",
        "--iterations",
        "200",
    ]
    one = run_command("eval", *paths, "--qrels", qrels, *metrics)
    many = run_command("eval", *paths, "--qrels", qrels, *metrics, "--engine", "dask", "--scheduler", cluster)
    assert one[0] == 0, one[2]
    assert many[:2] == one[:2], many[2]


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


def test_fuse_runs_takes_the_one_options_value_or_its_keywords(tmp_path: Path) -> None:
    """`fanfuse.dask.fuse_runs` takes the fusion options as the core's entry points do: one
    `FusionOptions` value or its keywords, the same result either way, never both at once."""
    paths = write_runs(tmp_path, seed=5, interleaved=False)
    options = fanfuse.FusionOptions(method="combmnz", norm="min-max", top_k=5)
    by_value = fanfuse.dask.fuse_runs(paths, options=options, partitions=2).compute()
    by_keywords = fanfuse.dask.fuse_runs(
        paths, method="combmnz", norm="min-max", top_k=5, partitions=2
    ).compute()
    assert by_value.equals(by_keywords)
    assert len(by_value) > 0
    assert by_value.groupby("qid").size().max() == 5
    with pytest.raises(TypeError, match="not both"):
        fanfuse.dask.fuse_runs(paths, options=options, k=10)
    with pytest.raises(fanfuse.FusionError, match="k must be"):
        fanfuse.dask.fuse_runs(paths, k=-1)
