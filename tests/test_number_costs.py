"""Every number a caller may give, at the bounds its row of `fanfuse.limits.LIMITS` accepts, RUNS:
not only accepted, but the call completes on small real inputs. A number is checked against its
own row; what fanfuse derives from it (the hits asked of each branch, a retriever's candidates)
must then be within the rows of what it feeds, not refused half-way. The entry points are those
of the other number tests: each numeric argument of `fanfuse.__all__` (tests/test_api_numbers.py),
each numeric flag of the parsers (tests/test_cli_numbers.py) and each numeric field of the
service's OpenAPI schema. An argument that cannot be run here says why in SLOW or NEEDS."""

from __future__ import annotations

import contextlib
import io
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import fanfuse
import pytest
from cli_process import with_flag
from fanfuse.cli import main
from fanfuse.cli._common import NumberListFlag
from fanfuse.errors import OutOfRange, TooFewQueries
from fanfuse.limits import LIMITS, Limit, derived_int
from test_api_numbers import CALLS, EXEMPT, LIST_ROWS, Context, numeric_arguments, row, taken
from test_cli_numbers import NUMERIC
from test_cli_search_options import DOCUMENTS

# The bounds that would cost minutes or gigabytes by design, not by a derived value: the work they
# ask for is what the caller asked for.
SLOW = {
    "iterations": "2**32 - 1 sign flips of a randomization test: hours, as asked",
    "heap_size": "terabytes of Tantivy's indexing buffer, as asked",
    "index_threads": "1024 indexing threads, each with Tantivy's 15 MB arena: 15 GB, as asked",
    "encoder_threads": "1024 onnxruntime threads for a 5-document corpus",
}
# How a refusal by the bound of what is there reads: the queries, the judged queries, the runs; a
# TREC file cannot hold a fused run of 0 hits a query.
BOUNDS_OF_WHAT_IS_THERE = ("at most the", "below the", "nothing to write")
# Flags whose values go to a process or a server this test does not start.
NEEDS = {
    "serve": "a server: its numbers are the service's fields, run below, and --port/--workers",
    "demo": "the standard library's documentation indexed and embedded: its flags are `search`'s",
    "--temperature": "an LLM server (--expander llm)",
    "--max-tokens": "an LLM server (--expander llm)",
    "--llm-timeout": "an LLM server (--expander llm)",
}


def rerank(query: str, hits: list[Any]) -> list[float]:
    return [1.0 / (1 + i) for i in range(len(hits))]


# What an argument needs beside it to do anything.
API_NEEDS: dict[str, dict[str, Any]] = {
    "return_k": {"reranker": rerank},
    "rerank_window": {"reranker": rerank},
}


def in_range(limit: Limit) -> list[int | float]:
    """The values of the row's range worth running: its closed bounds, and 0 where it is taken."""
    values: list[int | float] = []
    for bound, is_open in ((limit.low, limit.low_open), (limit.high, limit.high_open)):
        if bound is not None and not is_open:
            values.append(int(bound) if limit.kind is int else float(bound))
    if limit.admits(0) and 0 not in values:
        values.append(0 if limit.kind is int else 0.0)
    return values


def slow(limit_key: str, value: float) -> bool:
    limit = LIMITS.get(limit_key)
    return limit_key in SLOW and limit is not None and value == limit.high


def row_key(limit: Limit) -> str:
    return next(key for key, candidate in LIMITS.items() if candidate is limit)


def api_cases() -> Iterator[Any]:
    for entry, param in numeric_arguments():
        if entry in EXEMPT or param in ("a", "b", "groups", "scores"):
            continue  # data, not counts: any finite number (tests/test_api_numbers.py)
        limit = row(entry, param)
        for value in in_range(limit):
            if slow(row_key(limit), value):
                continue
            yield pytest.param(entry, param, value, id=f"{entry}-{param}={value!r}")


@pytest.fixture(scope="module")
def context(
    small_runs: dict[str, str], tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest
) -> Iterator[Context]:
    with Context(small_runs, tmp_path_factory.mktemp("number-costs"), request.getfixturevalue) as context:
        yield context


