"""MultiQueryRetriever: fusion through the core, provenance, weights, settings, explicit variants, rerank."""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import pickle
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor

import fanfuse
import pytest
from fanfuse import FusionError, InputError, OutOfRange
from fanfuse.errors import InvalidSetting
from fanfuse.multiquery import (
    CallableExpander,
    FusedHit,
    HeuristicExpander,
    MultiQueryRetriever,
    StaticExpander,
)
from hypothesis import given
from hypothesis import strategies as st
from multiquery_toys import (
    AsyncKeywordRetriever,
    FailingRetriever,
    FixedRetriever,
    KeywordRetriever,
    rewrites,
)
from rrf_strategies import examples

QUERY = "how does rank fusion combine ranked lists"


@examples(0.02)  # share of the Hypothesis profile (CI=true: 25k examples)
@given(
    ids=st.lists(st.sampled_from("abcdefghij"), max_size=15),
    top_k=st.integers(1, 12),
)
def test_one_variant_one_retriever_returns_that_retrievers_list(ids: list[str], top_k: int) -> None:
    retriever = MultiQueryRetriever([FixedRetriever(ids)], expansion=False, top_k=top_k, branch_k=20)
    result = retriever.search("anything")
    assert result.ids == list(dict.fromkeys(ids))[:top_k]  # first occurrences, in order, cut at top_k


def test_fused_scores_equal_the_core_and_contributions_sum_to_them() -> None:
    a, b = KeywordRetriever(name="a"), AsyncKeywordRetriever(name="b")
    retriever = MultiQueryRetriever(
        [a, b],
        expander=rewrites(),
        max_variants=4,
        variant_weights=[2.0, 0.5],
        retriever_weights={"b": 1.5},
        top_k=5,
    )
    result = retriever.search(QUERY)
    branches = result.diagnostics.branches
    lists = [[h.id for h in (a if br.retriever == "a" else b).rank(br.variant, 10, None)] for br in branches]
    weights = [
        (2.0 if br.variant_index == 0 else 0.5) * (1.5 if br.retriever == "b" else 1.0) for br in branches
    ]
    expected = fanfuse.rrf(lists, k=60.0, weights=weights, top_k=5)
    assert result.ids == expected.ids
    assert [h.score for h in result.hits] == expected.scores
    for hit in result.hits:
        total = 0.0
        for p in hit.provenance:  # summed in branch order, as the kernel does: exactly equal
            total += p.contribution
        assert total == hit.score
        assert all(p.rank >= 1 for p in hit.provenance)
    assert [v.weight for v in result.diagnostics.variants] == [2.0, 0.5, 0.5, 0.5]


def test_variant_weights_let_the_original_weigh_more() -> None:
    retriever = MultiQueryRetriever(
        {"x": StaticRanker({"q": ["o1", "o2"], "other": ["v1", "v2"]})},
        expander=StaticExpander({"q": ["other"]}),
    )
    assert retriever.search("q").ids == ["o1", "v1", "o2", "v2"]  # equal weights interleave
    assert retriever.search("q", variant_weights=[3.0, 1.0]).ids == ["o1", "o2", "v1", "v2"]
    assert retriever.search("q", variant_weights=[1.0, 3.0]).ids == ["v1", "v2", "o1", "o2"]


class StaticRanker:
    def __init__(self, lists: dict[str, list[str]]):
        self.lists = lists

    def search(self, query: str, k: int, filter: object = None) -> list[fanfuse.retrievers.Hit]:
        return [fanfuse.retrievers.Hit(i, 1.0) for i in self.lists.get(query, [])[:k]]


def test_payload_and_provenance_name_variant_and_retriever() -> None:
    or_variant = HeuristicExpander(default_operator="and")
    retriever = MultiQueryRetriever({"kw": KeywordRetriever()}, expander=or_variant, max_variants=2)
    top = retriever.search("reciprocal rank fusion").hits[0]
    assert top.id == "rrf" and top.payload["text"].startswith("reciprocal rank fusion")
    assert {(p.variant, p.retriever, p.rank) for p in top.provenance} == {
        ("reciprocal rank fusion", "kw", 1),
        ("reciprocal OR rank OR fusion", "kw", 1),
    }


