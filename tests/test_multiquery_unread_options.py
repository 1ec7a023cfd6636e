"""A search call's option that the search would not read is refused naming it (as `return_k` without
a reranker), and every option of `search`, given on a call over a real index, either changes the result
or is refused, or is listed below with why it may do neither."""

from __future__ import annotations

import asyncio
import re
from typing import Any

import pytest
from fanfuse import FusionError, open_index
from fanfuse.errors import InputError, InvalidSetting
from fanfuse.multiquery import Expander, HeuristicExpander, MultiQueryRetriever
from fanfuse.multiquery.planning import SearchOptions
from fanfuse.multiquery.result_json import as_data
from fanfuse.retrievers.tantivy_index import TantivyRetriever
from test_cli_search_options import DOCUMENTS, QUERY, without_timings


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> TantivyRetriever:
    documents = [{**d, "lang": "en" if d["id"] != "bat" else "de"} for d in DOCUMENTS]
    return TantivyRetriever.build(documents, tmp_path_factory.mktemp("unread") / "idx")


def answer(retriever: MultiQueryRetriever, **options: Any) -> Any:
    return without_timings(as_data(retriever.search(QUERY, **options)))


@pytest.mark.parametrize(
    ("options", "refused"),
    [
        ({"expansion": False, "max_variants": 3}, "max_variants goes with query expansion"),
        ({"expansion": False, "strategy": "entity"}, "strategy goes with query expansion"),
        ({"variants": ["owls"], "expansion": False}, "expansion goes with a search without variants="),
        ({"variants": ["owls"], "expansion": True}, "expansion goes with a search without variants="),
        ({"variants": ["owls"], "strategy": "entity"}, "strategy goes with a search without variants="),
        ({"max_variants": 1, "strategy": "entity"}, "strategy goes with more than one variant"),
    ],
)
def test_an_option_the_search_would_not_read_is_refused(
    index: TantivyRetriever, options: dict[str, Any], refused: str
) -> None:
    retriever = MultiQueryRetriever([index])
    with pytest.raises(InvalidSetting, match=refused) as error:
        retriever.search(QUERY, **options)
    assert str(error.value).endswith("and would do nothing here; leave " + refused.split()[0] + " out")


def test_asearch_refuses_them_alike(index: TantivyRetriever) -> None:
    search = MultiQueryRetriever([index]).asearch(QUERY, expansion=False, max_variants=3)
    with pytest.raises(InvalidSetting, match="max_variants goes with query expansion"):
        asyncio.run(search)


def test_the_instance_setting_counts_where_the_call_leaves_it_out(index: TantivyRetriever) -> None:
    off = MultiQueryRetriever([index], expansion=False)
    with pytest.raises(InvalidSetting, match="max_variants goes with query expansion, which is off"):
        off.search(QUERY, max_variants=3)
    assert len(off.search(QUERY, expansion=True, max_variants=3).diagnostics.variants) > 1
    one = MultiQueryRetriever([index], max_variants=1)
    with pytest.raises(InvalidSetting, match="strategy goes with more than one variant"):
        one.search(QUERY, strategy="entity")


def test_none_is_left_out_so_generic_code_may_pass_every_option(index: TantivyRetriever) -> None:
    retriever = MultiQueryRetriever([index])
    every = dict.fromkeys(SearchOptions.__annotations__)
    assert answer(retriever, **{**every, "expansion": False}) == answer(retriever, expansion=False)


# Every option of a search over the default retriever of an index, with a value other than its
# default, and the options given beside it (and to the search it is compared with). Each must change
# the result, or be refused naming it, but for those listed after, each with why.
VALUES: dict[str, tuple[dict[str, Any], Any]] = {
    "top_k": ({}, 1),
    "expansion": ({}, False),
    "max_variants": ({}, 1),
    "filter": ({}, {"lang": "de"}),
    "variants": ({}, ["owls hunting"]),
    "history": ({}, ["tell me about bats"]),
    "variant_weights": ({}, [1.0, 0.0]),
    "retriever_weights": ({}, {"bm25": 2.0}),
    "branch_k": ({}, 1),
    "reranker": ({}, lambda query, hits: [float(len(hit.id)) for hit in hits]),
    "rerank_window": ({}, 1),
    "return_k": ({}, 1),
    "min_score": ({}, 0.08),
    "method": ({}, "isr"),
    "rrf_k": ({}, 5.0),
    "norm": ({}, "zmuv"),
    # Two documents of one text tie under a score method over the question alone.
    "tie_break": ({"method": "combsum", "expansion": False}, "id"),
    # The default expander of an index reads no strategy (an LLM expander does: tests/test_llm_expander.py).
    "strategy": ({}, "entity"),
}
UNCHANGED = {
    "phi": "a fusion parameter of a method other than the call's: FusionOptions checks every parameter "
    "whatever the method, so that replace(method=...) can switch (docs/cli.md)",
    "sigma": "as phi",
    "gamma": "as phi",
    "duplicates": "an index holds each id once: no list of its search repeats one",
}


def test_every_option_is_listed() -> None:
    assert set(VALUES) | set(UNCHANGED) == set(SearchOptions.__annotations__)


@pytest.mark.parametrize("option", sorted(VALUES))
def test_every_option_changes_the_result_or_is_refused(index: TantivyRetriever, option: str) -> None:
    retriever = open_index(index, dense=False)
    companions, value = VALUES[option]
    base = answer(retriever, **companions)
    try:
        given = answer(retriever, **companions, **{option: value})
    except (InputError, FusionError) as error:
        assert option in str(error)
    else:
        assert given != base


def test_a_strategy_goes_with_an_expander_that_reads_one(index: TantivyRetriever) -> None:
    from fanfuse.multiquery import CombinedExpander, FeedbackExpander, LLMExpander

    # The default expander's name: its parts (the history reading, the content words).
    refused = (
        "strategy goes with an expander that reads one (LLMExpander; this one, history+heuristic, reads none)"
    )
    with pytest.raises(InvalidSetting, match=re.escape(refused)):
        MultiQueryRetriever([index], strategy="entity")
    with pytest.raises(InvalidSetting, match=re.escape(refused)):
        MultiQueryRetriever([index]).search(QUERY, strategy="entity")
    llm = LLMExpander(base_url="http://127.0.0.1:9/v1", model="m", timeout=0.5)
    combined = CombinedExpander([HeuristicExpander(), FeedbackExpander(index), llm])
    assert combined.strategies == llm.strategies and "entity" in llm.strategies
    # An expander that reads strategies takes one (the model is down here: the search falls back).
    result = MultiQueryRetriever([index], expander=combined).search(QUERY, strategy="entity")
    assert result.hits


class Custom(Expander):
    """An expander that does not say which strategies it reads: any is passed on to it."""

    def expand(self, query: str, *, max_variants: int, strategy: str | None = None, history: Any = ()) -> Any:
        self.asked = strategy
        return HeuristicExpander().expand(query, max_variants=max_variants)


def test_an_expander_that_does_not_say_is_given_any_strategy(index: TantivyRetriever) -> None:
    custom = Custom()
    assert custom.strategies is None
    MultiQueryRetriever([index], expander=custom).search(QUERY, strategy="my own")
    assert custom.asked == "my own"
