"""A Rust panic in a caller's callable is that callable failing, wherever multi-query calls one.

pyo3 raises a panic as ``pyo3_runtime.PanicException``, a ``BaseException`` that ``except Exception``
lets through. A retriever's panic fails its branch; the same panic in a reranker leaves the fused
order with ``rerank_error`` set, and in an expander (a user function, a part of a combined expander,
the feedback expander's first-pass index) falls back as any other failure of it does. A signal, an
exit or a cancellation still goes on up. Each is tried on every search path."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from typing import Any

import pytest
from fanfuse.multiquery import (
    CallableExpander,
    CombinedExpander,
    Expander,
    FeedbackExpander,
    FusedHit,
    HeuristicExpander,
    MultiQueryRetriever,
    SearchResult,
)
from fanfuse.retrievers import Hit
from multiquery_toys import AsyncKeywordRetriever, KeywordRetriever

# Test double: the panic as pyo3 raises it (a class of that name and module, a BaseException).
PanicException = type("PanicException", (BaseException,), {"__module__": "pyo3_runtime"})
QUERY = "how does rank fusion combine ranked lists"
# sync without an event loop (in the calling thread, or the reranker's threads), sync through the
# background loop (an async retriever), async.
MODES = ["sync", "sync-calling-thread", "sync-on-loop", "async"]


def searched(mode: str, **options: Any) -> SearchResult:
    retriever = AsyncKeywordRetriever() if mode == "sync-on-loop" else KeywordRetriever()
    timeout = None if mode == "sync-calling-thread" else 10.0
    with MultiQueryRetriever([retriever], branch_timeout=timeout, **options) as multi:
        if mode == "async":
            return asyncio.run(multi.asearch(QUERY))
        return multi.search(QUERY)


def panicking_reranker(query: str, hits: Sequence[FusedHit]) -> list[float]:
    """Test double: a reranker whose compiled model panics."""
    raise PanicException("index out of bounds")


async def panicking_async_reranker(query: str, hits: Sequence[FusedHit]) -> list[float]:
    """Test double: the same, ``async def``."""
    raise PanicException("index out of bounds")


@pytest.mark.parametrize("reranker", [panicking_reranker, panicking_async_reranker])
@pytest.mark.parametrize("mode", MODES)
def test_a_panicking_reranker_leaves_the_fused_order(mode: str, reranker: Any) -> None:
    fused = searched(mode).ids
    result = searched(mode, reranker=reranker)
    assert result.ids == fused and all(h.rerank_score is None for h in result.hits)
    assert result.diagnostics.rerank_error == "PanicException: index out of bounds"
    assert result.diagnostics.degraded


@pytest.mark.parametrize("mode", ["sync", "sync-calling-thread"])
def test_an_exit_in_the_reranker_still_goes_up(mode: str) -> None:
    def exiting(query: str, hits: Sequence[FusedHit]) -> list[float]:  # test double
        raise SystemExit(3)

    with pytest.raises(SystemExit):
        searched(mode, reranker=exiting)


def panicking_function(query: str, max_variants: int) -> list[str]:
    """Test double: a user's expansion function that calls into a panicking binding."""
    raise PanicException("tokenizer state poisoned")


async def panicking_async_function(query: str, max_variants: int) -> list[str]:
    """Test double: the same, ``async def``."""
    raise PanicException("tokenizer state poisoned")


@pytest.mark.parametrize("function", [panicking_function, panicking_async_function])
@pytest.mark.parametrize("mode", MODES)
def test_a_panicking_expansion_function_falls_back_to_the_original(mode: str, function: Any) -> None:
    result = searched(mode, expander=CallableExpander(function))
    assert [v.text for v in result.diagnostics.variants] == [QUERY] and result.hits
    assert result.diagnostics.expansion.fallback_reason == "PanicException: tokenizer state poisoned"


class PanickingPart(Expander):
    """Test double: an expander of one's own over a panicking binding."""

    name = "panicky"
    REASON = "PanicException: called `Option::unwrap()` on a `None` value"

    def expand(self, query: str, *, max_variants: int, strategy: str | None = None) -> Any:
        raise PanicException("called `Option::unwrap()` on a `None` value")


@pytest.mark.parametrize("mode", MODES)
def test_a_combined_expanders_panicking_part_is_skipped(mode: str) -> None:
    expander = CombinedExpander([PanickingPart(), HeuristicExpander()])
    result = searched(mode, expander=expander)
    assert [v.source for v in result.diagnostics.variants] == ["original", "heuristic"]
    assert result.diagnostics.expansion.fallback_reason == f"panicky: {PanickingPart.REASON}"


class PanickingIndex:
    """Test double: a Tantivy index whose segment reader panics on every search."""

    def search(self, query: str, k: int, filter: Mapping[str, Any] | None = None) -> list[Hit]:
        raise PanicException("segment reader: bad offset")

    def analyze(self, text: str) -> list[tuple[str, str]]:
        return [(word, word) for word in text.lower().split()]


@pytest.mark.parametrize("mode", MODES)
def test_a_panicking_first_pass_falls_back_to_the_original(mode: str) -> None:
    result = searched(mode, expander=FeedbackExpander(PanickingIndex()))
    assert [v.source for v in result.diagnostics.variants] == ["original"] and result.hits
    reason = "no feedback variant: PanicException: segment reader: bad offset"
    assert result.diagnostics.expansion.fallback_reason == reason


FUNCTION_REASON = "PanicException: tokenizer state poisoned"
DIRECT = [
    ("expand", CallableExpander(panicking_function), FUNCTION_REASON),
    ("aexpand", CallableExpander(panicking_function), FUNCTION_REASON),
    ("aexpand", CallableExpander(panicking_async_function), FUNCTION_REASON),
    *(
        (call, CombinedExpander([PanickingPart(), HeuristicExpander()]), f"panicky: {PanickingPart.REASON}")
        for call in ("expand", "aexpand")
    ),
    *(
        (
            call,
            FeedbackExpander(PanickingIndex()),
            "no feedback variant: PanicException: segment reader: bad offset",
        )
        for call in ("expand", "aexpand")
    ),
]


@pytest.mark.parametrize(
    ("call", "expander", "reason"), DIRECT, ids=[f"{c}-{type(e).__name__}" for c, e, _ in DIRECT]
)
def test_each_built_in_expander_falls_back_on_a_panic_when_called_directly(
    call: str, expander: Expander, reason: str
) -> None:
    if call == "expand":
        expansion = expander.expand(QUERY, max_variants=3)
    else:
        expansion = asyncio.run(expander.aexpand(QUERY, max_variants=3))
    assert expansion.variants[0].text == QUERY and expansion.fallback_reason == reason
