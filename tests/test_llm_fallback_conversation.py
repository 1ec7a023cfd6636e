"""A chat model that cannot be reached (a loopback port where nothing listens: a real connection
refusal) leaves a follow-up question searched in its conversation: the fallback reads the same history
the model would have, for every strategy, through `search` (the expander's `expand`) and `asearch`
(its `aexpand`).

Over an index (`open_index`, the service, `fanfuse search`), the fallback is the default search's
expander over that index, so the search is the very search it gives without a model: the same
variants, weights and hits; a fallback the caller set stays, and the caller's expander is not changed.
With no index to read (`MultiQueryRetriever` over the caller's retrievers), the history expander's
joined reading of the conversation stands in, so an elliptical follow-up ("and that?") still finds the
documents its conversation is about."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fanfuse.index_retriever import open_index
from fanfuse.multiquery import (
    CallableExpander,
    Expander,
    Expansion,
    HistoryExpander,
    LLMExpander,
    MultiQueryRetriever,
    SearchResult,
)
from fanfuse.multiquery.conversation import History, check_history, user_turns
from fanfuse.multiquery.expand.llm_prompts import STRATEGIES, StrategyName
from fanfuse.retrievers.tantivy_index import TantivyRetriever
from llm_server import refused_base_url

# Enough documents that a word of one of them is specific (BM25 idf >= 2.5), so the history
# expander's topic reading has words to add over the index.
DOCUMENTS = [
    {"id": "rotate", "text": "To rotate the log files on the backup server, run logrotate nightly."},
    {"id": "retention", "text": "The backup server keeps compressed logs for thirty days."},
    *({"id": f"note-{i}", "text": f"Release {i}: the dashboard shows widget {i} faster."} for i in range(30)),
]
QUESTION = "and that?"
HISTORY: list[Any] = ["how do I rotate the log files on the backup server"]
MODES = ["sync", "async"]


@pytest.fixture(scope="module")
def bm25(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TantivyRetriever]:
    directory: Path = tmp_path_factory.mktemp("fallback") / "idx"
    index = TantivyRetriever.build(DOCUMENTS, directory)
    yield index
    index.close()


def refused(strategy: StrategyName, fallback_expander: Expander | None = None) -> LLMExpander:
    llm = LLMExpander(refused_base_url(), model="m", api_key="x", strategy=strategy, timeout=2.0)
    if fallback_expander is not None:
        llm.fallback_expander = fallback_expander
    return llm


def searched(retriever: MultiQueryRetriever, mode: str) -> SearchResult:
    if mode == "sync":
        return retriever.search(QUESTION, history=HISTORY)
    return asyncio.run(retriever.asearch(QUESTION, history=HISTORY))


def variants(result: SearchResult) -> list[tuple[str, str, float | None]]:
    return [(v.text, v.source, v.weight) for v in result.diagnostics.variants]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("strategy", list(STRATEGIES))
def test_the_fallback_is_the_default_search_of_the_conversation(
    bm25: TantivyRetriever, strategy: StrategyName, mode: str
) -> None:
    llm = refused(strategy)
    with open_index(bm25, expander=llm) as retriever, open_index(bm25) as default:
        fell_back = searched(retriever, mode)
        expected = searched(default, mode)
    reason = fell_back.diagnostics.expansion.fallback_reason
    assert reason is not None and reason.startswith("connection failed"), reason
    assert "history" in [v.source for v in fell_back.diagnostics.variants]
    assert variants(fell_back) == variants(expected)
    assert [(h.id, h.score) for h in fell_back.hits] == [(h.id, h.score) for h in expected.hits]
    assert fell_back.ids and fell_back.ids[0] == "rotate"


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("strategy", list(STRATEGIES))
def test_the_default_fallback_reads_the_conversation(
    bm25: TantivyRetriever, strategy: StrategyName, mode: str
) -> None:
    with MultiQueryRetriever({"bm25": bm25}, expander=refused(strategy)) as retriever:
        result = searched(retriever, mode)
    assert result.diagnostics.expansion.fallback_reason is not None
    joined = HistoryExpander().joined_variant(QUESTION, user_turns(check_history(HISTORY)))
    assert (joined.text, joined.source) in [(v.text, v.source) for v in result.diagnostics.variants]
    assert "rotate" in result.ids  # the question alone ("and that?") finds nothing


def test_over_an_index_a_fallback_the_caller_set_stays(bm25: TantivyRetriever) -> None:
    own = CallableExpander(lambda query, max_variants: [f"{query} own"])
    llm = refused("paraphrase", own)
    with open_index(bm25, expander=llm) as retriever:
        result = searched(retriever, "sync")
    assert [v.text for v in result.diagnostics.variants] == [QUESTION, f"{QUESTION} own"]
    plain = refused("paraphrase")
    default = plain.fallback_expander
    with open_index(bm25, expander=plain):
        assert plain.fallback_expander is default  # the caller's expander is not changed


def test_the_fallback_expander_is_an_expander() -> None:
    llm = refused("paraphrase")
    with pytest.raises(TypeError, match=r"^fallback_expander must be an Expander \(got object\)$"):
        llm.fallback_expander = object()  # type: ignore[assignment]


class Failing(Expander):
    """A fallback that fails itself."""

    def expand(
        self, query: str, *, max_variants: int, strategy: str | None = None, history: History = ()
    ) -> Expansion:
        raise RuntimeError("the fallback broke too")


@pytest.mark.parametrize("mode", MODES)
def test_a_failing_fallback_leaves_the_question_alone(mode: str) -> None:
    llm = refused("paraphrase", Failing())
    history = check_history(HISTORY)
    if mode == "sync":
        expansion = llm.expand(QUESTION, max_variants=3, history=history)
    else:
        expansion = asyncio.run(llm.aexpand(QUESTION, max_variants=3, history=history))
    assert [v.source for v in expansion.variants] == ["original"]
    assert expansion.fallback_reason is not None
    assert expansion.fallback_reason.startswith("connection failed")
    assert "RuntimeError: the fallback broke too" in expansion.fallback_reason


def test_an_async_fallback_serves_the_sync_call_too() -> None:
    async def rewrite(query: str, max_variants: int) -> list[str]:
        return [f"{query} rewritten"]

    llm = refused("paraphrase", CallableExpander(rewrite))
    assert not llm.sync_capable
    expansion = llm.expand(QUESTION, max_variants=3)
    assert [v.text for v in expansion.variants] == [QUESTION, f"{QUESTION} rewritten"]
