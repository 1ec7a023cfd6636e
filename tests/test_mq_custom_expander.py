"""An expander of the caller's own (an ``Expander`` subclass) is treated as the built-in ones are.

A failure of it (an exception, a Rust panic) falls back to the original query, the reason in
``diagnostics.expansion.fallback_reason``, as ``CallableExpander``, ``CombinedExpander`` and
``LLMExpander`` do for their own failures. What ``expand`` / ``aexpand`` return must be an
``Expansion`` of ``Variant`` s: anything else (a list of str, which a ``CallableExpander``'s function
returns) is refused where it is returned, naming the subclass and what it must return; a direct call
raises that ``TypeError``, a search falls back with it. Every search path is tried."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from fanfuse import InvalidSetting
from fanfuse.multiquery import (
    CallableExpander,
    CombinedExpander,
    Expander,
    Expansion,
    HeuristicExpander,
    LLMExpander,
    MultiQueryRetriever,
    SearchResult,
    Variant,
    VariantCache,
)
from multiquery_toys import AsyncKeywordRetriever, KeywordRetriever

QUERY = "how does rank fusion combine ranked lists"
MODES = ["sync", "sync-calling-thread", "sync-on-loop", "async"]
WRONG = (
    "an expander returns an Expansion of Variants, the original query first "
    "(a function that returns a list of str goes in CallableExpander)"
)
# Test double: the panic as pyo3 raises it (a class of that name and module, a BaseException).
PanicException = type("PanicException", (BaseException,), {"__module__": "pyo3_runtime"})


def searched(mode: str, expander: Expander, **options: Any) -> SearchResult:
    retriever = AsyncKeywordRetriever() if mode == "sync-on-loop" else KeywordRetriever()
    timeout = None if mode == "sync-calling-thread" else 10.0
    with MultiQueryRetriever([retriever], expander=expander, branch_timeout=timeout, **options) as multi:
        if mode == "async":
            return asyncio.run(multi.asearch(QUERY))
        return multi.search(QUERY)


class ListReturning(Expander):
    """Test double: an expander of one's own that returns its variants as a plain list."""

    def __init__(self) -> None:
        self.calls = 0

    def expand(self, query: str, *, max_variants: int, strategy: str | None = None) -> Any:
        self.calls += 1
        return [query, "fusion of rankings"]


class Unreachable(Expander):
    """Test double: an expander of one's own whose backend refuses the connection."""

    name = "unreachable"

    def __init__(self, error: BaseException | None = None) -> None:
        self.error = error or ConnectionError("connection refused")
        self.calls = 0

    def cache_key(self) -> Any:
        return ("unreachable",)

    def expand(self, query: str, *, max_variants: int, strategy: str | None = None) -> Expansion:
        self.calls += 1
        raise self.error


class AsyncUnreachable(Expander):
    """Test double: the same with an ``async def aexpand``, so sync searches go by the background loop."""

    sync_capable = False

    def expand(self, query: str, *, max_variants: int, strategy: str | None = None) -> Expansion:
        raise AssertionError("a search calls aexpand of an expander that is not sync_capable")

    async def aexpand(self, query: str, *, max_variants: int, strategy: str | None = None) -> Expansion:
        raise ConnectionError("connection refused")


class StrsInExpansion(Expander):
    """Test double: an ``Expansion`` built of str instead of ``Variant``."""

    def expand(self, query: str, *, max_variants: int, strategy: str | None = None) -> Any:
        return Expansion((query, "fusion of rankings"))  # type: ignore[arg-type]


@pytest.mark.parametrize("mode", MODES)
def test_a_list_returned_by_expand_falls_back_naming_the_expander(mode: str) -> None:
    result = searched(mode, ListReturning())
    assert [v.text for v in result.diagnostics.variants] == [QUERY] and result.hits
    reason = f"TypeError: ListReturning.expand returned list: {WRONG}"
    assert result.diagnostics.expansion.fallback_reason == reason
    assert result.diagnostics.degraded


@pytest.mark.parametrize("mode", MODES)
def test_an_expansion_of_str_falls_back_naming_the_expander(mode: str) -> None:
    reason = searched(mode, StrsInExpansion()).diagnostics.expansion.fallback_reason
    assert (
        reason
        == f"TypeError: StrsInExpansion.expand returned an Expansion without a tuple of Variant: {WRONG}"
    )


def test_a_direct_call_that_returns_a_list_is_refused_naming_what_to_return() -> None:
    with pytest.raises(
        TypeError, match=r"^ListReturning\.expand returned list: an expander returns an Expansion"
    ):
        ListReturning().expand(QUERY, max_variants=3)
    with pytest.raises(TypeError, match=r"^ListReturning\.expand returned list"):  # the inherited aexpand
        asyncio.run(ListReturning().aexpand(QUERY, max_variants=3))


