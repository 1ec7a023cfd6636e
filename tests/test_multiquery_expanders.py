"""Expanders without a network: heuristic rewrites, static and callable expanders, the variant cache."""

from __future__ import annotations

import asyncio

import pytest
from fanfuse import OutOfRange
from fanfuse.errors import InvalidSetting
from fanfuse.multiquery import (
    CallableExpander,
    Expander,
    Expansion,
    HeuristicExpander,
    LLMExpander,
    StaticExpander,
    Variant,
    VariantCache,
)


def texts(expansion: Expansion) -> list[str]:
    return [v.text for v in expansion.variants]


def test_heuristic_gives_the_content_words_after_the_original() -> None:
    expansion = HeuristicExpander(max_variants=5).expand("What is reciprocal rank fusion?", max_variants=5)
    assert texts(expansion) == ["What is reciprocal rank fusion?", "reciprocal rank fusion"]
    assert [v.source for v in expansion.variants] == ["original", "heuristic"]
    assert expansion.fallback_reason is None


@pytest.mark.parametrize(
    "query",
    [
        "rank fusion",  # nothing to drop: the content words are the query
        "colbert",
        "how does rank fusion combine ranked lists",
        "split a file path into the directory and the file name",
    ],
)
def test_heuristic_emits_no_variant_that_repeats_a_list_on_an_or_backend(query: str) -> None:
    # A plain query is already an OR of its words on BM25 engines and a bag of words for embedders:
    # neither the words joined by OR nor the whole question quoted as one phrase is a variant there.
    variants = texts(HeuristicExpander(max_variants=5).expand(query, max_variants=5))
    assert len(variants) <= 2
    assert not any(" OR " in v or v.startswith('"') for v in variants[1:])


def test_heuristic_joins_the_content_words_by_or_for_an_and_backend() -> None:
    expansion = HeuristicExpander(default_operator="and").expand("What is rank fusion?", max_variants=5)
    assert texts(expansion) == ["What is rank fusion?", "rank fusion", "rank OR fusion"]
    assert texts(HeuristicExpander(default_operator="and").expand("rank fusion", max_variants=5)) == [
        "rank fusion",
        "rank OR fusion",
    ]


@pytest.mark.parametrize(
    ("query", "variant"),
    [
        ("what does the with statement do", 'with statement "with statement"'),
        ("how does a for loop end", 'for loop end "for loop"'),
        ("when is the is operator true", 'is operator true "is operator"'),
        ("what is the most common error", "common error"),  # a modifier after "the", not a subject
        ("is the same name allowed twice", "name allowed twice"),
        ("Do the Arizona Cardinals play outside the US?", "Arizona Cardinals play outside US"),  # acronym
        ("what is it", None),  # only stopwords: nothing to search but the question
        ("WHAT IS IT FOR", None),  # capitals throughout are shouting, not acronyms
        ("What's a hash and why don't lists have one", "hash lists one"),
    ],
)
def test_heuristic_keeps_stopwords_that_are_the_subject(query: str, variant: str | None) -> None:
    assert HeuristicExpander().candidates(query) == ([variant] if variant else [])


@pytest.mark.parametrize(
    ("query", "variant"),
    [
        ("how does std::vector grow", '"std::vector" grow'),
        ("what is os.path.split for", '"os.path.split"'),
        ("what is __init__ used for", "__init__ used"),
        ("why is the call to run() so slow", 'call "run()" slow'),
        ("is obj->next null at the end", '"obj->next" null end'),
        ("what changed in python 3.11 for it", 'changed python "3.11"'),
        ("what does `with open(f)` do", '"with open(f)"'),
        ('what is "the with statement" about', '"the with statement"'),
        ("how do I use cluster-create", 'use "cluster-create"'),
        ("cats AND dogs OR birds", "cats dogs birds"),
    ],
)
def test_heuristic_keeps_code_symbols_and_quoted_spans_as_phrases(query: str, variant: str) -> None:
    assert HeuristicExpander().candidates(query) == [variant]


def test_heuristic_skips_the_keyword_variant_when_there_is_no_stopword() -> None:
    assert texts(HeuristicExpander().expand("rank fusion", max_variants=5)) == ["rank fusion"]


def test_heuristic_leaves_a_single_word_alone() -> None:
    assert texts(HeuristicExpander().expand("colbert", max_variants=5)) == ["colbert"]


def test_heuristic_max_variants_counts_the_original() -> None:
    query = "how does dense retrieval work"
    assert len(HeuristicExpander(max_variants=2, default_operator="and").expand(query).variants) == 2
    assert len(HeuristicExpander(max_variants=5, default_operator="and").expand(query).variants) == 3
    assert texts(HeuristicExpander().expand(query, max_variants=1)) == [query]


def test_heuristic_dedupes_case_insensitively() -> None:
    # Without stopwords the keyword variant equals the original, up to case: it must not repeat.
    expansion = HeuristicExpander(stopwords=[], default_operator="and").expand("Rank FUSION", max_variants=5)
    assert [t.casefold() for t in texts(expansion)] == ["rank fusion", "rank or fusion"]


