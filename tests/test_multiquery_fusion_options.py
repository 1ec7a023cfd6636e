"""MultiQueryRetriever's fusion options (method, k, norm, phi, sigma, gamma, tie_break, duplicates):
each fuses the branches' lists exactly as `fanfuse.fuse` does on the lists the diagnostics report,
set on the instance or per call, and every method explains its hits."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from types import SimpleNamespace
from typing import Any

import fanfuse
import pytest
from fanfuse import FusionError
from fanfuse.multiquery import MultiQueryRetriever, SearchResult, StaticExpander
from fanfuse.retrievers import Hit


class TableRetriever:
    """Fixed (id, score) lists per query: real scores for the score methods, and a document listed
    twice ("d1" in a's list for "q": two chunks of it) for the duplicate policies."""

    def __init__(self, table: Mapping[str, list[tuple[str, float]]]) -> None:
        self.table = table

    def search(self, query: str, k: int, filter: Mapping[str, Any] | None = None) -> list[Hit]:
        return [Hit(doc, score, {"seen": query}) for doc, score in self.table.get(query, [])[:k]]


A = TableRetriever(
    {
        "q": [("d1", 9.0), ("d2", 5.0), ("d1", 4.0), ("d3", 1.0)],
        "v": [("d3", 3.0), ("d4", 2.5), ("d2", 0.5)],
        "tie": [("y", 2.0), ("x", 1.0)],
    }
)
B = TableRetriever(
    {
        "q": [("d2", 0.9), ("d4", 0.8), ("d3", 0.1)],
        "v": [("d4", 0.7), ("d1", 0.6)],
        "tie": [("x", 2.0), ("y", 1.0)],
    }
)
RETRIEVERS = {"a": A, "b": B}
EXPANDER = StaticExpander({"q": ["v"]})


def make(**options: Any) -> MultiQueryRetriever:
    return MultiQueryRetriever(RETRIEVERS, expander=EXPANDER, top_k=10, **options)


def core_fusion(result: SearchResult, options: Mapping[str, Any], branch_k: int = 20) -> fanfuse.Fused:
    """`fanfuse.fuse` over the lists of the branches the diagnostics report, with their weights."""
    runs, weights = [], []
    for branch in result.diagnostics.branches:
        hits = RETRIEVERS[branch.retriever].search(branch.variant, branch_k)
        runs.append(([h.id for h in hits], [h.score for h in hits]))
        weights.append(result.diagnostics.variants[branch.variant_index].weight)
    # The search's rrf_k is the core's k.
    fusion = {
        "k" if name == "rrf_k" else name: value
        for name, value in options.items()
        if name != "variant_weights"
    }
    uniform = all(w == 1.0 for w in weights)
    return fanfuse.fuse(runs, weights=None if uniform else weights, top_k=10, **fusion)


# Each case: the options, and the options it is compared against (it must change the result).
CASES = [
    ({"method": "combsum"}, {}),
    ({"method": "combsum", "norm": "zmuv"}, {"method": "combsum"}),
    ({"method": "wsum", "variant_weights": [2.0, 1.0]}, {"method": "wsum"}),
    ({"method": "dbsf"}, {}),
    ({"method": "bordafuse"}, {}),
    ({"method": "condorcet"}, {"method": "bordafuse"}),
    ({"rrf_k": 1.0}, {}),
    ({"method": "rbc", "phi": 0.3}, {"method": "rbc"}),
    ({"method": "logn_isr", "sigma": 0.9}, {"method": "logn_isr"}),
    ({"method": "combgmnz", "gamma": 3.0}, {"method": "combgmnz"}),
    ({"duplicates": "sum"}, {}),
    ({"method": "combsum", "duplicates": "sum"}, {"method": "combsum"}),
]


def pairs(result: SearchResult) -> list[tuple[str, float]]:
    return [(hit.id, hit.score) for hit in result.hits]


@pytest.mark.parametrize(("options", "baseline"), CASES)
def test_each_option_fuses_as_the_core_does_and_changes_the_result(
    options: dict[str, Any], baseline: dict[str, Any]
) -> None:
    per_call = make().search("q", **options)
    expected = core_fusion(per_call, options)
    assert pairs(per_call) == list(zip(expected.ids, expected.scores, strict=True))
    assert pairs(make(**options).search("q")) == pairs(per_call)  # on the instance: the same
    assert pairs(make().search("q", **baseline)) != pairs(per_call)


def test_tie_break_orders_equal_scores() -> None:
    # x and y score alike (ranks 1 and 2 in two lists): by rank, y (first in the earlier list) wins.
    retriever = make()
    assert retriever.search("tie").ids == ["y", "x"]
    by_id = retriever.search("tie", tie_break="id")
    assert by_id.ids == ["x", "y"] == core_fusion(by_id, {"tie_break": "id"}).ids
    assert make(tie_break="id").search("tie").ids == ["x", "y"]


@pytest.mark.parametrize("method", ["rrf", "combsum", "combmnz", "bordafuse", "dbsf", "rbc", "isr"])
def test_provenance_explains_every_method(method: str) -> None:
    result = make(method=method).search("q")
    for hit in result.hits:
        total = 0.0
        for p in hit.provenance:  # added in branch order, as the kernel does: exactly the score
            total += p.contribution
        assert total == hit.score
        for p in hit.provenance:
            if p.rank is not None:  # the branch ranked the hit there (its first position)
                listed = [h.id for h in RETRIEVERS[p.retriever].search(p.variant, 20)]
                assert listed.index(hit.id) + 1 == p.rank
        assert hit.payload["seen"] in ("q", "v")  # from the branch that ranked it best


def test_borda_points_from_a_list_without_the_hit_have_no_rank() -> None:
    result = make(method="bordafuse").search("q")
    d4 = next(hit for hit in result.hits if hit.id == "d4")
    unranked = [(p.retriever, p.variant) for p in d4.provenance if p.rank is None]
    assert unranked == [("a", "q")]  # a's list for "q" lacks d4, which still gets Borda points
    assert all(p.contribution > 0 for p in d4.provenance)


def test_condorcet_contributions_are_nan_and_the_ranking_the_cores() -> None:
    result = make().search("q", method="condorcet")
    assert result.ids == list(core_fusion(result, {"method": "condorcet"}).ids)
    assert all(p.contribution != p.contribution for h in result.hits for p in h.provenance)


def test_per_call_options_leave_the_instance_alone() -> None:
    retriever = make(method="combsum")
    assert retriever.search("q", method="rrf").hits[0].score < 1.0
    assert pairs(retriever.search("q")) == pairs(make(method="combsum").search("q"))
    assert retriever.fusion.method == "combsum"


def test_async_search_takes_the_same_options() -> None:
    retriever = make()
    sync = retriever.search("q", method="combmnz", norm="max")
    assert pairs(asyncio.run(retriever.asearch("q", method="combmnz", norm="max"))) == pairs(sync)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"method": "nope"}, "method must be one of rrf, isr,"),
        ({"norm": "nope", "method": "combsum"}, "norm must be one of none, min-max,"),
        ({"norm": "zmuv"}, "method 'rrf' reads ranks only"),
        ({"tie_break": "best"}, "tie_break must be 'rank' or 'id'"),
        ({"duplicates": "all"}, "duplicates must be 'first', 'max' or 'sum'"),
        ({"rrf_k": 0}, "rrf_k must be"),
        ({"method": "rbc", "phi": 1.5}, "phi must be in (0, 1)"),
        ({"method": "isr", "variant_weights": [2.0, 1.0]}, "variant_weights x retriever_weights"),
        ({"method": "combmax", "retriever_weights": {"b": 0.5}}, "has no per-list weights"),
    ],
)
def test_bad_options_are_refused_with_the_cores_message(options: dict[str, Any], message: str) -> None:
    with pytest.raises(FusionError, match=message.replace("(", r"\(").replace(")", r"\)")):
        make(**options)
    with pytest.raises(FusionError, match=message.replace("(", r"\(").replace(")", r"\)")):
        make().search("q", **options)


@pytest.mark.parametrize(("name", "value"), [("method", 3), ("norm", b"max"), ("k", True), ("gamma", "2")])
def test_options_of_the_wrong_type_are_type_errors(name: str, value: object) -> None:
    with pytest.raises(TypeError, match=name):
        make(**{name: value})


def test_weight_zero_lists_do_not_count_as_weights() -> None:
    # isr has no weighted form; a retriever of weight 0 is not searched, so nothing is weighted.
    result = make(method="isr", retriever_weights={"b": 0.0}).search("q")
    assert {p.retriever for h in result.hits for p in h.provenance} == {"a"}


class Unscored:
    def search(self, query: str, k: int, filter: Any = None) -> Sequence[Any]:
        return [SimpleNamespace(id="d1"), SimpleNamespace(id="d2")]


def test_a_score_method_over_hits_without_scores_names_the_retriever() -> None:
    retriever = MultiQueryRetriever({"plain": Unscored()}, expansion=False)
    assert retriever.search("q").ids == ["d1", "d2"]  # rank methods need no scores
    with pytest.raises(FusionError, match="method 'combsum' fuses scores, but retriever 'plain'"):
        retriever.search("q", method="combsum")
