"""A search's metadata filter reaches the expanders that read it: pseudo-relevance feedback takes its
terms from the documents the search may return, never from one the filter leaves out (a tenant's
search shows no other tenant's words in its variants); the variant cache tells filters apart; an
expander of one's own that takes `filter` is given it, one without it is called without it."""

from __future__ import annotations

import asyncio
import inspect
import itertools
from collections.abc import Mapping
from typing import Any

import pytest
from fanfuse import open_index
from fanfuse.errors import InvalidSetting
from fanfuse.multiquery import (
    CombinedExpander,
    Expander,
    Expansion,
    FeedbackExpander,
    HeuristicExpander,
    LLMExpander,
    MultiQueryRetriever,
    Variant,
    VariantCache,
)
from fanfuse.multiquery.expand.calls import OPTIONAL_KEYWORDS
from fanfuse.retrievers.tantivy_index import TantivyRetriever
from llm_server import refused_base_url

# Two tenants whose documents share the question's word: each one's own words are the feedback terms.
DOCUMENTS = [
    {"id": f"a{i}", "text": f"owls hunt mice under moonlight {word}", "tenant": "a"}
    for i, word in enumerate(["meadows", "barns", "hedgerows"])
] + [
    {"id": f"b{i}", "text": f"owls nest inside volcanoes {word}", "tenant": "b"}
    for i, word in enumerate(["lava", "craters", "ashfall"])
]
B_WORDS = {"nest", "insid", "volcano", "lava", "crater", "ashfal"}


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> TantivyRetriever:
    return TantivyRetriever.build(DOCUMENTS, tmp_path_factory.mktemp("tenants") / "idx")


def feedback_words(result: Any) -> set[str]:
    (variant,) = [v for v in result.diagnostics.variants if v.source == "feedback"]
    return {term.split("^")[0].strip('"') for term in variant.text.split()}


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_feedback_takes_no_term_from_a_document_the_filter_leaves_out(
    index: TantivyRetriever, mode: str
) -> None:
    retriever = open_index(index, dense=False)

    def search(**options: Any) -> Any:
        if mode == "sync":
            return retriever.search("owls", **options)
        return asyncio.run(retriever.asearch("owls", **options))

    unfiltered = feedback_words(search())
    assert unfiltered & B_WORDS  # without a filter, both tenants' words
    for tenant in ("a", "b"):
        result = search(filter={"tenant": tenant})
        words = feedback_words(result)
        kept = {hit.id[0] for hit in result.hits}
        assert kept == {tenant}
        assert bool(words & B_WORDS) is (tenant == "b"), words
        assert "moonlight" in words if tenant == "a" else "moonlight" not in words


def test_the_variant_cache_tells_filters_apart(index: TantivyRetriever) -> None:
    cache = VariantCache()
    retriever = MultiQueryRetriever([index], expander=FeedbackExpander(index), max_variants=2, cache=cache)
    first = feedback_words(retriever.search("owls", filter={"tenant": "a"}))
    other = retriever.search("owls", filter={"tenant": "b"})
    assert not other.diagnostics.expansion.cached
    assert feedback_words(other) != first
    again = retriever.search("owls", filter={"tenant": ["a"]})  # the same filter, written otherwise
    assert again.diagnostics.expansion.cached and feedback_words(again) == first


class Reading(Expander):
    """An expander of one's own that reads the filter (only `expand` written)."""

    name = "reading"

    def __init__(self) -> None:
        self.given: list[Mapping[str, Any] | None] = []

    def expand(
        self,
        query: str,
        *,
        max_variants: int,
        strategy: str | None = None,
        history: Any = (),
        filter: Mapping[str, Any] | None = None,
    ) -> Expansion:
        self.given.append(filter)
        return Expansion((Variant(query, "original"), Variant(f"{query} {len(self.given)}", "own")))


class Plain(Expander):
    """One written without `filter`."""

    name = "plain"

    def expand(self, query: str, *, max_variants: int, strategy: str | None = None) -> Expansion:
        return Expansion((Variant(query, "original"), Variant(f"{query} plain", "own")))