@pytest.mark.parametrize(("entry", "param", "value"), list(api_cases()))
def test_every_argument_runs_at_its_bounds(context: Context, entry: str, param: str, value: Any) -> None:
    if param == "retriever_weights":
        value = {"bm25": value} if entry.endswith("__init__") else {"TantivyRetriever": value}
    elif param in LIST_ROWS:
        value = [value, beside(LIMITS[LIST_ROWS[param]], value)]
    needs = API_NEEDS.get(param, {})
    try:
        result = CALLS[entry](context, **needs, **{param: value})
    except (fanfuse.FusionError, OutOfRange, TooFewQueries) as refused:
        # Refused only by the bound of what is there (the runs given, the judged queries).
        assert any(bound in str(refused) for bound in BOUNDS_OF_WHAT_IS_THERE), str(refused)
        return
    assert result is not None


def test_the_most_hits_a_search_returns_runs_on_every_retriever(tmp_path: Path) -> None:
    index = fanfuse.TantivyRetriever.build(DOCUMENTS, tmp_path / "idx")
    most = int(LIMITS["top_k"].high or 0)
    hits = fanfuse.MultiQueryRetriever(index).search("owls at night", top_k=most)
    assert 0 < len(hits) <= len(DOCUMENTS)
    assert hits.ids == fanfuse.MultiQueryRetriever(index).search("owls at night", top_k=len(DOCUMENTS)).ids


def test_the_most_hits_of_the_default_search_run(hybrid_dir: Path) -> None:
    # BM25, dense and dense feedback (which reads several times k candidates), with a reranker window.
    most = int(LIMITS["top_k"].high or 0)
    search = fanfuse.open_index(hybrid_dir)
    assert search.search("owls at night", top_k=most)
    assert search.search("owls at night", top_k=most, rerank_window=most, reranker=rerank)


def test_a_derived_count_is_clamped_to_the_row_it_feeds() -> None:
    most = int(LIMITS["branch_k"].high or 0)
    assert derived_int("branch_k", 2 * most) == most
    assert derived_int("branch_k", 0) == 1
    assert derived_int("branch_k", 7) == 7


# What each command needs besides its inputs for a flag to do anything.
FLAG_NEEDS = {
    "--segments": ["--method", "probfuse", "--train-runs", "{run0}", "{run1}", "--train-qrels", "{qrels}"],
    "--window": ["--method", "slidefuse", "--train-runs", "{run0}", "{run1}", "--train-qrels", "{qrels}"],
    "--phi": ["--method", "rbc"],
    "--phis": ["--method", "rbc"],
    "--sigma": ["--method", "logn_isr"],
    "--sigmas": ["--method", "logn_isr"],
    "--gamma": ["--method", "combgmnz"],
    "--gammas": ["--method", "combgmnz"],
    "--segment-counts": ["--method", "probfuse"],
    "--windows": ["--method", "slidefuse"],
    "--partitions": ["--engine", "dask"],
    "eval --alpha": ["--test", "fisher"],
    "eval --seed": ["--test", "fisher"],
    "eval --iterations": ["--test", "fisher"],
    # The rerank reads the vectors a hybrid index stores.
    "--mmr-lambda": ["--rerank", "mmr", "--index", "{dense_index}"],
}


def command_line(command: str, flag: str, text: str, paths: dict[str, str]) -> list[str]:
    inputs = {
        "fuse": [paths["run0"], paths["run1"], "-o", paths["output"]],
        "eval": [paths["run0"], paths["run1"], "--qrels", paths["qrels"]],
        "tune": [paths["run0"], paths["run1"], "--qrels", paths["qrels"]],
        "search": ["owls at night", "--index", paths["index"]],
    }[command]
    needs = FLAG_NEEDS.get(f"{command} {flag}", FLAG_NEEDS.get(flag, []))
    needs = [part.format(**paths) for part in needs]
    if "--index" in needs:  # the index the flag needs, in place of the plain one (given once)
        inputs = with_flag(inputs, "--index", [needs[needs.index("--index") + 1]])
        needs = needs[: needs.index("--index")] + needs[needs.index("--index") + 2 :]
    return [command, *inputs, *needs, flag, text]


