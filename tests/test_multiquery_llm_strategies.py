"""The strategies of ``LLMExpander`` given the conversation (a scripted server on 127.0.0.1): what each
asks, condense without a conversation, hyde's passage routed to the retrievers that read plain text
only; their names from one list in every entry point; and answers that are not valid UTF-8."""

from __future__ import annotations

import argparse
import json
from typing import Any

import pytest
from fanfuse.cli import build_parser, llm_options, main
from fanfuse.multiquery import LLMExpander, MultiQueryRetriever
from fanfuse.multiquery.conversation import check_history
from fanfuse.multiquery.expand.llm_prompts import STRATEGIES
from fanfuse.multiquery.plain_text import PlainTextQueries
from fanfuse.service.schema import SearchRequest
from llm_server import Reply, ScriptedChatServer, completion, llm_server
from multiquery_toys import KeywordRetriever

__all__ = ["llm_server"]  # the fixture, imported for pytest

QUERY = "which one fuses scores?"
HISTORY = ["compare rrf and combsum", {"role": "assistant", "content": "RRF fuses ranks; combsum scores."}]
GOOD = json.dumps({"queries": ["does combsum fuse scores", "score fusion combsum"]})


def expander(server: ScriptedChatServer, **options: Any) -> LLMExpander:
    return LLMExpander(server.base_url, model="scripted", timeout=5.0, **options)


@pytest.mark.parametrize("strategy", list(STRATEGIES))
def test_each_strategy_asks_with_the_conversation(llm_server: ScriptedChatServer, strategy: str) -> None:
    llm_server.answer("A passage about score fusion." if STRATEGIES[strategy].passage else GOOD)
    history = check_history([*HISTORY, {"role": "system", "content": "be terse"}])
    expansion = expander(llm_server, strategy=strategy).expand(QUERY, max_variants=3, history=history)
    assert expansion.fallback_reason is None
    system, user = llm_server.requests[0].body["messages"]
    wanted = 1 if STRATEGIES[strategy].passage else 2
    assert STRATEGIES[strategy].ask.format(n=wanted) in system["content"]
    assert "comes from a conversation" in system["content"]
    # The user and assistant turns, oldest first, then the question; a system turn is the chat's own.
    assert user["content"] == (
        "Conversation:\nUser: compare rrf and combsum\nAssistant: RRF fuses ranks; combsum scores.\n\n"
        f"Question: {QUERY}"
    )
    assert ('"queries"' in system["content"]) != STRATEGIES[strategy].passage


@pytest.mark.parametrize("strategy", list(STRATEGIES))
def test_without_a_conversation_the_question_is_asked_alone(
    llm_server: ScriptedChatServer, strategy: str
) -> None:
    llm_server.answer("A passage about score fusion." if STRATEGIES[strategy].passage else GOOD)
    expansion = expander(llm_server, strategy=strategy).expand(QUERY, max_variants=3)
    if STRATEGIES[strategy].needs_history:  # condense: nothing to condense, nothing asked
        assert llm_server.requests == []
        assert [v.source for v in expansion.variants] == ["original"]
        assert (
            expansion.note
            == f"{strategy} rewrites a question from its conversation; without history it is searched as is"
        )
        return
    system, user = llm_server.requests[0].body["messages"]
    assert user["content"] == QUERY and "conversation" not in system["content"]


def test_hyde_searches_its_passage_with_the_plain_text_retrievers_only(
    llm_server: ScriptedChatServer,
) -> None:
    passage = "Hypothetical documents help dense retrieval: fusion of ranked lists."
    llm_server.answer(f"Here is a passage:\n{passage}")
    bm25, dense = KeywordRetriever(), KeywordRetriever()
    retriever = MultiQueryRetriever(
        {"bm25": bm25, "dense": PlainTextQueries(dense)}, expander=expander(llm_server, strategy="hyde")
    )
    result = retriever.search(QUERY, max_variants=3)
    assert [(v.text, v.source) for v in result.diagnostics.variants] == [
        (QUERY, "original"),
        (passage, "llm"),
    ]
    assert [call.query for call in bm25.calls] == [QUERY]  # BM25 never gets the passage
    assert sorted(call.query for call in dense.calls) == sorted([QUERY, passage])
    skipped = {(b.variant_index, b.retriever) for b in result.diagnostics.branches if b.skipped}
    assert skipped == {(1, "bm25")}
    assert result.diagnostics.expansion.note is None  # one passage is what hyde asks for


def test_a_hyde_passage_in_json_or_a_fence_is_read(llm_server: ScriptedChatServer) -> None:
    for answer in ('{"passage": "Fusion combines lists."}', "```\nFusion combines lists.\n```"):
        llm_server.answer(answer)
        expansion = expander(llm_server, strategy="hyde").expand(QUERY, max_variants=2)
        assert [v.text for v in expansion.variants] == [QUERY, "Fusion combines lists."]


def _choices(parser: argparse.ArgumentParser, command: str, dest: str) -> Any:
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices[command]
    return next(a for a in sub._actions if a.dest == dest).choices


