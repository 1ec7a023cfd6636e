"""The table of limits (`fanfuse.limits`): what it says each row accepts, the core held to the rows it
checks itself, and the examples that made it: counts that sized a buffer, a NaN taken as a score
floor, an empty metric list, a Dask shuffle of more partitions than queries."""

from __future__ import annotations

import math
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import fanfuse
import pytest
import tantivy
from cli_process import CLI
from fanfuse import FusionError, OutOfRange
from fanfuse.errors import InvalidCorpus, InvalidSetting
from fanfuse.limits import LIMITS, REQUEST, Limit, check_float, check_int
from test_cli_search_options import DOCUMENTS

LISTS = [["a", "b"], ["b", "c"]]
SCORED = [[("a", 0.5), ("b", 0.25)], [("b", 1.0), ("c", 0.5)]]


@pytest.mark.parametrize(
    ("key", "accepted"),
    [
        ("top_k", "an int from 1 to 10000"),
        ("max_variants", "an int from 1 to 5"),
        ("fused_top_k", "an int >= 0"),
        ("seed", "an int from 0 to 18446744073709551615"),
        ("k", "a finite number > 0"),
        ("weight", "a finite number >= 0"),
        ("phi", "a number in (0, 1)"),
        ("sigma", "a number in [0, 1]"),
        ("gamma", "a finite number"),
        ("branch_timeout", "a number in (0, 86400]"),
    ],
)
def test_what_a_row_accepts_in_words(key: str, accepted: str) -> None:
    assert LIMITS[key].accepted() == accepted


def test_a_check_names_the_argument_and_the_type() -> None:
    with pytest.raises(TypeError, match=r"^top_k must be an int from 1 to 10000 \(got bool\)$"):
        check_int("top_k", True)
    with pytest.raises(FusionError, match=r"^weights\[2\] must be a finite number >= 0 \(got nan\)$"):
        check_float("weight", math.nan, "weights[2]")
    with pytest.raises(FusionError, match=r"^k must be a finite number > 0 \(got inf\)$"):
        check_float("k", 2**2000)  # beyond the float range: infinite
    with pytest.raises(OutOfRange, match=r"\(got an int of 1001 bits\)$"):
        check_int("seed", 2**1000)  # its thousands of digits are not printed
    assert check_int("top_k", 7) == 7 and check_float("k", 60) == 60.0


# How the core is given each value of the rows it checks itself.
CORE: dict[str, Callable[[Any], Any]] = {
    "k": lambda v: fanfuse.rrf(LISTS, k=v),
    "weight": lambda v: fanfuse.rrf(LISTS, weights=[v, 1.0]),
    "phi": lambda v: fanfuse.fuse(LISTS, method="rbc", phi=v),
    "sigma": lambda v: fanfuse.fuse(LISTS, method="logn_isr", sigma=v),
    "gamma": lambda v: fanfuse.fuse(SCORED, method="combgmnz", gamma=v),
    "fused_top_k": lambda v: fanfuse.rrf(LISTS, top_k=v),
    "threads": lambda v: fanfuse.rrf_batch([LISTS], threads=v),
    "iterations": lambda v: fanfuse.randomization_test([0.5, 0.25], [0.25, 0.5], iterations=v),
    "seed": lambda v: fanfuse.randomization_test([0.5, 0.25], [0.25, 0.5], seed=v),
}


def probes(limit: Limit) -> list[tuple[Any, bool]]:
    """(value, whether the row takes it): each bound and its nearest neighbour outside, and NaN."""
    out: list[tuple[Any, bool]] = [(math.nan, False)] if limit.kind is float else []
    for bound, is_open, direction in ((limit.low, limit.low_open, -1), (limit.high, limit.high_open, 1)):
        if bound is None:
            continue
        if limit.kind is int:
            out += [(int(bound), True), (int(bound) + direction, False)]
        else:
            out += [(float(bound), not is_open), (math.nextafter(bound, direction * math.inf), False)]
    return out


def test_the_core_takes_what_its_rows_say() -> None:
    core_rows = {key for key, limit in LIMITS.items() if limit.core}
    assert core_rows == set(CORE) | {"segments", "window"}  # those two: test_api_numbers.py
    for key, call in CORE.items():
        # The core's refusal is the row's: FusionError for a fusion option, else OutOfRange.
        refusal = FusionError if LIMITS[key].fusion_option else OutOfRange
        for value, taken in probes(LIMITS[key]):
            if taken:
                call(value)
            else:
                with pytest.raises(refusal):
                    call(value)


def test_the_request_bounds_fit_in_a_body() -> None:
    # Each bound can be reached by a body the service reads: the longest query, escaped, fits.
    assert 6 * REQUEST.query_chars < REQUEST.body_bytes
    assert REQUEST.top_k <= (LIMITS["top_k"].high or math.inf)