def test_payload_and_provenance_read_on_demand_are_the_same_by_every_route() -> None:
    """They are read from the fusion's explanation on first access: by attribute, by ``==``, by
    ``dataclasses.asdict``, in a copy or a pickle, and from many threads at once, all alike."""
    retriever = MultiQueryRetriever(
        {"kw": KeywordRetriever(), "again": KeywordRetriever()}, expander=rewrites()
    )
    expected = [(h.id, h.score, dict(h.payload), list(h.provenance)) for h in retriever.search(QUERY).hits]
    assert expected and all(provenance for *_, provenance in expected)
    by_equality, by_dict, by_pickle = (retriever.search(QUERY).hits for _ in range(3))
    assert by_equality == [FusedHit(i, s, p, pr) for i, s, p, pr in expected]
    assert [dataclasses.asdict(h)["provenance"] for h in by_dict] == [
        [dataclasses.asdict(p) for p in pr] for *_, pr in expected
    ]
    assert [(h.payload, h.provenance) for h in pickle.loads(pickle.dumps(by_pickle))] == [
        (p, pr) for _, _, p, pr in expected
    ]
    for _ in range(20):
        hits = retriever.search(QUERY).hits
        with ThreadPoolExecutor(4) as pool:
            seen = list(pool.map(lambda h: (h.payload, h.provenance), hits * 4))
        assert seen == [(p, pr) for _, _, p, pr in expected] * 4


def test_expansion_off_is_one_branch_per_retriever_without_calling_the_expander() -> None:
    calls: list[str] = []
    counting = CallableExpander(lambda q, n: calls.append(q) or [q + " more"])
    retriever = MultiQueryRetriever([KeywordRetriever(), AsyncKeywordRetriever()], expander=counting)
    off = retriever.search(QUERY, expansion=False)
    assert len(off.diagnostics.branches) == 2 and off.diagnostics.expansion.expander == "none"
    assert calls == []
    on = retriever.search(QUERY)
    assert len(on.diagnostics.branches) == 4 and calls == [QUERY]


def test_environment_switches_expansion_and_variant_count() -> None:
    off = MultiQueryRetriever(
        [KeywordRetriever()], expander=rewrites(), environ={"FANFUSE_QUERY_EXPANSION": "off"}
    )
    assert len(off.search(QUERY).diagnostics.variants) == 1
    assert len(off.search(QUERY, expansion=True).diagnostics.variants) == 4  # per call beats the env
    two = MultiQueryRetriever(
        [KeywordRetriever()], expander=rewrites(), environ={"FANFUSE_MAX_QUERY_VARIANTS": "2"}
    )
    assert len(two.search(QUERY).diagnostics.variants) == 2
    three = MultiQueryRetriever(
        [KeywordRetriever()], expander=rewrites(), max_variants=3, environ={"FANFUSE_MAX_QUERY_VARIANTS": "2"}
    )
    assert len(three.search(QUERY).diagnostics.variants) == 3  # the instance beats the env


@pytest.mark.parametrize(
    ("environ", "message"),
    [
        ({"FANFUSE_QUERY_EXPANSION": "maybe"}, "FANFUSE_QUERY_EXPANSION must be one of on/off"),
        ({"FANFUSE_MAX_QUERY_VARIANTS": "many"}, "FANFUSE_MAX_QUERY_VARIANTS must be an int from 1 to 5"),
        ({"FANFUSE_MAX_QUERY_VARIANTS": "9"}, "FANFUSE_MAX_QUERY_VARIANTS must be an int from 1 to 5"),
    ],
)
def test_bad_environment_fails_at_construction(environ: dict[str, str], message: str) -> None:
    with pytest.raises(InputError, match=message):
        MultiQueryRetriever([KeywordRetriever()], environ=environ)


