"""The fan-out when a retriever misbehaves: bad hits, endless or stuck output, a backend that hangs.

One bad retriever may only fail its own branches, named in the diagnostics; the healthy ones answer,
on every path (``search`` without an event loop, ``search`` through the background loop, ``asearch``).
"""

from __future__ import annotations

import asyncio
import importlib
import itertools
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import pytest
from fanfuse.multiquery import FusedHit, MultiQueryRetriever, SearchResult
from fanfuse.multiquery.planning import SearchOptions
from fanfuse.retrievers import Hit
from multiquery_toys import AsyncKeywordRetriever, FixedRetriever, KeywordRetriever

QUERY = "how does rank fusion combine ranked lists"
MODES = ["sync", "sync-on-loop", "async"]


def run(retriever: MultiQueryRetriever, mode: str, **options: Any) -> SearchResult:
    if mode == "async":
        return asyncio.run(retriever.asearch(QUERY, **options))
    return retriever.search(QUERY, **options)


def healthy(mode: str) -> KeywordRetriever:
    """A healthy retriever; an async one sends a sync search through the background event loop."""
    return AsyncKeywordRetriever(name="good") if mode == "sync-on-loop" else KeywordRetriever(name="good")


class Returns:
    """A retriever that returns the given object whatever the query."""

    def __init__(self, result: object):
        self.result = result

    def search(self, query: str, k: int, filter: Mapping[str, Any] | None = None) -> Any:
        return self.result


class Odd:
    """A hit-like object with whatever attributes it is given."""

    def __init__(self, **fields: object):
        self.__dict__.update(fields)


BAD_OUTPUTS = {
    "lone surrogate id": ([Hit("a", 1.0), Hit("\ud800", 0.5)], "hit 2 has an id that is not valid Unicode"),
    "None id": ([Odd(id=None, score=1.0)], "hit 1 has an id of type NoneType; ids must be str or int"),
    "bool id": ([Odd(id=True, score=1.0)], "hit 1 has an id of type bool"),
    "NaN score": ([Hit("a", float("nan"))], "hit 1 has score nan; scores must be finite numbers"),
    "str score": ([Odd(id="a", score="high")], "hit 1 has a score of type str"),
    "list payload": (
        [Odd(id="a", score=1.0, payload=[1])],
        "hit 1 has a payload of type list; payloads must be mappings",
    ),
    "no hits at all": (42, "returned int, expected a list of Hit"),
}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("case", list(BAD_OUTPUTS))
def test_bad_hits_fail_only_their_branch_and_name_the_retriever(case: str, mode: str) -> None:
    output, message = BAD_OUTPUTS[case]
    good = healthy(mode)
    retriever = MultiQueryRetriever({"good": good, "bad": Returns(output)}, max_variants=2)
    result = run(retriever, mode)
    assert result.ids and result.ids == run(MultiQueryRetriever({"good": good}, max_variants=2), mode).ids
    failed = result.diagnostics.failed_branches
    assert [b.retriever for b in failed] == ["bad", "bad"]
    assert all(f"retriever 'bad' {message}" in (b.error or "") for b in failed), failed[0].error


def test_int_ids_are_read_as_their_decimal_strings() -> None:
    result = MultiQueryRetriever(
        {"n": FixedRetriever(["7", "8"]), "i": Returns([Odd(id=8, score=1.0)])}, expansion=False
    ).search(QUERY)
    assert result.ids == ["8", "7"] and not result.diagnostics.failed_branches


class Stuck:
    """A retriever whose calls block until ``release`` is set (a backend that stopped answering).

    With ``lazy`` it returns a generator that yields one hit, then blocks."""

    def __init__(self, release: threading.Event, *, lazy: bool = False):
        self.release = release
        self.lazy = lazy
        self.calls = 0
        self._lock = threading.Lock()

    def search(
        self, query: str, k: int, filter: Mapping[str, Any] | None = None
    ) -> Iterator[Hit] | list[Hit]:
        with self._lock:
            self.calls += 1
        if self.lazy:
            return self.trickle()
        self.release.wait()
        return [Hit("late", 1.0)]

    def trickle(self) -> Iterator[Hit]:
        yield Hit("first", 1.0)
        self.release.wait()
        yield Hit("late", 0.5)


@pytest.fixture
def release() -> Iterator[threading.Event]:
    event = threading.Event()
    yield event
    event.set()  # frees every thread still blocked in a stuck retriever


class AsyncStuck(Stuck):
    """An ``async def`` retriever that returns the same blocking generator."""

    async def search(  # type: ignore[override]
        self, query: str, k: int, filter: Mapping[str, Any] | None = None
    ) -> Iterator[Hit]:
        return self.trickle()


@pytest.mark.parametrize("stuck_kind", [Stuck, AsyncStuck])
@pytest.mark.parametrize("mode", MODES)
def test_a_stuck_generator_times_out_in_its_own_branch(
    mode: str, stuck_kind: type[Stuck], release: threading.Event
) -> None:
    deadline = 1.5  # one the healthy branches meet on a loaded 2-core machine
    retrievers = {"good": healthy(mode), "stuck": stuck_kind(release, lazy=True)}
    retriever = MultiQueryRetriever(retrievers, max_variants=2, branch_timeout=deadline)
    begin = time.monotonic()
    result = run(retriever, mode)
    assert time.monotonic() - begin < 3 * deadline
    by_name = {(b.retriever, b.variant_index): b for b in result.diagnostics.branches}
    assert all(by_name["stuck", i].timed_out for i in (0, 1))
    assert all(by_name["good", i].ok for i in (0, 1)) and result.ids[0] == "rrf"


