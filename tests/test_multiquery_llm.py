"""LLMExpander against a real chat-completions server on 127.0.0.1 with scripted answers.

Each failure mode (HTTP 500, a stall past the timeout, malformed JSON, a reply that is not a chat
completion, a refused connection) must leave the search answering, with the diagnostics saying why.
"""

from __future__ import annotations

import asyncio
import json
import logging

import pytest
from fanfuse import OutOfRange
from fanfuse.errors import InvalidSetting
from fanfuse.multiquery import LLMExpander, MultiQueryRetriever, SearchResult, VariantCache
from llm_server import ScriptedChatServer, llm_server, refused_base_url
from multiquery_toys import KeywordRetriever

__all__ = ["llm_server"]  # the fixture, imported for pytest

SECRET = "sk-test-fanfuse-0123456789"
QUERY = "what is reciprocal rank fusion"


def expander(server: ScriptedChatServer, **options: object) -> LLMExpander:
    settings: dict[str, object] = {"model": "scripted", "api_key": SECRET, "timeout": 2.0, **options}
    return LLMExpander(server.base_url, **settings)  # type: ignore[arg-type]


def search(server: ScriptedChatServer, max_variants: int = 3, **options: object) -> SearchResult:
    retriever = MultiQueryRetriever([KeywordRetriever()], expander=expander(server, **options))
    return retriever.search(QUERY, max_variants=max_variants)


def test_good_json_answer_becomes_llm_variants(
    llm_server: ScriptedChatServer, caplog: pytest.LogCaptureFixture
) -> None:
    llm_server.answer(json.dumps({"queries": ["rank fusion explained", "combining ranked lists"]}))
    with caplog.at_level(logging.DEBUG):
        result = search(llm_server)
    variants = result.diagnostics.variants
    assert [(v.text, v.source) for v in variants] == [
        (QUERY, "original"),
        ("rank fusion explained", "llm"),
        ("combining ranked lists", "llm"),
    ]
    assert result.diagnostics.expansion.expander == "llm"
    assert result.diagnostics.expansion.fallback_reason is None
    assert result.hits

    (request,) = llm_server.requests
    assert request.path == "/v1/chat/completions"
    assert request.headers["Authorization"] == f"Bearer {SECRET}"
    assert request.body["model"] == "scripted"
    assert request.body["temperature"] == 0.3
    system, user = request.body["messages"]
    assert (system["role"], user["role"], user["content"]) == ("system", "user", QUERY)
    assert "exactly 2 strings" in system["content"] and '{"queries"' in system["content"]
    assert SECRET not in caplog.text
    assert "multi-query search: 3 variants" in caplog.text


def test_the_key_is_not_in_repr_and_not_sent_when_absent(llm_server: ScriptedChatServer) -> None:
    assert SECRET not in repr(expander(llm_server))
    llm_server.answer('{"queries": ["rank fusion"]}')
    LLMExpander(llm_server.base_url, model="scripted", environ={}).expand(QUERY, max_variants=2)
    assert "Authorization" not in llm_server.requests[0].headers


def test_line_list_answer_is_parsed(llm_server: ScriptedChatServer) -> None:
    llm_server.answer('Here are the queries:\n1. "rank fusion explained"\n2. What is reciprocal rank fusion')
    expansion = expander(llm_server).expand(QUERY, max_variants=3)
    # The model repeated the original (with other case): dropped, so one variant is missing.
    assert [v.text for v in expansion.variants] == [QUERY, "rank fusion explained"]
    assert expansion.note == "asked the model for 2 variants, got 1 usable"


def test_too_many_variants_are_cut(llm_server: ScriptedChatServer) -> None:
    llm_server.answer(json.dumps({"queries": ["a one", "b two", "c three", "d four"]}))
    expansion = asyncio.run(expander(llm_server).aexpand(QUERY, max_variants=3))
    assert [v.text for v in expansion.variants] == [QUERY, "a one", "b two"]
    assert expansion.note == "the model gave 4 variants, kept the first 2 new ones"


def test_strategy_and_instructions_reach_the_prompt(llm_server: ScriptedChatServer) -> None:
    llm_server.answer('{"queries": ["what ranks lists", "what is fusion"]}')
    llm_server.answer('{"queries": ["rank fusion"]}')
    llm = expander(llm_server, instructions="Queries are about information retrieval.")
    llm.expand(QUERY, max_variants=3, strategy="decompose")
    llm.expand(QUERY, max_variants=2)
    first, second = (r.body["messages"][0]["content"] for r in llm_server.requests)
    assert "sub-questions" in first and "Queries are about information retrieval." in first
    assert "Rewrite the search query in 1 different ways" in second


FAILURES = [
    ("http_500", "HTTP 500"),
    ("stall", "timeout: no answer within 0.3 s"),
    ("malformed_json", "looks like JSON but does not parse"),
    ("json_null", "the model's answer is the JSON null"),
    ("apology", "no query lines in the model's answer: 'I am sorry"),
    ("not_a_completion", "not a chat completion"),
    ("refused", "connection failed"),
]


def script_failure(server: ScriptedChatServer, case: str) -> None:
    if case == "http_500":
        server.answer_raw(500, b'{"error": "overloaded"}')
    elif case == "stall":
        server.answer('{"queries": ["too late"]}', stall=5.0)
    elif case == "malformed_json":
        server.answer('{"queries": ["rank fusion", "combin')
    elif case == "json_null":
        server.answer("null")
    elif case == "apology":
        server.answer("I am sorry, but I cannot help with that request.")
    elif case == "not_a_completion":
        server.answer_raw(200, b"<html>gateway</html>")