@pytest.mark.parametrize(
    ("options", "error", "message"),
    [
        ({"top_k": 0}, OutOfRange, "top_k must be an int from 1 to 10000"),
        ({"top_k": "5"}, TypeError, "top_k must be an int"),
        ({"rrf_k": 0.0}, FusionError, "rrf_k must be a finite number > 0"),
        ({"max_variants": 6}, OutOfRange, "max_variants must be an int from 1 to 5"),
        ({"variant_weights": [1.0, -1.0]}, FusionError, r"variant_weights\[1\] must be a finite number >= 0"),
        ({"retriever_weights": {"nope": 1.0}}, InvalidSetting, "'nope', which is not a retriever"),
        ({"branch_timeout": -1}, OutOfRange, "branch_timeout must be a number in \\(0, 86400\\]"),
        ({"expander": lambda q, n: []}, TypeError, "wrap a function in CallableExpander"),
    ],
)
def test_bad_settings_name_the_argument(options: dict[str, object], error: type, message: str) -> None:
    with pytest.raises(error, match=message):
        MultiQueryRetriever({"kw": KeywordRetriever()}, **options)  # type: ignore[arg-type]


def test_bad_retrievers_and_calls() -> None:
    with pytest.raises(InvalidSetting, match="retrievers is empty"):
        MultiQueryRetriever([])
    with pytest.raises(TypeError, match="has no search"):
        MultiQueryRetriever({"x": object()})
    retriever = MultiQueryRetriever([KeywordRetriever()])
    with pytest.raises(InvalidSetting, match=r"query must hold a word \(got only blank characters\)"):
        retriever.search("  ")
    with pytest.raises(InvalidSetting, match=r"query must hold a word \(got an empty string\)"):
        retriever.search("")
    with pytest.raises(OutOfRange, match="max_variants must be an int from 1 to 5"):
        retriever.search(QUERY, max_variants=0)
    with pytest.raises(TypeError, match="variants must be a list of str"):
        retriever.search(QUERY, variants="a rewrite")


def test_list_retrievers_get_default_names() -> None:
    retriever = MultiQueryRetriever([KeywordRetriever(), KeywordRetriever(), FixedRetriever([])])
    assert retriever.retriever_names == ["keyword", "keyword-2", "fixed"]


def test_explicit_variants_skip_the_expander() -> None:
    calls: list[str] = []
    retriever = MultiQueryRetriever(
        [KeywordRetriever()], expander=CallableExpander(lambda q, n: calls.append(q) or [])
    )
    result = retriever.search(
        "and the other one?", variants=["dense retrieval of queries", "And the other one?"]
    )
    assert [(v.text, v.source) for v in result.diagnostics.variants] == [
        ("and the other one?", "original"),
        ("dense retrieval of queries", "explicit"),
    ]
    assert result.diagnostics.expansion.expander == "explicit" and calls == []
    assert result.ids[0] == "dense"


def test_filter_reaches_every_branch() -> None:
    kw, akw = KeywordRetriever(), AsyncKeywordRetriever()
    result = MultiQueryRetriever([kw, akw], max_variants=3, expander=rewrites()).search(
        QUERY, filter={"topic": "fusion"}
    )
    assert {c.filter["topic"] for c in kw.calls + akw.calls if c.filter} == {"fusion"}
    assert len(kw.calls + akw.calls) == 6 and all(c.filter for c in kw.calls + akw.calls)
    branches = result.diagnostics.branches
    lists = [[h.id for h in kw.rank(b.variant, kw.calls[0].k, {"topic": "fusion"})] for b in branches]
    assert result.ids == fanfuse.rrf(lists, top_k=10).ids
    assert set(result.ids) == {"rrf", "borda", "ragfusion"}  # the "fusion" documents sharing a word


def reverse_reranker(query: str, hits: Sequence[FusedHit]) -> list[float]:
    return [float(i) for i in range(len(hits))]  # the last fused hit gets the highest score