def test_an_expander_of_ones_own_is_given_the_filter_if_it_takes_it(index: TantivyRetriever) -> None:
    reading, plain = Reading(), Plain()
    assert reading.reads_filter and not plain.reads_filter
    assert FeedbackExpander(index).reads_filter and not HeuristicExpander().reads_filter
    for expander in (reading, plain, CombinedExpander([plain, reading])):
        retriever = MultiQueryRetriever([index], expander=expander, max_variants=3)
        retriever.search("owls", filter={"tenant": "a"})
        asyncio.run(retriever.asearch("owls", filter={"tenant": "b"}))
        retriever.search("owls")
    # Given to the reading expander alone, and the async path (its inherited aexpand) too.
    assert reading.given == [{"tenant": "a"}, {"tenant": "b"}, None] * 2
    assert CombinedExpander([plain, reading]).reads_filter and not CombinedExpander([plain]).reads_filter


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_a_chat_models_fallback_is_given_the_filter(index: TantivyRetriever, mode: str) -> None:
    """A model that cannot be reached (a real connection refusal): the default search's expander that
    stands in over the index takes its feedback from the filtered documents, as without a model."""
    llm = LLMExpander(refused_base_url(), model="m", api_key="x", timeout=2.0)
    with open_index(index, dense=False, expander=llm) as retriever:
        for tenant in ("a", "b"):
            if mode == "sync":
                result = retriever.search("owls", filter={"tenant": tenant})
            else:
                result = asyncio.run(retriever.asearch("owls", filter={"tenant": tenant}))
            assert result.diagnostics.expansion.fallback_reason is not None
            words = feedback_words(result)
            assert bool(words & B_WORDS) is (tenant == "b"), words
    own = Reading()
    llm.fallback_expander = own
    assert llm.reads_filter
    MultiQueryRetriever([index], expander=llm, max_variants=3).search("owls", filter={"tenant": "a"})
    assert own.given == [{"tenant": "a"}]
    llm.fallback_expander = Plain()
    assert not llm.reads_filter
    assert not LLMExpander(refused_base_url(), model="m", fallback="original").reads_filter


class Documented(Expander):
    """One written with the signature the docs show: no `strategy`, no `filter`."""

    name = "documented"

    def expand(self, query: str, *, max_variants: int, history: Any = ()) -> Expansion:
        return Expansion((Variant(query, "original"), Variant("owls", "mine")))


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_an_expander_written_without_strategy_runs_and_refuses_one(
    index: TantivyRetriever, mode: str
) -> None:
    retriever = MultiQueryRetriever([index], expander=Documented(), max_variants=2)

    def search(**options: Any) -> Any:
        if mode == "sync":
            return retriever.search("what do they eat", **options)
        return asyncio.run(retriever.asearch("what do they eat", **options))

    result = search()
    assert result.diagnostics.expansion.fallback_reason is None
    assert [v.text for v in result.diagnostics.variants] == ["what do they eat", "owls"]
    assert Documented.strategies == ()
    with pytest.raises(InvalidSetting, match="strategy"):
        search(strategy="paraphrase")


def written_with(keywords: tuple[str, ...]) -> Any:
    """An expander whose `expand` takes `keywords` of those a search gives, and records what it got."""
    given: list[set[str]] = []

    def expand(self: Expander, query: str, **options: Any) -> Expansion:
        given.append(set(options))
        return Expansion((Variant(query, "original"), Variant(f"{query} too", "own")))

    keyword = inspect.Parameter.KEYWORD_ONLY
    expand.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
        [
            inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD),
            inspect.Parameter("query", inspect.Parameter.POSITIONAL_OR_KEYWORD),
            inspect.Parameter("max_variants", keyword),
            *(inspect.Parameter(name, keyword, default=None) for name in keywords),
        ]
    )
    # The class made with that `expand`: what Expander reads of a subclass is read from it.
    written = type("Written", (Expander,), {"name": "written", "expand": expand})()
    written.given = given
    return written


@pytest.mark.parametrize(
    "keywords",
    [
        tuple(c)
        for n in range(len(OPTIONAL_KEYWORDS) + 1)
        for c in itertools.combinations(OPTIONAL_KEYWORDS, n)
    ],
    ids=lambda k: "+".join(k) or "none",
)
def test_an_expander_gets_exactly_the_keywords_it_takes(
    index: TantivyRetriever, keywords: tuple[str, ...]
) -> None:
    expander = written_with(keywords)
    retriever = MultiQueryRetriever([index], expander=expander, max_variants=2)
    result = retriever.search("owls", filter={"tenant": "a"}, history=["owls at night"])
    asyncio.run(retriever.asearch("owls", filter={"tenant": "a"}, history=["owls at night"]))
    assert result.diagnostics.expansion.fallback_reason is None
    assert expander.given == [{"max_variants", *keywords}] * 2
    assert expander.reads_filter is ("filter" in keywords)
    assert (expander.strategies == ()) is ("strategy" not in keywords)