@pytest.mark.parametrize("mode", ["sync", "async"])
@pytest.mark.parametrize(("case", "reason"), FAILURES)
def test_failures_fall_back_to_heuristic_and_say_why(
    llm_server: ScriptedChatServer, case: str, reason: str, mode: str, caplog: pytest.LogCaptureFixture
) -> None:
    script_failure(llm_server, case)
    llm = expander(llm_server, timeout=0.3)
    if case == "refused":
        llm = LLMExpander(refused_base_url(), model="scripted", api_key=SECRET, timeout=0.3)
    retriever = MultiQueryRetriever({"kw": KeywordRetriever()}, expander=llm)
    with caplog.at_level(logging.DEBUG):
        if mode == "sync":  # sync retrievers: the expander's sync path, in this thread
            result = retriever.search(QUERY, max_variants=3)
        else:
            result = asyncio.run(retriever.asearch(QUERY, max_variants=3))
    expansion = result.diagnostics.expansion
    assert expansion.fallback_reason is not None and reason in expansion.fallback_reason
    # The heuristic stands in: the question's content words (one variant on an OR backend).
    assert [v.source for v in result.diagnostics.variants] == ["original", "heuristic"]
    assert result.ids[0] == "rrf"  # the search still answers
    assert SECRET not in caplog.text


def test_fallback_to_the_original_only(llm_server: ScriptedChatServer) -> None:
    llm_server.answer_raw(500, b"{}")
    result = search(llm_server, fallback="original")
    assert [v.text for v in result.diagnostics.variants] == [QUERY]
    assert result.diagnostics.expansion.fallback_reason == "HTTP 500 Internal Server Error"


def test_cache_saves_the_second_request_but_not_after_a_failure(llm_server: ScriptedChatServer) -> None:
    llm_server.answer_raw(500, b"{}")
    llm_server.answer('{"queries": ["rank fusion explained", "combining ranked lists"]}')
    retriever = MultiQueryRetriever([KeywordRetriever()], expander=expander(llm_server), cache=VariantCache())
    failed = retriever.search(QUERY, max_variants=3)
    fresh = retriever.search(QUERY, max_variants=3)
    cached = retriever.search(QUERY, max_variants=3)
    assert len(llm_server.requests) == 2
    assert failed.diagnostics.expansion.fallback_reason is not None
    assert (fresh.diagnostics.expansion.cached, cached.diagnostics.expansion.cached) == (False, True)
    assert [v.text for v in cached.diagnostics.variants] == [v.text for v in fresh.diagnostics.variants]
    retriever.search(QUERY, max_variants=3, strategy="entity")  # another strategy: another cache entry
    assert len(llm_server.requests) == 3


def test_settings_come_from_the_environment(llm_server: ScriptedChatServer) -> None:
    llm_server.answer('{"queries": ["rank fusion"]}')
    env = {
        "FANFUSE_LLM_BASE_URL": llm_server.base_url,
        "FANFUSE_LLM_MODEL": "env-model",
        "OPENAI_API_KEY": "k1",
    }
    LLMExpander(environ=env).expand(QUERY, max_variants=2)
    request = llm_server.requests[0]
    assert request.body["model"] == "env-model"
    assert request.headers["Authorization"] == "Bearer k1"


def test_bad_settings_fail_at_construction() -> None:
    with pytest.raises(InvalidSetting, match="FANFUSE_LLM_MODEL"):
        LLMExpander("http://127.0.0.1:1/v1", environ={})
    with pytest.raises(InvalidSetting, match="must start with http"):
        LLMExpander(model="m", environ={"FANFUSE_LLM_BASE_URL": "localhost:8000"})
    with pytest.raises(
        InvalidSetting, match="strategy must be one of paraphrase, entity, stepback, decompose"
    ):
        LLMExpander("http://x/v1", model="m", strategy="creative")
    with pytest.raises(OutOfRange, match="timeout must be"):
        LLMExpander("http://x/v1", model="m", timeout=0)
    with pytest.raises(InvalidSetting, match="fallback must be"):
        LLMExpander("http://x/v1", model="m", fallback="none")
    with pytest.raises(InvalidSetting, match="strategy must be one of"):
        MultiQueryRetriever(
            [KeywordRetriever()], expander=LLMExpander("http://x/v1", model="m"), strategy="x"
        )


@pytest.mark.parametrize(
    "change",
    [
        {"strategy": "decompose"},
        {"instructions": "Queries are about information retrieval."},
        {"model": "another"},
        {"temperature": 0.9},
        {"extra_body": {"seed": 7}},
    ],
    ids=lambda change: next(iter(change)),
)
def test_expanders_with_other_settings_do_not_share_cached_variants(
    llm_server: ScriptedChatServer, change: dict[str, object]
) -> None:
    llm_server.answer('{"queries": ["rank fusion explained", "combining ranked lists"]}')
    llm_server.answer('{"queries": ["what ranks lists", "what is fusion"]}')
    cache = VariantCache()
    plain = MultiQueryRetriever([KeywordRetriever()], expander=expander(llm_server), cache=cache)
    changed = MultiQueryRetriever([KeywordRetriever()], expander=expander(llm_server, **change), cache=cache)
    plain.search(QUERY, max_variants=3)
    result = changed.search(QUERY, max_variants=3)
    assert len(llm_server.requests) == 2 and not result.diagnostics.expansion.cached
    assert [v.text for v in result.diagnostics.variants][1:] == ["what ranks lists", "what is fusion"]