def test_heuristic_rejects_a_bad_max_variants_or_default_operator() -> None:
    with pytest.raises(OutOfRange, match="max_variants must be an int from 1 to 5"):
        HeuristicExpander(max_variants=6)
    with pytest.raises(TypeError, match="max_variants must be an int"):
        HeuristicExpander(max_variants="3")  # type: ignore[arg-type]
    with pytest.raises(InvalidSetting, match=r"default_operator must be one of or, and \(got 'xor'\)"):
        HeuristicExpander(default_operator="xor")


def test_static_expander_looks_variants_up_and_keeps_the_original_first() -> None:
    expander = StaticExpander({"and the dense one?": ["dense retrieval", "AND THE DENSE ONE?"]})
    assert texts(expander.expand("and the dense one?", max_variants=5)) == [
        "and the dense one?",
        "dense retrieval",
    ]
    assert texts(expander.expand("unknown", max_variants=5)) == ["unknown"]


def test_callable_expander_sync_async_and_failing() -> None:
    def sync_fn(query: str, n: int) -> list[str]:
        return [query, f"{query} explained", f"{query} examples", "extra"]

    async def async_fn(query: str, n: int) -> list[str]:
        return [f"about {query}"]

    def broken(query: str, n: int) -> list[str]:
        raise RuntimeError("model offline")

    assert texts(CallableExpander(sync_fn).expand("rrf", max_variants=3)) == [
        "rrf",
        "rrf explained",
        "rrf examples",
    ]
    assert texts(asyncio.run(CallableExpander(async_fn).aexpand("rrf", max_variants=3))) == [
        "rrf",
        "about rrf",
    ]
    failed = asyncio.run(CallableExpander(broken).aexpand("rrf", max_variants=3))
    assert texts(failed) == ["rrf"]
    assert failed.fallback_reason == "RuntimeError: model offline"
    with pytest.raises(TypeError, match="fn must be callable"):
        CallableExpander("not a function")  # type: ignore[arg-type]


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def one(text: str) -> Expansion:
    return Expansion((Variant(text, "original"),))


def test_cache_expires_after_ttl_and_evicts_least_recently_used() -> None:
    clock = Clock()
    cache = VariantCache(maxsize=2, ttl=10.0, clock=clock)
    cache.put("a", one("a"))
    cache.put("b", one("b"))
    assert cache.get("a") == one("a")  # "a" is now the most recently used
    cache.put("c", one("c"))  # evicts "b"
    assert cache.get("b") is None
    assert cache.get("c") == one("c")
    clock.now = 10.5
    assert cache.get("a") is None  # expired
    assert (cache.hits, cache.misses) == (2, 2)


def test_cache_does_not_keep_fallbacks() -> None:
    cache = VariantCache()
    cache.put("q", Expansion((Variant("q", "original"),), fallback_reason="HTTP 500"))
    assert cache.get("q") is None


def test_cache_rejects_bad_settings() -> None:
    with pytest.raises(OutOfRange, match="maxsize must be an int >= 1"):
        VariantCache(maxsize=0)
    with pytest.raises(OutOfRange, match="ttl must be a finite number > 0"):
        VariantCache(ttl=-1)


def test_heuristic_or_variant_names_each_term_once_in_first_seen_order() -> None:
    expander = HeuristicExpander(default_operator="and")
    variants = expander.candidates("split a File path into the directory and the file name")
    assert "split OR File OR path OR directory OR name" in variants


def budget_expanders() -> list[Expander]:
    return [
        HeuristicExpander(),
        StaticExpander({"q": ["a", "b", "c", "d", "e", "f", "g"]}),
        CallableExpander(lambda q, n: [f"v{i}" for i in range(9)]),
        LLMExpander("http://127.0.0.1:1/v1", model="m", api_key=None, environ={}),
    ]


@pytest.mark.parametrize("expander", budget_expanders(), ids=lambda e: e.name)
@pytest.mark.parametrize("budget", [0, 6, -1])
def test_every_expander_refuses_a_budget_outside_1_to_5(expander: Expander, budget: int) -> None:
    with pytest.raises(OutOfRange, match="max_variants must be an int from 1 to 5"):
        expander.expand("q", max_variants=budget)
    with pytest.raises(OutOfRange, match="max_variants must be an int from 1 to 5"):
        asyncio.run(expander.aexpand("q", max_variants=budget))
    with pytest.raises(TypeError, match="max_variants must be an int"):
        expander.expand("q", max_variants=2.0)  # type: ignore[arg-type]


def test_a_user_expander_gets_the_same_budget_check() -> None:
    class Numbered(Expander):
        def expand(self, query: str, *, max_variants: int, strategy: str | None = None) -> Expansion:
            return Expansion(tuple(Variant(f"{query} {i}", "callable") for i in range(max_variants)))

    assert len(Numbered().expand("q", max_variants=5).variants) == 5
    with pytest.raises(OutOfRange, match="max_variants must be an int from 1 to 5"):
        Numbered().expand("q", max_variants=6)
