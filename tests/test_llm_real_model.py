"""Every LLM strategy, with and without the conversation, against a real chat model: SmolLM2-135M on
llama.cpp's server (tests/llama_server.py), through `LLMExpander` (every client kind), `fanfuse search
--expander llm` and `fanfuse serve --expander llm`; and the answer parser on what that model writes.

A 135M model writes weak rewrites; these tests check that what it writes gets through (parsed, routed,
reported), not that it is good: measuring that is docs/mtrag-retrieval.md's job.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import httpx
import pytest
from fanfuse.cli import main
from fanfuse.multiquery import Expansion, LLMExpander, MultiQueryRetriever
from fanfuse.multiquery.conversation import History, check_history
from fanfuse.multiquery.expand.llm_parse import parse_passage, parse_variants
from fanfuse.multiquery.expand.llm_prompts import STRATEGIES, messages
from fanfuse.multiquery.plain_text import PlainTextQueries
from fanfuse.retrievers.tantivy_index import TantivyRetriever
from llama_server import MAX_TOKENS, MODEL, llama_server
from llm_clients import KINDS, client_for
from multiquery_toys import KeywordRetriever
from service_server import serve_command

__all__ = ["llama_server"]  # the fixture, imported for pytest

QUESTION = "what is reciprocal rank fusion"
# A follow-up that means nothing alone, and the conversation it comes from.
FOLLOW_UP = "Which one is more important?"
HISTORY: list[Any] = [
    "What is the difference between market cap and NAV?",
    {
        "role": "assistant",
        "content": "Market cap is the value of all of a company's shares; NAV is the net asset value "
        "of a fund per share.",
    },
]
CASES = [(strategy, with_history) for strategy in STRATEGIES for with_history in (False, True)]
TIMEOUT = 120.0  # a loaded 2-core machine; an answer takes a second or two when idle
DOCUMENTS = [
    {"id": "rrf", "text": "Reciprocal rank fusion combines ranked lists by summing 1/(k + rank)."},
    {
        "id": "nav",
        "text": "The net asset value (NAV) of a fund is its assets minus its liabilities per share.",
    },
    {"id": "cap", "text": "Market capitalization is the share price times the number of shares."},
]


def case_id(case: tuple[str, bool]) -> str:
    return f"{case[0]}-{'history' if case[1] else 'alone'}"


def real_expander(base_url: str, strategy: str, **options: Any) -> LLMExpander:
    settings = {"temperature": 0.0, "max_tokens": MAX_TOKENS, "timeout": TIMEOUT, **options}
    return LLMExpander(base_url, model=MODEL, strategy=strategy, **settings)


def check_expansion(expansion: Expansion, strategy: str, with_history: bool) -> None:
    """What the model wrote reached the search as variants of the right kind."""
    assert expansion.fallback_reason is None, expansion.fallback_reason
    variants = expansion.variants
    assert variants[0].source == "original"
    if STRATEGIES[strategy].needs_history and not with_history:
        assert len(variants) == 1 and expansion.note and "without history" in expansion.note
        return
    made = [v for v in variants[1:] if v.source == "llm"]
    assert made, f"no model variant: {expansion}"
    for variant in made:
        assert variant.text.strip() and '"queries"' not in variant.text and variant.text[0] not in "{["
        assert variant.plain_only == STRATEGIES[strategy].passage
    if STRATEGIES[strategy].passage:
        (passage,) = made
        assert passage.plain == passage.text and len(passage.text.split()) >= 4


def _turns(with_history: bool) -> History:
    return check_history(HISTORY) if with_history else ()


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_every_strategy_expands_with_the_real_model(llama_server: str, case: tuple[str, bool]) -> None:
    strategy, with_history = case
    expander = real_expander(llama_server, strategy)
    query = FOLLOW_UP if with_history else QUESTION
    expansion = expander.expand(query, max_variants=3, history=_turns(with_history))
    check_expansion(expansion, strategy, with_history)


def test_hyde_passages_reach_the_dense_side_only(llama_server: str, tmp_path: Path) -> None:
    bm25 = TantivyRetriever.build(DOCUMENTS, tmp_path / "idx")
    dense = PlainTextQueries(KeywordRetriever())
    retriever = MultiQueryRetriever(
        {"bm25": bm25, "dense": dense}, expander=real_expander(llama_server, "hyde")
    )
    result = retriever.search(QUESTION, max_variants=2)
    (passage,) = [v for v in result.diagnostics.variants if v.source == "llm"]
    ran = {(b.variant_index, b.retriever): not b.skipped for b in result.diagnostics.branches}
    assert ran == {(0, "bm25"): True, (0, "dense"): True, (1, "bm25"): False, (1, "dense"): True}
    assert passage.text and len(passage.text.split()) >= 4


@pytest.mark.parametrize("mode", ["sync", "async"])
@pytest.mark.parametrize("kind", KINDS)
def test_every_client_kind_reaches_the_real_model(llama_server: str, kind: str, mode: str) -> None:
    # A client per mode: an AsyncOpenAI client's connections belong to the event loop that made them
    # (a sync search runs it on fanfuse's background loop, asyncio.run on a loop of its own).
    client = client_for(kind, llama_server, "sk-no-key-needed", MODEL)
    if client is None:
        expander = real_expander(llama_server, "condense")
    elif kind in ("openai", "async-openai"):
        expander = LLMExpander(
            client=client,
            model=MODEL,
            strategy="condense",
            temperature=0,
            max_tokens=MAX_TOKENS,
            timeout=TIMEOUT,
        )
    else:
        expander = LLMExpander(client=client, strategy="condense", timeout=TIMEOUT)
    history = _turns(True)
    if mode == "sync":
        expansion = expander.expand(FOLLOW_UP, max_variants=3, history=history)
    else:
        expansion = asyncio.run(expander.aexpand(FOLLOW_UP, max_variants=3, history=history))
    check_expansion(expansion, "condense", True)


@pytest.mark.parametrize("strategy", list(STRATEGIES))
def test_the_parser_reads_what_the_model_writes(llama_server: str, strategy: str) -> None:
    """The raw answers, asked for directly: every parsed query is the model's text (a line of it, or a
    string of its JSON), with no wrapper left over; a passage is the answer's prose."""
    sent = messages(strategy, FOLLOW_UP, _turns(True), 1 if STRATEGIES[strategy].passage else 2, None)
    body = {"model": MODEL, "messages": sent, "temperature": 0, "max_tokens": MAX_TOKENS}
    reply = httpx.post(f"{llama_server}/chat/completions", json=body, timeout=TIMEOUT).json()
    answer = reply["choices"][0]["message"]["content"]
    if STRATEGIES[strategy].passage:
        passage = parse_passage(answer)
        assert passage and all(word in answer for word in passage.split()[:3])
        return
    queries = parse_variants(answer)
    assert queries, answer
    flat = " ".join(answer.split())
    for query in queries:
        assert query in flat or json.dumps(query)[1:-1] in flat, (query, answer)
        assert not query.startswith(("{", "[", "```", "-", "*", "1.")), (query, answer)