def _flags(command: str) -> dict[str, str]:
    parser = build_parser(command)
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices[command]
    return {a.dest: a.option_strings[0] for a in sub._actions if a.option_strings}


def test_the_strategy_names_come_from_one_list() -> None:
    for command in ("search", "serve"):
        assert list(_choices(build_parser(command), command, "strategy")) == list(STRATEGIES), command
    schema = SearchRequest.model_json_schema()["properties"]["strategy"]
    assert schema["enum"] == [*STRATEGIES, None]
    for strategy in STRATEGIES:
        assert SearchRequest(query="q", strategy=strategy).strategy == strategy
        assert LLMExpander("http://127.0.0.1:1/v1", model="m", strategy=strategy).strategy == strategy


def test_search_and_serve_take_the_same_expander_flags() -> None:
    expander_flags = {"expander", *llm_options.LLM_FLAGS}
    for command in ("search", "serve"):
        flags = _flags(command)
        assert expander_flags <= set(flags), command
        assert {dest: flags[dest] for dest in llm_options.LLM_FLAGS} == llm_options.LLM_FLAGS


@pytest.mark.parametrize("command", ["search", "serve"])
@pytest.mark.parametrize("dest", list(llm_options.LLM_FLAGS))
def test_every_llm_flag_without_expander_llm_is_refused(
    command: str, dest: str, capsys: pytest.CaptureFixture[str], tmp_path: Any
) -> None:
    """Each flag of `--expander llm`, read from the parser itself: alone it would do nothing."""
    values = {"strategy": "condense", "temperature": "0", "max_tokens": "5", "llm_base_url": "http://x/v1"}
    values["llm_timeout"] = "30"
    flag = llm_options.LLM_FLAGS[dest]
    args = [command, "--index", str(tmp_path), *(["question"] if command == "search" else [])]
    assert main([*args, flag, values.get(dest, "m")]) == 2
    err = capsys.readouterr().err
    assert err == f"fanfuse {command}: error: {flag} goes with --expander llm and would do nothing here; " + (
        f"drop {flag} or give --expander llm\n"
    )


@pytest.mark.parametrize("where", ["body", "json escape"])
def test_an_answer_that_is_not_utf8_makes_no_variant(llm_server: ScriptedChatServer, where: str) -> None:
    if where == "body":  # bytes that are not UTF-8 inside the reply
        good, bad = "rank fusion explained", "caf\udce9 fusion"
        body = completion(json.dumps({"queries": [good, "XX"]})).replace(b"XX", b"caf\xe9 fusion")
    else:  # a lone surrogate spelled as a JSON escape
        good, bad = "rank fusion explained", "\udce9"
        body = completion('{"queries": ["rank fusion explained", "caf\\udce9 fusion"]}')
    llm_server.reply(Reply(200, body))
    expansion = expander(llm_server).expand(QUERY, max_variants=3)
    assert [v.text for v in expansion.variants] == [QUERY, good]
    assert (
        expansion.note
        == "dropped 1 variant(s) that were not valid UTF-8 text; asked the model for 2 variants, got 1 usable"
    )
    assert bad not in json.dumps([v.text for v in expansion.variants])


def test_an_answer_with_nothing_but_invalid_utf8_falls_back_saying_so(llm_server: ScriptedChatServer) -> None:
    llm_server.reply(Reply(200, completion("XX").replace(b"XX", b"\xff\xfe\xfd")))
    expansion = expander(llm_server).expand(QUERY, max_variants=3)
    assert expansion.fallback_reason == "the model's answer is not valid UTF-8 text"
    assert all("\ufffd" not in v.text for v in expansion.variants)


def test_the_service_serves_the_llm_expander_and_its_strategies(
    llm_server: ScriptedChatServer, tmp_path: Any
) -> None:
    fastapi = pytest.importorskip("fastapi", reason="the serve extra is not installed")
    from fanfuse.retrievers.tantivy_index import TantivyRetriever
    from fanfuse.service import app_for_index
    from fastapi.testclient import TestClient

    assert fastapi
    TantivyRetriever.build([{"id": "d", "text": "combsum fuses scores"}], tmp_path / "idx")
    app = app_for_index(tmp_path / "idx", expander=expander(llm_server))
    with TestClient(app) as http:
        assert http.get("/healthz").json()["expander"] == "llm"
        llm_server.answer(GOOD)
        answer = http.post("/search", json={"query": QUERY, "strategy": "entity", "max_variants": 3})
        assert answer.status_code == 200
        assert "one named entity" in llm_server.requests[-1].body["messages"][0]["content"]
        sources = [v["source"] for v in answer.json()["diagnostics"]["variants"]]
        assert sources == ["original", "llm", "llm"]
        refused = http.post("/search", json={"query": QUERY, "expander": "heuristic"})
        assert refused.status_code == 422 and refused.json()["detail"][0]["loc"] == ["body", "expander"]
        assert http.post("/search", json={"query": QUERY, "expander": "none"}).status_code == 200
    assert len(llm_server.requests) == 1  # expansion off: no request