@pytest.mark.parametrize("mode", MODES)
def test_an_endless_generator_is_cut_at_the_deadline(mode: str) -> None:
    endless = Returns(itertools.repeat(Hit("again", 1.0)))
    retriever = MultiQueryRetriever(
        {"good": healthy(mode), "endless": endless}, expansion=False, branch_timeout=0.3
    )
    result = run(retriever, mode)
    (bad,) = result.diagnostics.failed_branches
    assert bad.retriever == "endless" and bad.timed_out
    assert result.ids[0] == "rrf"


def test_a_hung_backend_takes_a_bounded_number_of_threads_and_never_the_healthy_ones(
    release: threading.Event,
) -> None:
    hung = Stuck(release)
    retriever = MultiQueryRetriever(
        {"good": KeywordRetriever(name="good"), "hung": hung},
        max_variants=2,
        # Long enough that the healthy branches, queued behind each other on a busy machine, finish in
        # time: what times out is the hung backend, never them.
        branch_timeout=2.0,
        max_workers=3,
    )
    expected = MultiQueryRetriever({"good": KeywordRetriever()}, max_variants=2).search(QUERY).ids

    def one_search(i: int) -> SearchResult:
        return asyncio.run(retriever.asearch(QUERY)) if i % 2 else retriever.search(QUERY)

    results: list[SearchResult] = []
    for round_ in range(3):  # 30 searches, 10 at a time; the first round already fills the hung lane
        threads = [
            threading.Thread(target=lambda i=i: results.append(one_search(i)))
            for i in range(10 * round_, 10 * round_ + 10)
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    assert len(results) == 30
    for result in results:
        assert result.ids == expected
        assert {b.retriever for b in result.diagnostics.failed_branches} == {"hung"}
        assert all(b.timed_out for b in result.diagnostics.failed_branches)
    # Its 3 threads took one call each and stuck there; every later call waited for them in vain.
    assert hung.calls == 3
    stuck_threads = [t for t in threading.enumerate() if t.name.startswith("fanfuse-hung")]
    assert len(stuck_threads) == 3


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_a_hung_reranker_leaves_the_fused_order_at_the_deadline(mode: str, release: threading.Event) -> None:
    def hung_reranker(query: str, hits: Sequence[FusedHit]) -> list[float]:
        release.wait()
        return [0.0] * len(hits)

    retriever = MultiQueryRetriever([KeywordRetriever()], expansion=False, branch_timeout=0.5)
    fused = retriever.search(QUERY).ids
    begin = time.monotonic()
    result = run(retriever, mode, reranker=hung_reranker)
    assert time.monotonic() - begin < 3.0
    assert result.ids == fused and result.diagnostics.rerank_error == "timed out after 0.5 s"


class OwnTimeout:
    """A backend whose client gives up at once with its own TimeoutError."""

    def search(self, query: str, k: int, filter: Mapping[str, Any] | None = None) -> list[Hit]:
        raise TimeoutError("backend read timed out")


@pytest.mark.parametrize("mode", MODES)
def test_a_retrievers_own_timeout_is_its_error_not_the_branch_deadline(mode: str) -> None:
    retriever = MultiQueryRetriever({"good": healthy(mode), "own": OwnTimeout()}, expansion=False)
    (failed,) = run(retriever, mode).diagnostics.failed_branches
    assert (failed.retriever, failed.error, failed.timed_out) == (
        "own",
        "TimeoutError: backend read timed out",
        False,
    )


@pytest.mark.parametrize("option", sorted(SearchOptions.__optional_keys__))
def test_an_unknown_option_is_a_type_error_that_lists_the_options(option: str) -> None:
    """Every search option, misspelt, in both calls: the message names it and lists the options."""
    retriever = MultiQueryRetriever([KeywordRetriever()])
    wrong = option[:-2] + option[-1] if len(option) > 2 else option * 2  # a letter dropped or doubled
    assert wrong not in SearchOptions.__optional_keys__
    listed = f"(search options: {', '.join(SearchOptions.__annotations__)})"
    calls = {
        "search": retriever.search,
        "asearch": lambda query, **options: asyncio.run(retriever.asearch(query, **options)),
    }
    for name, call in calls.items():
        with pytest.raises(TypeError) as refused:
            call(QUERY, **{wrong: 3})
        assert str(refused.value) == f"{name}() got an unexpected keyword argument {wrong!r} {listed}"
        assert option in listed


# The framework adapters that hand search options to every search: its package, and whether it takes
# the retriever by keyword (LangChain's is a pydantic model).
ADAPTERS = {
    "langchain": ("langchain_core", True),
    "llamaindex": ("llama_index.core", False),
    "haystack": ("haystack", False),
}


@pytest.mark.parametrize("framework", ADAPTERS)
def test_an_adapter_refuses_an_unknown_search_option_when_it_is_made(framework: str) -> None:
    """At construction, as `search` refuses it, not at the first search of a running chain."""
    package, by_keyword = ADAPTERS[framework]
    pytest.importorskip(package)
    adapter = importlib.import_module(f"fanfuse.integrations.{framework}").FanfuseRetriever
    multi = MultiQueryRetriever([KeywordRetriever()])
    positional, keywords = ((), {"retriever": multi}) if by_keyword else ((multi,), {})

    def made(options: dict[str, Any]) -> Any:
        return adapter(*positional, **keywords, search_kwargs=options)

    listed = f"(search options: {', '.join(SearchOptions.__annotations__)})"
    with pytest.raises(TypeError) as refused:
        made({"top_k": 3, "topk": 3})
    assert str(refused.value) == f"search_kwargs got an unexpected keyword argument 'topk' {listed}"
    assert made({"top_k": 3, "method": "rrf"}).search_kwargs == {"top_k": 3, "method": "rrf"}