def test_fanfuse_search_runs_every_strategy(
    llama_server: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    TantivyRetriever.build(DOCUMENTS, tmp_path / "idx")
    flags = ["--expander", "llm", "--llm-base-url", llama_server, "--llm-model", MODEL, "--temperature", "0"]
    flags += ["--max-tokens", str(MAX_TOKENS), "--llm-timeout", str(TIMEOUT), "--max-variants", "3", "--json"]
    for strategy, with_history in CASES:
        query = FOLLOW_UP if with_history else QUESTION
        turns = [f"--turn={HISTORY[0]}"] if with_history else []
        code = main(
            ["search", "--index", str(tmp_path / "idx"), query, *flags, "--strategy", strategy, *turns]
        )
        printed = capsys.readouterr()
        assert code == 0, printed.err
        result = json.loads(printed.out)
        assert result["diagnostics"]["expansion"]["fallback_reason"] is None, (strategy, result)
        sources = [v["source"] for v in result["diagnostics"]["variants"]]
        if STRATEGIES[strategy].needs_history and not with_history:
            assert sources == ["original"]
        else:
            assert "llm" in sources, (strategy, with_history, result["diagnostics"])


def test_fanfuse_serve_runs_every_strategy(llama_server: str, tmp_path: Path) -> None:
    TantivyRetriever.build(DOCUMENTS, tmp_path / "idx")
    flags = ["--expander", "llm", "--llm-base-url", llama_server, "--llm-model", MODEL, "--temperature", "0"]
    flags += ["--max-tokens", str(MAX_TOKENS), "--llm-timeout", str(TIMEOUT)]
    with (
        serve_command("--index", str(tmp_path / "idx"), *flags) as (url, _),
        httpx.Client(base_url=url, timeout=TIMEOUT * 2) as http,
    ):
        assert http.get("/healthz").json()["expander"] == "llm"
        for strategy, with_history in CASES:
            request: dict[str, Any] = {"query": FOLLOW_UP if with_history else QUESTION, "strategy": strategy}
            request["max_variants"] = 3
            if with_history:
                request["history"] = HISTORY
            answer = http.post("/search", json=request)
            assert answer.status_code == 200, answer.text
            diagnostics = answer.json()["diagnostics"]
            assert diagnostics["expansion"]["fallback_reason"] is None, (strategy, diagnostics)
            sources = [v["source"] for v in diagnostics["variants"]]
            if STRATEGIES[strategy].needs_history and not with_history:
                assert sources == ["original"]
            else:
                assert "llm" in sources, (strategy, with_history, diagnostics)