# Matches most of the toy corpus, so the fused window is long enough to rerank.
BROAD = "fusion of ranked lists and dense retrieval of documents by term"


def test_reranker_reorders_the_window_and_return_k_cuts() -> None:
    retriever = MultiQueryRetriever([KeywordRetriever()], expansion=False, top_k=3)
    fused = retriever.search(BROAD, top_k=10).ids
    assert len(fused) >= 6
    result = retriever.search(BROAD, reranker=reverse_reranker, rerank_window=5, return_k=2)
    assert result.ids == fused[:5][::-1][:2]
    assert [h.rerank_score for h in result.hits] == [4.0, 3.0]
    assert result.diagnostics.rerank_error is None


def test_async_reranker_and_a_failing_one() -> None:
    async def async_reverse(query: str, hits: Sequence[FusedHit]) -> list[float]:
        return reverse_reranker(query, hits)

    def broken(query: str, hits: Sequence[FusedHit]) -> list[float]:
        return [1.0]  # wrong length

    retriever = MultiQueryRetriever([KeywordRetriever()], expansion=False, top_k=3)
    fused = retriever.search(BROAD).ids
    assert asyncio.run(retriever.asearch(BROAD, reranker=async_reverse, rerank_window=3)).ids == fused[::-1]
    kept = retriever.search(BROAD, reranker=broken)
    assert (
        kept.ids == fused
        and kept.diagnostics.rerank_error == "ValueError: reranker returned 1 scores for 6 hits"
    )


def test_min_score_drops_weak_hits() -> None:
    retriever = MultiQueryRetriever([FixedRetriever(["a", "b", "c"])], expansion=False, rrf_k=1.0)
    assert retriever.search("q", min_score=1 / 3).ids == ["a", "b"]  # 1/2, 1/3 pass; 1/4 does not


def test_one_info_line_per_search_with_timings(caplog: pytest.LogCaptureFixture) -> None:
    retriever = MultiQueryRetriever(
        [KeywordRetriever(), FailingRetriever()], max_variants=3, expander=rewrites()
    )
    with caplog.at_level(logging.INFO, logger="fanfuse.multiquery"):
        retriever.search(QUERY)
    (record,) = [r for r in caplog.records if r.name == "fanfuse.multiquery"]
    assert record.levelno == logging.WARNING  # a failed branch raises the line to WARNING, with why
    assert "3 variants x 2 retrievers, 6 branches (3 failed) in " in record.getMessage()
    assert "; failed: " in record.getMessage()
    assert " ms (expand " in record.getMessage()


def test_sync_search_with_an_async_expander_function() -> None:
    async def rewrite(query: str, n: int) -> list[str]:
        return ["dense retrieval of queries"]

    retriever = MultiQueryRetriever([KeywordRetriever()], expander=CallableExpander(rewrite), max_variants=2)
    result = retriever.search("and that other one?")
    assert [v.source for v in result.diagnostics.variants] == ["original", "callable"]
    assert result.ids[0] == "dense"


def test_per_call_retriever_weights_override_only_the_named_retrievers() -> None:
    a, b, c = (
        FixedRetriever(["x"], name="a"),
        FixedRetriever(["y"], name="b"),
        FixedRetriever(["z"], name="c"),
    )
    retriever = MultiQueryRetriever(
        [a, b, c], expansion=False, rrf_k=1.0, retriever_weights={"b": 3.0, "c": 2.0}
    )
    result = retriever.search("q", retriever_weights={"c": 0.5})
    assert [(h.id, h.score) for h in result.hits] == [("y", 1.5), ("x", 0.5), ("z", 0.25)]
    assert retriever.search("q").ids == ["y", "z", "x"]  # the instance's weights are untouched


class CountingRetriever(FixedRetriever):
    def __init__(self, ids: list[str], name: str):
        super().__init__(ids, name)
        self.queries: list[str] = []

    def search(self, query: str, k: int, filter: object = None) -> list[fanfuse.retrievers.Hit]:
        self.queries.append(query)
        return list(super().search(query, k))


