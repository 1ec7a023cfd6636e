"""An expander that may block (``Expander.blocking``: one of the caller's own, a ``CallableExpander``,
a combination holding one) never holds the event loop, and no search waits for it longer than its
``branch_timeout``: a sync ``expand`` runs in the expanders' threads under ``asearch``, and an
expansion that misses the deadline leaves the search the original query and the reason. Every search
path is tried (``test_mq_custom_expander.MODES``); the built-in expanders run inline."""

from __future__ import annotations

import asyncio
import contextvars
import inspect
import threading
from collections.abc import Iterator
from typing import Any

import fanfuse.multiquery as multiquery
import pytest
from fanfuse.multiquery import (
    CallableExpander,
    CombinedExpander,
    Expander,
    Expansion,
    HeuristicExpander,
    MultiQueryRetriever,
    Variant,
)
from multiquery_toys import KeywordRetriever
from test_mq_custom_expander import MODES, QUERY

TIMEOUT = 0.2


@pytest.fixture
def release() -> Iterator[threading.Event]:
    """What a hung expander waits for; set at the end, so that its thread ends with the test."""
    event = threading.Event()
    yield event
    event.set()


class Hangs(Expander):
    """An expander of one's own whose model never answers (until released)."""

    def __init__(self, release: threading.Event):
        self.release = release

    def expand(self, query: str, *, max_variants: int) -> Expansion:
        self.release.wait(30)
        return Expansion((Variant(query, "original"), Variant(f"{query} later", "mine")))


def hung_expanders(release: threading.Event) -> dict[str, Expander]:
    def hangs(query: str, max_variants: int) -> list[str]:
        release.wait(30)
        return [f"{query} later"]

    async def ahangs(query: str, max_variants: int) -> list[str]:
        await asyncio.sleep(30)
        return [f"{query} later"]

    return {
        "subclass": Hangs(release),
        "callable": CallableExpander(hangs),
        "async callable": CallableExpander(ahangs),
        "combined": CombinedExpander([HeuristicExpander(), Hangs(release)]),
    }


def searched(mode: str, expander: Expander) -> Any:
    # The modes of test_mq_custom_expander, each with a deadline.
    with MultiQueryRetriever([KeywordRetriever()], expander=expander, branch_timeout=TIMEOUT) as multi:
        if mode == "async" or not expander.sync_capable:
            return asyncio.run(multi.asearch(QUERY))
        if mode == "sync-on-loop":

            async def on_loop() -> Any:
                return multi.search(QUERY)

            return asyncio.run(on_loop())
        return multi.search(QUERY)


@pytest.mark.parametrize("mode", [m for m in MODES if m != "sync-calling-thread"])
@pytest.mark.parametrize("kind", ["subclass", "callable", "async callable", "combined"])
def test_a_hung_expander_costs_the_variants_after_the_deadline_not_the_search(
    mode: str, kind: str, release: threading.Event
) -> None:
    expander = hung_expanders(release)[kind]
    assert expander.blocking
    result = searched(mode, expander)
    expansion = result.diagnostics.expansion
    assert expansion.fallback_reason == f"the expander timed out after {TIMEOUT:g} s (branch_timeout)"
    assert [v.source for v in result.diagnostics.variants] == ["original"]
    assert result.ids  # the original query still searched
    assert result.diagnostics.degraded


def test_a_sync_expander_runs_off_the_event_loop_under_asearch() -> None:
    loop_free = threading.Event()

    class WaitsForTheLoop(Expander):
        def expand(self, query: str, *, max_variants: int) -> Expansion:
            # Set by a task of the loop: only reachable while the loop runs on.
            answered = loop_free.wait(10)
            return Expansion((Variant(query, "original"), Variant(f"{query} {answered}", "mine")))

    async def main() -> Any:
        with MultiQueryRetriever([KeywordRetriever()], expander=WaitsForTheLoop()) as multi:
            search = asyncio.create_task(multi.asearch(QUERY))
            await asyncio.sleep(0.05)
            loop_free.set()
            return await search

    result = asyncio.run(main())
    assert [v.text for v in result.diagnostics.variants] == [QUERY, f"{QUERY} True"]


def test_an_answer_within_the_deadline_is_used_on_every_path() -> None:
    class Answers(Expander):
        def expand(self, query: str, *, max_variants: int) -> Expansion:
            return Expansion((Variant(query, "original"), Variant(f"{query} again", "mine")))

    for mode in MODES:
        result = searched(mode, Answers())
        assert [v.source for v in result.diagnostics.variants] == ["original", "mine"], mode
        assert result.diagnostics.expansion.fallback_reason is None


def test_only_the_expanders_that_may_block_are_bounded() -> None:
    built_in = {
        name: cls
        for name, cls in vars(multiquery).items()
        if inspect.isclass(cls) and issubclass(cls, Expander) and cls is not Expander
    }
    # Blocking by nature: a user's function, or the parts of a combination.
    assert {name for name, cls in built_in.items() if cls.blocking} == {
        "CallableExpander",
        "CombinedExpander",
    }
    assert not CombinedExpander([HeuristicExpander(), HeuristicExpander(2)]).blocking
    assert Hangs(threading.Event()).blocking  # one of the caller's own, by default


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("kind", ["subclass", "callable"])
def test_a_blocking_expander_sees_the_callers_context_variables(mode: str, kind: str) -> None:
    """Run in the expanders' threads, it still sees the caller's context (a request id, a trace)."""
    request_id: contextvars.ContextVar[str | None] = contextvars.ContextVar("request_id", default=None)
    seen: list[str | None] = []

    class Reads(Expander):
        def expand(self, query: str, *, max_variants: int) -> Expansion:
            seen.append(request_id.get())
            return Expansion((Variant(query, "original"), Variant(f"{query} again", "mine")))

    def reads(query: str, max_variants: int) -> list[str]:
        seen.append(request_id.get())
        return [f"{query} again"]

    expander = Reads() if kind == "subclass" else CallableExpander(reads)
    timeout = None if mode == "sync-calling-thread" else TIMEOUT * 50
    with MultiQueryRetriever([KeywordRetriever()], expander=expander, branch_timeout=timeout) as multi:

        async def searched_async() -> Any:
            request_id.set("req-async")
            return await multi.asearch(QUERY) if mode == "async" else multi.search(QUERY)

        if mode in ("async", "sync-on-loop"):
            result = asyncio.run(searched_async())
            expected = "req-async"
        else:
            request_id.set("req-sync")
            result = multi.search(QUERY)
            expected = "req-sync"
    assert result.diagnostics.expansion.fallback_reason is None
    assert seen == [expected]