def beside(limit: Limit, value: Any) -> Any:
    """An ordinary value the row takes, other than `value`: a level list refuses one given twice."""
    for candidate in (taken(limit), 1, 2, 0.5):
        try:
            limit.check(candidate, "level")
        except (TypeError, ValueError):
            continue
        if candidate != value:
            return candidate
    raise AssertionError(f"no second value for {limit}")


def cli_cases() -> Iterator[Any]:
    for command, flag, kind in NUMERIC:
        if command in NEEDS or flag in NEEDS:
            continue
        limit = kind.limit
        for value in in_range(limit):
            if slow(row_key(limit), value):
                continue
            text = str(value)
            if isinstance(kind, NumberListFlag):
                text = f"{value},{beside(limit, value)}"  # a list: the bound beside an ordinary value
            yield pytest.param(command, flag, text, id=f"{command} {flag}={text}")
    # `search --top-k` takes up to the most hits a search returns (0: as many), past its row's.
    for text in ("0", str(int(LIMITS["top_k"].high or 0))):
        yield pytest.param("search", "--top-k", text, id=f"search --top-k={text} (the hits)")


@pytest.fixture(scope="module")
def paths(small_runs: dict[str, str], tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    directory = tmp_path_factory.mktemp("cli-number-costs")
    fanfuse.TantivyRetriever.build(DOCUMENTS, directory / "idx")
    dense = directory / "dense-idx"
    fanfuse.open_index(fanfuse.TantivyRetriever.build(DOCUMENTS, dense), dense=True).close()
    paths = {"index": str(directory / "idx"), "dense_index": str(dense), "output": str(directory / "out")}
    return {**small_runs, **paths}


@pytest.mark.parametrize(("command", "flag", "text"), list(cli_cases()))
def test_every_flag_runs_at_its_bounds(command: str, flag: str, text: str, paths: dict[str, str]) -> None:
    Path(paths["output"]).unlink(missing_ok=True)
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(command_line(command, flag, text, paths))
    message = err.getvalue()
    if code == 2 and any(bound in message for bound in BOUNDS_OF_WHAT_IS_THERE):
        return  # refused by the bound of what is there (the queries, the judged queries, the runs)
    assert code == 0, message


def numeric_fields(schema: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    reference = schema["paths"]["/search"]["post"]["requestBody"]["content"]["application/json"]["schema"]
    name = reference["$ref"].rsplit("/", 1)[1]
    for field, node in schema["components"]["schemas"][name]["properties"].items():
        for part in node.get("anyOf", [node]):
            if part.get("type") in ("integer", "number"):
                yield field, part


def test_every_numeric_field_of_the_service_runs_at_its_bounds(tmp_path: Path) -> None:
    pytest.importorskip("fastapi")
    pytest.importorskip("uvicorn")
    import httpx
    from service_server import serve_command

    # An index with its vectors stored, so that every field runs, the rerank's included.
    directory = tmp_path / "idx"
    fanfuse.open_index(fanfuse.TantivyRetriever.build(DOCUMENTS, directory), dense=True).close()
    with serve_command("--index", str(directory)) as (url, process):
        schema = httpx.get(f"{url}/openapi.json").json()
        fields = list(numeric_fields(schema))
        assert {field for field, _ in fields} >= {"top_k", "max_variants", "rrf_k", "phi", "sigma", "gamma"}
        with httpx.Client(base_url=url, timeout=120) as client:
            for field, node in fields:
                for bound in [node[key] for key in ("minimum", "maximum") if key in node]:
                    value = int(bound) if node["type"] == "integer" else bound
                    body = {"query": "owls at night", field: value}
                    if field in ("phi", "sigma", "gamma"):
                        body["method"] = {"phi": "rbc", "sigma": "logn_isr", "gamma": "combgmnz"}[field]
                    if field == "mmr_lambda":
                        body["rerank"] = "mmr"
                    answer = client.post("/search", json=body)
                    assert answer.status_code == 200, (field, value, answer.text[:300])
        assert process.poll() is None


PEAK_OF_READ = """
import sys
from pathlib import Path
from fanfuse._core._internal import read_run_block
summary, batches = read_run_block(sys.argv[1], partitions=int(sys.argv[2]))
assert len(batches) == int(sys.argv[2]) and summary[1] == 600
status = Path("/proc/self/status").read_text()
print(next(line for line in status.splitlines() if line.startswith("VmHWM:")).split()[1])
"""


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads the peak memory in /proc")
def test_a_block_costs_its_rows_whatever_the_partitions(tmp_path: Path) -> None:
    # Each partition reserved room for its share of rows (about 64 KB): 100,000 partitions of this
    # 600-line file took 5.8 GB.
    import subprocess
    import sys

    path = tmp_path / "run.trec"
    path.write_text("".join(f"q{i % 50} Q0 d{i} {i + 1} 1.0 t\n" for i in range(600)), encoding="utf-8")

    def peak_kib(partitions: int) -> int:
        command = [sys.executable, "-c", PEAK_OF_READ, str(path), str(partitions)]
        return int(subprocess.run(command, capture_output=True, text=True, check=True).stdout)

    most = int(LIMITS["partitions"].high or 0)
    grown_mb = (peak_kib(most) - peak_kib(1)) / 1024
    assert grown_mb < 100, f"{most} partitions took {grown_mb:.0f} MB more than one"
    with pytest.raises(fanfuse.OutOfRange, match=f"partitions must be an int from 1 to {most} "):
        fanfuse._core._internal.read_run_block(str(path), partitions=most + 1)


def test_the_dask_graph_grows_linearly_with_the_partitions(tmp_path: Path) -> None:
    pytest.importorskip("dask")
    from dask.delayed import delayed
    from dask_inputs import write_runs
    from fanfuse import FusionOptions
    from fanfuse.dask import fused_partitions

    runs = write_runs(tmp_path, 7, interleaved=False, queries=120)
    sizes = {}
    for partitions in (30, 120):
        fused, ranges = fused_partitions(
            runs, options=FusionOptions(top_k=10), partitions=partitions, ranges=None
        )
        assert ranges == 3  # one per input block (one block per run): not one per partition
        sizes[partitions] = len(dict(delayed(list)(fused).__dask_graph__()))
    # Reading 3 blocks, their batches by partition, and a few tasks a partition: linear in both.
    assert sizes[120] - sizes[30] <= (120 - 30) * (3 + 4), sizes


def command_parser(command: str) -> Any:
    from fanfuse.cli import build_parser, command_parsers

    return command_parsers(build_parser(command))[command]


@pytest.mark.parametrize(("command", "flag", "kind"), NUMERIC, ids=[f"{c} {f}" for c, f, _ in NUMERIC])
def test_an_error_about_a_number_passed_on_names_its_flag(command: str, flag: str, kind: Any) -> None:
    from fanfuse.cli._common import flags_by_name, named_by_flags

    parser = command_parser(command)
    name = kind.limit.name
    shared = name not in flags_by_name(parser)
    with pytest.raises(fanfuse.FusionError) as raised, named_by_flags(parser):
        raise fanfuse.FusionError(f"{name} must be at most what is there, 3 (got 4)")
    if shared:  # two flags of the command take values of that name: the message cannot choose
        assert str(raised.value).startswith(f"{name} must be")
    else:
        assert str(raised.value) == f"{flag} must be at most what is there, 3 (got 4)"


@pytest.mark.parametrize("command", ["fuse", "eval"])
def test_too_many_partitions_names_the_flag(command: str, paths: dict[str, str]) -> None:
    pytest.importorskip("dask")
    most = str(int(LIMITS["partitions"].high or 0))
    argv = command_line(command, "--partitions", most, paths)
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        assert main(argv) == 2
    expected = f"fanfuse {command}: error: --partitions must be at most the number"
    assert err.getvalue().startswith(expected), err.getvalue()
