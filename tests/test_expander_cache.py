"""A ``VariantCache`` given to a search holds the variants of every expander that gives a
``cache_key()`` (a ``CallableExpander``'s is its function), so a second search of the same question
calls nothing; for an expander without a key, the expansion's note says it is not cached, so a cache
that stays empty is never silent. Every search path is tried."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from fanfuse.multiquery import (
    CallableExpander,
    Expander,
    Expansion,
    MultiQueryRetriever,
    Variant,
    VariantCache,
)
from multiquery_toys import KeywordRetriever

QUERY = "how does rank fusion combine ranked lists"


def search_twice(expander: Expander, mode: str) -> list[Any]:
    with MultiQueryRetriever([KeywordRetriever()], expander=expander, cache=VariantCache(maxsize=8)) as multi:
        if mode == "async":

            async def both() -> list[Any]:
                return [await multi.asearch(QUERY), await multi.asearch(QUERY)]

            return asyncio.run(both())
        return [multi.search(QUERY), multi.search(QUERY)]


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_a_callable_expanders_variants_are_cached(mode: str) -> None:
    calls: list[str] = []

    def paraphrase(query: str, max_variants: int) -> list[str]:
        calls.append(query)
        return [f"{query} paraphrased"]

    first, second = search_twice(CallableExpander(paraphrase), mode)
    assert calls == [QUERY]
    assert [first.diagnostics.expansion.cached, second.diagnostics.expansion.cached] == [False, True]
    assert second.diagnostics.variants == first.diagnostics.variants


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_an_expander_without_a_key_says_it_is_not_cached(mode: str) -> None:
    calls: list[str] = []

    class Mine(Expander):
        name = "mine"

        def expand(self, query: str, *, max_variants: int) -> Expansion:
            calls.append(query)
            return Expansion((Variant(query, "original"), Variant(f"{query} mine", "mine")))

    results = search_twice(Mine(), mode)
    assert calls == [QUERY, QUERY]
    for result in results:
        assert not result.diagnostics.expansion.cached
        assert result.diagnostics.expansion.note == "not cached: the mine expander gives no cache_key()"
        assert not result.diagnostics.degraded


def test_an_unhashable_callable_is_not_cached_and_says_so() -> None:
    class Paraphrase:
        __hash__ = None  # type: ignore[assignment]

        def __call__(self, query: str, max_variants: int) -> list[str]:
            return [f"{query} again"]

    expander = CallableExpander(Paraphrase())
    assert expander.cache_key() is None
    first, _ = search_twice(expander, "sync")
    assert first.diagnostics.expansion.note == "not cached: the callable expander gives no cache_key()"