@pytest.mark.parametrize("mode", MODES)
def test_an_expander_that_raises_falls_back_to_the_original(mode: str) -> None:
    result = searched(mode, Unreachable())
    assert [v.source for v in result.diagnostics.variants] == ["original"] and result.hits
    assert result.diagnostics.expansion.expander == "unreachable"
    assert result.diagnostics.expansion.fallback_reason == "ConnectionError: connection refused"


@pytest.mark.parametrize("mode", MODES)
def test_an_async_expander_that_raises_falls_back_to_the_original(mode: str) -> None:
    result = searched(mode, AsyncUnreachable())
    assert [v.source for v in result.diagnostics.variants] == ["original"] and result.hits
    assert result.diagnostics.expansion.fallback_reason == "ConnectionError: connection refused"


@pytest.mark.parametrize("mode", MODES)
def test_an_expander_that_panics_falls_back_to_the_original(mode: str) -> None:
    result = searched(mode, Unreachable(PanicException("bad state")))
    assert result.diagnostics.expansion.fallback_reason == "PanicException: bad state"


@pytest.mark.parametrize("mode", ["sync", "sync-calling-thread"])
def test_an_exit_in_an_expander_still_goes_up(mode: str) -> None:
    with pytest.raises(SystemExit):
        searched(mode, Unreachable(SystemExit(3)))


@pytest.mark.parametrize("mode", MODES)
def test_a_fallback_is_not_cached(mode: str) -> None:
    expander, cache = Unreachable(), VariantCache()
    for _ in range(2):
        searched(mode, expander, cache=cache)
    assert expander.calls == 2 and len(cache) == 0


@pytest.mark.parametrize("mode", MODES)
def test_a_combined_expanders_own_part_that_returns_a_list_is_skipped(mode: str) -> None:
    result = searched(mode, CombinedExpander([ListReturning(), HeuristicExpander()]))
    assert [v.source for v in result.diagnostics.variants] == ["original", "heuristic"]
    reason = f"expander: TypeError: ListReturning.expand returned list: {WRONG}"
    assert result.diagnostics.expansion.fallback_reason == reason


def strategy_refused(mode: str, expander: Expander) -> None:
    retriever = AsyncKeywordRetriever() if mode == "sync-on-loop" else KeywordRetriever()
    refused = r"strategy must be one of paraphrase, .* \(got 'bogus'\)"
    multi = MultiQueryRetriever([retriever], expander=expander)
    with multi, pytest.raises(InvalidSetting, match=refused):
        if mode == "async":
            asyncio.run(multi.asearch(QUERY, strategy="bogus"))
        else:
            multi.search(QUERY, strategy="bogus")


@pytest.mark.parametrize("mode", MODES)
def test_the_searchs_strategy_is_refused_before_any_expander_runs(mode: str) -> None:
    llm = LLMExpander(base_url="http://127.0.0.1:9/v1", model="m", timeout=0.5)
    strategy_refused(mode, llm)
    strategy_refused(mode, CombinedExpander([HeuristicExpander(), llm]))  # not its part's fallback


def test_a_good_expansion_of_ones_own_is_used_as_it_is() -> None:
    class Fixed(Expander):  # test double: a well-behaved expander of one's own
        def expand(self, query: str, *, max_variants: int, strategy: str | None = None) -> Expansion:
            return Expansion((Variant(query, "original"), Variant("fusion of rankings", "mine")))

    result = searched("sync", Fixed())
    assert [v.source for v in result.diagnostics.variants] == ["original", "mine"]
    assert result.diagnostics.expansion.fallback_reason is None


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(
    ("returned", "reason", "note", "variants"),
    [
        ([1, 2, None], "expander function returned a list of NoneType, int, expected a list of str", None, 1),
        (["rank fusion", 3], None, "dropped 1 item(s) that were not str (int)", 2),
        ("rank fusion", "expander function returned str, expected a list of str", None, 1),
    ],
)
def test_a_callables_items_that_are_no_str_are_said(
    mode: str, returned: Any, reason: str | None, note: str | None, variants: int
) -> None:
    """What a function of CallableExpander returns that is no variant is named in the diagnostics:
    a fallback where nothing is left, a note where some items are dropped; never an expansion that
    looks whole."""
    result = searched(mode, CallableExpander(lambda query, n: returned))
    assert result.diagnostics.expansion.fallback_reason == reason
    assert result.diagnostics.expansion.note == note
    assert len(result.diagnostics.variants) == variants
