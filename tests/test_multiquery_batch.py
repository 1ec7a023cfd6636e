"""A retriever with `search_batch` gets all its branches of a search in one call, by `search` and
`asearch` alike; each branch is still reported, checked and failed on its own."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pytest
from fanfuse.multiquery import MultiQueryRetriever, StaticExpander
from fanfuse.multiquery.plain_text import PlainTextQueries
from fanfuse.retrievers import Hit
from multiquery_toys import Gate, KeywordRetriever

QUESTION = "rank fusion of lists"
VARIANTS = {QUESTION: ["fusion lists", "dense queries", "bm25 terms"]}


@dataclass
class BatchKeywordRetriever(KeywordRetriever):
    """KeywordRetriever's ranking, also as `search_batch`; records each batch and its thread."""

    name: str = "batch"
    batches: list[list[str]] = field(default_factory=list)
    threads: list[int] = field(default_factory=list)
    broken: str | None = None  # "length": a list too few; "hit": the second list holds a bad hit

    def search_batch(
        self, queries: Sequence[str], k: int, filter: Mapping[str, Any] | None = None
    ) -> list[Any]:
        self.batches.append(list(queries))
        self.threads.append(threading.get_ident())
        if self.gate is not None:
            self.gate.pass_through()
        lists: list[Any] = [self.rank(query, k, filter) for query in queries]
        if self.broken == "length":
            return lists[:-1]
        if self.broken == "hit":
            lists[1] = [Hit("ok", 1.0), {"no": "id"}]
        return lists


def searcher(*retrievers: Any, **options: Any) -> MultiQueryRetriever:
    return MultiQueryRetriever(list(retrievers), expander=StaticExpander(VARIANTS), max_variants=4, **options)


def searched(retriever: MultiQueryRetriever, use_async: bool, **options: Any) -> Any:
    if use_async:
        return asyncio.run(retriever.asearch(QUESTION, **options))
    return retriever.search(QUESTION, **options)


@pytest.mark.parametrize("use_async", [False, True])
def test_one_call_per_search_and_the_same_result_as_one_call_per_variant(use_async: bool) -> None:
    batched, plain = BatchKeywordRetriever(), KeywordRetriever(name="batch")
    result = searched(searcher(batched), use_async)
    expected = searched(searcher(plain), use_async)
    assert batched.batches == [[QUESTION, *VARIANTS[QUESTION]]] and batched.calls == []
    assert [(h.id, h.score) for h in result.hits] == [(h.id, h.score) for h in expected.hits]
    assert [h.provenance for h in result.hits] == [h.provenance for h in expected.hits]
    reports = result.diagnostics.branches
    assert [b.variant_index for b in reports] == [0, 1, 2, 3]
    assert len({(b.started_ms, b.latency_ms) for b in reports}) == 1  # one call, reported per branch
    assert [b.hits for b in reports] == [b.hits for b in expected.diagnostics.branches]


@pytest.mark.parametrize("use_async", [False, True])
def test_each_retriever_batches_its_own_branches_beside_unbatched_ones(use_async: bool) -> None:
    batched, other = BatchKeywordRetriever(), KeywordRetriever(name="other")
    result = searched(searcher(batched, other), use_async, filter={"topic": "fusion"})
    assert batched.batches == [[QUESTION, *VARIANTS[QUESTION]]]
    assert sorted(c.query for c in other.calls) == sorted([QUESTION, *VARIANTS[QUESTION]])
    assert all(c.filter == {"topic": "fusion"} for c in other.calls)
    assert {h.id for h in result.hits} <= {"rrf", "borda", "combsum", "ragfusion"}
    assert len(result.diagnostics.branches) == 8 and not result.diagnostics.failed_branches


@pytest.mark.parametrize("use_async", [False, True])
def test_branches_of_weight_zero_are_left_out_of_the_batch(use_async: bool) -> None:
    batched = BatchKeywordRetriever()
    result = searched(searcher(batched), use_async, variant_weights=[1.0, 0.0, 1.0])  # the last repeats
    assert batched.batches == [[QUESTION, "dense queries", "bm25 terms"]]
    assert [b.variant_index for b in result.diagnostics.branches if b.skipped] == [1]


@pytest.mark.parametrize("use_async", [False, True])
def test_a_batch_of_the_wrong_length_fails_each_of_its_branches_named(use_async: bool) -> None:
    broken, other = BatchKeywordRetriever(broken="length"), KeywordRetriever(name="other")
    result = searched(searcher(broken, other), use_async)
    failed = result.diagnostics.failed_branches
    assert [b.retriever for b in failed] == ["batch"] * 4
    expected = "'batch': search_batch returned list for 4 queries, expected a list of 4 lists of Hit"
    assert all(expected in (b.error or "") for b in failed)
    assert result.hits  # the other retriever's branches are fused


@pytest.mark.parametrize("use_async", [False, True])
def test_a_bad_list_in_a_batch_fails_its_own_branch_only(use_async: bool) -> None:
    result = searched(searcher(BatchKeywordRetriever(broken="hit")), use_async)
    failed = result.diagnostics.failed_branches
    assert [b.variant_index for b in failed] == [1]
    assert "batch" in (failed[0].error or "")
    assert result.hits


@pytest.mark.parametrize("use_async", [False, True])
def test_a_hung_batch_times_out_every_branch_it_holds(use_async: bool) -> None:
    gate = Gate()
    hung, other = BatchKeywordRetriever(gate=gate), KeywordRetriever(name="other")
    try:
        result = searched(searcher(hung, other, branch_timeout=0.3), use_async)
    finally:
        gate.open()
    timed_out = [b for b in result.diagnostics.branches if b.timed_out]
    assert [b.retriever for b in timed_out] == ["batch"] * 4
    assert all(b.error and b.error.startswith("timed out after 0.3 s") for b in timed_out)
    assert result.hits


def test_plain_text_queries_keeps_the_batch_of_the_retriever_it_wraps() -> None:
    inner = BatchKeywordRetriever()
    wrapped = PlainTextQueries(inner)
    assert wrapped.search_batch is not None
    assert wrapped.search_batch(['"rank fusion"', "lists^0.25"], 5) == [
        inner.rank("rank fusion", 5, None),
        inner.rank("lists", 5, None),
    ]
    assert PlainTextQueries(KeywordRetriever()).search_batch is None  # nothing to batch: branches stay apart
    searcher(wrapped).search(QUESTION)
    assert inner.batches[-1] == [QUESTION, *VARIANTS[QUESTION]]