def test_tantivy_is_asked_for_no_more_hits_than_the_index_holds(tmp_path: Path) -> None:
    index = fanfuse.TantivyRetriever.build(DOCUMENTS, tmp_path / "idx")
    # The most a retriever may be asked for gives every match (4 of the 5 documents).
    assert index.search("owls hunt", 10_000) == index.search("owls hunt", 5)
    assert len(index.search("owls hunt", 10_000)) == 4
    # An empty corpus is refused as a mistake; an index emptied outside fanfuse still searches.
    with pytest.raises(InvalidCorpus, match="no documents to index"):
        fanfuse.TantivyRetriever.build([], tmp_path / "empty")
    writer = tantivy.Index.open(str(index.data_directory)).writer(heap_size=15_000_000, num_threads=1)
    writer.delete_all_documents()
    writer.commit()
    writer.wait_merging_threads()
    emptied = fanfuse.TantivyRetriever(tmp_path / "idx")
    assert len(emptied) == 0 and emptied.search("owls", 10_000) == []


def test_a_huge_top_k_is_an_error_not_an_abort(tmp_path: Path) -> None:
    # It aborted the process: "memory allocation of 32000000000 bytes failed" (SIGABRT).
    fanfuse.TantivyRetriever.build(DOCUMENTS, tmp_path / "idx")
    argv = [*CLI, "search", "owls", "--index", str(tmp_path / "idx"), "--no-dense", "--top-k", "1000000000"]
    result = subprocess.run(argv, capture_output=True, text=True, check=False, timeout=120)
    assert result.returncode == 2, result.stderr
    assert (
        result.stderr
        == "fanfuse search: error: --top-k must be an int from 0 to 10000, 0 keeping all (got 1000000000)\n"
    )
    with (
        fanfuse.open_index(tmp_path / "idx", dense=False) as retriever,
        pytest.raises(OutOfRange, match="top_k"),
    ):
        retriever.search("owls", top_k=10**9)


def test_a_nan_score_floor_is_refused(tmp_path: Path) -> None:
    # It was taken, and every hit was dropped: NaN compares false.
    index = fanfuse.TantivyRetriever.build(DOCUMENTS, tmp_path / "idx")
    refused = pytest.raises(OutOfRange, match=r"min_score must be a finite number \(got nan\)")
    with fanfuse.open_index(index, dense=False) as retriever, refused:
        retriever.search("owls", min_score=math.nan)


def test_an_empty_list_where_one_is_needed_is_refused(small_runs: dict[str, str]) -> None:
    run, qrels = fanfuse.read_run(small_runs["run0"]), fanfuse.read_qrels(small_runs["qrels"])
    with pytest.raises(FusionError, match="give at least one run to fuse"):
        fanfuse.fuse_runs([])  # was an empty run, where fuse_files refuses no files
    with pytest.raises(InvalidSetting, match="metrics is empty: name at least one, such as ndcg@10"):
        fanfuse.evaluate(run, qrels, metrics=[])
    with pytest.raises(InvalidSetting, match="metrics is empty"):
        fanfuse.compare([run, run], qrels, metrics=[])


def test_dask_partitions_are_at_most_the_queries(small_runs: dict[str, str]) -> None:
    pytest.importorskip("dask.dataframe")
    import fanfuse.dask

    paths = [small_runs["run0"], small_runs["run1"]]
    # It ran 60 s and took 2.5 GB for 20 queries.
    with pytest.raises(
        OutOfRange, match=r"partitions must be at most the number of queries, 6 \(got 100000\)"
    ):
        fanfuse.dask.fuse_runs(paths, partitions=100_000)
    assert len(fanfuse.dask.fuse_runs(paths, partitions=6).compute()) > 0


def test_the_options_of_the_multiquery_docs_state_the_table() -> None:
    docs = (Path(__file__).resolve().parents[1] / "docs" / "multiquery.md").read_text()
    rows = {
        line.split("|")[1].strip(): line.split("|")[3].strip()
        for line in docs[docs.index("| option | default | accepted | meaning |") :]
        .split("\n\n")[0]
        .split("\n")[2:]
    }
    for option, key in [
        ("`top_k`", "top_k"),
        ("`max_variants`", "max_variants"),
        ("`variant_weights`", "weight"),
        ("`retriever_weights`", "weight"),
        ("`branch_k`", "branch_k"),
        ("`min_score`", "min_score"),
        ("`rrf_k`", "k"),
    ]:
        assert LIMITS[key].accepted() in rows[option], option
    grouped = {
        "`reranker`, `rerank_window`, `return_k`": ["rerank_window", "return_k"],
        "`norm`, `phi`, `sigma`, `gamma`": ["phi", "sigma", "gamma"],
        "`max_concurrency`, `branch_timeout`, `max_workers` (instance)": [
            "max_concurrency",
            "branch_timeout",
            "max_workers",
        ],
    }
    for option, keys in grouped.items():
        for key in keys:
            assert LIMITS[key].accepted() in rows[option], (option, key)