@pytest.mark.parametrize("where", ["instance", "call"])
def test_a_retriever_of_weight_zero_is_not_queried(where: str) -> None:
    a, b = CountingRetriever(["x"], "a"), CountingRetriever(["y"], "b")
    weights = {"a": 0.0}
    retriever = MultiQueryRetriever(
        [a, b], max_variants=2, retriever_weights=weights if where == "instance" else None
    )
    result = retriever.search(QUERY, retriever_weights=weights if where == "call" else None)
    assert a.queries == [] and len(b.queries) == 2
    assert result.ids == ["y"]
    skipped = [(br.retriever, br.variant_index) for br in result.diagnostics.branches if br.skipped]
    assert skipped == [("a", 0), ("a", 1)]
    assert all(br.ok and br.error is None for br in result.diagnostics.branches)
    assert "4 branches (2 skipped: weight 0)" in result.diagnostics.summary()


def test_a_variant_of_weight_zero_is_not_searched() -> None:
    a = CountingRetriever(["x"], "a")
    retriever = MultiQueryRetriever([a], max_variants=3, expander=rewrites())
    result = retriever.search(QUERY, variant_weights=[1.0, 0.0])
    assert a.queries == [QUERY]
    assert [br.skipped for br in result.diagnostics.branches] == [False, True, True]


def test_every_weight_zero_is_an_empty_result_not_a_failure() -> None:
    a = CountingRetriever(["x"], "a")
    result = MultiQueryRetriever([a], expansion=False, retriever_weights={"a": 0}).search(QUERY)
    assert result.ids == [] and a.queries == []


@pytest.mark.parametrize("option", ["return_k", "rerank_window"])
def test_a_reranker_setting_without_a_reranker_is_refused(option: str) -> None:
    refused = rf"^{option} goes with a reranker \(.*\) and would do nothing here; leave {option} out$"
    with pytest.raises(InvalidSetting, match=refused):
        MultiQueryRetriever([KeywordRetriever()], **{option: 3})
    with pytest.raises(InvalidSetting, match=refused):
        MultiQueryRetriever([KeywordRetriever()]).search(QUERY, **{option: 3})
    assert MultiQueryRetriever([KeywordRetriever()], reranker=reverse_reranker, **{option: 3}).search(BROAD)


def test_return_k_is_how_many_reranked_hits_come_back() -> None:
    retriever = MultiQueryRetriever([KeywordRetriever()])
    assert len(retriever.search(BROAD, return_k=2, reranker=reverse_reranker).ids) == 2
    with_reranker = MultiQueryRetriever([KeywordRetriever()], reranker=reverse_reranker, return_k=2)
    assert len(with_reranker.search(BROAD).ids) == 2


def test_a_searchs_k_is_renamed_rrf_k_as_it_would_read_as_how_many_hits() -> None:
    retriever = MultiQueryRetriever([KeywordRetriever()], rrf_k=5.0)
    assert retriever.fusion.k == 5.0 and "rrf_k=5" in repr(retriever)
    refused = (
        r"^search\(\) keyword k is renamed: use rrf_k \(the RRF constant; how many hits come back is top_k\)$"
    )
    with pytest.raises(TypeError, match=refused):
        retriever.search(QUERY, k=3)
    with pytest.raises(TypeError, match=refused.replace("search", "asearch", 1)):
        asyncio.run(retriever.asearch(QUERY, k=3))
    with pytest.raises(TypeError, match=r"^MultiQueryRetriever\(\) keyword k is renamed: use rrf_k$"):
        MultiQueryRetriever([KeywordRetriever()], k=5.0)  # type: ignore[call-arg]
    # The core's refusal of a value names the search's option.
    with pytest.raises(FusionError, match=r"^rrf_k must be a finite number > 0") as error:
        retriever.search(QUERY, rrf_k=0.0)
    assert getattr(error.value, "option", None) == "rrf_k"
