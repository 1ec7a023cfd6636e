"""Every way to reach a model (``base_url``, the user's openai / AsyncOpenAI client, a LangChain chat
model, a LlamaIndex LLM: the real packages) under the same rules, against a real HTTP server on
127.0.0.1 with scripted answers: the variants come through, a failure falls back with its reason, the
deadline holds, the conversation reaches the prompt. (The key in any spelling: test_multiquery_llm_
secrets.py; the real model: test_llm_real_model.py.)"""

from __future__ import annotations

import asyncio
import json
import threading
import time

import pytest
from fanfuse.errors import InvalidSetting
from fanfuse.multiquery import LLMExpander, MultiQueryRetriever, VariantCache
from fanfuse.multiquery.conversation import check_history
from llm_clients import KINDS, client_for, expander_for
from llm_server import ScriptedChatServer, llm_server
from multiquery_toys import AsyncKeywordRetriever, KeywordRetriever

__all__ = ["llm_server"]  # the fixture, imported for pytest

KEY = "sk-test-clients-0123456789"
QUERY = "which one is cheaper?"
HISTORY = check_history(["compare rrf and combsum", {"role": "assistant", "content": "Both fuse lists."}])
GOOD = json.dumps({"queries": ["is rrf cheaper than combsum", "cost of rank fusion methods"]})
MODES = ["sync", "async"]


def expand(llm: LLMExpander, mode: str, **options: object) -> object:
    call = {"max_variants": 3, "history": HISTORY, **options}
    if mode == "sync":
        return llm.expand(QUERY, **call)  # type: ignore[arg-type]
    return asyncio.run(llm.aexpand(QUERY, **call))  # type: ignore[arg-type]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("kind", KINDS)
def test_the_model_variants_come_through_with_the_conversation(
    llm_server: ScriptedChatServer, kind: str, mode: str
) -> None:
    llm_server.answer(GOOD)
    expansion = expand(expander_for(kind, llm_server.base_url, KEY, timeout=30.0), mode)
    assert [(v.text, v.source) for v in expansion.variants] == [  # type: ignore[attr-defined]
        (QUERY, "original"),
        ("is rrf cheaper than combsum", "llm"),
        ("cost of rank fusion methods", "llm"),
    ]
    (request,) = llm_server.requests
    assert request.headers["Authorization"] == f"Bearer {KEY}"
    system, user = request.body["messages"]
    assert "comes from a conversation" in system["content"]
    assert user["content"] == (
        "Conversation:\nUser: compare rrf and combsum\nAssistant: Both fuse lists.\n\nQuestion: " + QUERY
    )


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("kind", KINDS)
def test_a_failure_falls_back_with_its_reason(llm_server: ScriptedChatServer, kind: str, mode: str) -> None:
    llm_server.answer_raw(500, b'{"error": {"message": "overloaded"}}')
    expansion = expand(expander_for(kind, llm_server.base_url, KEY, timeout=30.0), mode)
    reason = expansion.fallback_reason or ""  # type: ignore[attr-defined]
    assert "500" in reason or "InternalServerError" in reason or "overloaded" in reason, reason
    # The fallback reads the conversation too: its joined reading, then the question's content words.
    sources = [v.source for v in expansion.variants]  # type: ignore[attr-defined]
    assert sources == ["original", "history", "heuristic"]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("kind", KINDS)
def test_one_deadline_for_every_client(llm_server: ScriptedChatServer, kind: str, mode: str) -> None:
    llm = expander_for(kind, llm_server.base_url, KEY, timeout=30.0)
    llm_server.answer(GOOD)
    expand(llm, mode)  # the client's first call loads its modules: not part of what is timed
    llm_server.answer(GOOD, stall=10.0)
    llm.timeout = 0.5
    retriever = MultiQueryRetriever(
        [AsyncKeywordRetriever() if mode == "async" else KeywordRetriever()], expander=llm
    )
    begin = time.monotonic()
    if mode == "sync":
        result = retriever.search(QUERY, max_variants=3)
    else:
        result = asyncio.run(retriever.asearch(QUERY, max_variants=3))
    elapsed = time.monotonic() - begin
    assert elapsed < 5.0, f"{kind} took {elapsed:.1f} s with a 0.5 s deadline"
    assert result.diagnostics.expansion.fallback_reason == "timeout: no answer within 0.5 s"


def test_an_async_openai_client_serves_sync_searches_on_the_shared_loop(
    llm_server: ScriptedChatServer,
) -> None:
    llm = expander_for("async-openai", llm_server.base_url, KEY, timeout=30.0)
    assert not llm.sync_capable  # a sync search runs it on the background loop
    before = set(threading.enumerate())
    for _ in range(2):  # the client's connections stay on one loop across calls
        llm_server.answer(GOOD)
        result = MultiQueryRetriever([KeywordRetriever()], expander=llm).search(QUERY, max_variants=3)
        assert result.diagnostics.expansion.fallback_reason is None
    started = [t for t in set(threading.enumerate()) - before if t.name == "fanfuse-llm"]
    assert not started  # no thread of ours: the client's own coroutine ran


@pytest.mark.parametrize("kind", ["langchain", "llamaindex"])
def test_a_framework_model_keeps_its_own_settings(llm_server: ScriptedChatServer, kind: str) -> None:
    client = client_for(kind, llm_server.base_url, KEY)
    for given in ({"temperature": 0.5}, {"max_tokens": 10}, {"extra_body": {"seed": 1}}, {"model": "m"}):
        with pytest.raises(InvalidSetting, match="is used with its own settings; set them on it") as info:
            LLMExpander(client=client, **given)  # type: ignore[arg-type]
        assert next(iter(given)) in str(info.value)


def test_a_client_is_one_of_the_kinds_and_not_with_base_url(llm_server: ScriptedChatServer) -> None:
    with pytest.raises(
        TypeError, match=r"client must be an openai\.OpenAI client, an openai\.AsyncOpenAI client"
    ):
        LLMExpander(client=object())
    client = client_for("openai", llm_server.base_url, KEY)
    with pytest.raises(InvalidSetting, match="base_url and api_key belong to the client"):
        LLMExpander(llm_server.base_url, client=client, model="m")
    with pytest.raises(InvalidSetting, match="an openai client needs a model"):
        LLMExpander(client=client, environ={})
    assert (
        LLMExpander(client=client, environ={"FANFUSE_LLM_MODEL": "env-model"}).cache_key()[1][2]
        == "env-model"
    )


@pytest.mark.parametrize("kind", ["langchain", "llamaindex"])
def test_two_framework_models_do_not_share_cached_variants(llm_server: ScriptedChatServer, kind: str) -> None:
    llm_server.answer(GOOD)
    llm_server.answer(json.dumps({"queries": ["another answer", "from another model"]}))
    cache = VariantCache()
    for _ in range(2):
        retriever = MultiQueryRetriever(
            [KeywordRetriever()],
            expander=expander_for(kind, llm_server.base_url, KEY, timeout=30.0),
            cache=cache,
        )
        result = retriever.search(QUERY, max_variants=3)
        assert not result.diagnostics.expansion.cached
    assert len(llm_server.requests) == 2


def test_the_user_clients_secrets_are_found() -> None:
    """Where each kind keeps its key: the openai client's api_key, ChatOpenAI's SecretStr, OpenAILike's
    api_key field; and a header named like a key."""
    for kind in KINDS[1:]:
        client = client_for(kind, "http://127.0.0.1:1/v1", KEY)
        llm = LLMExpander(client=client, model="m") if "openai" in kind else LLMExpander(client=client)
        assert KEY in llm._client.secrets(), kind
    openai = pytest.importorskip("openai")
    headed = openai.OpenAI(
        base_url="http://127.0.0.1:1/v1", api_key="k", default_headers={"X-Api-Key": "hdr-secret"}
    )
    assert "hdr-secret" in LLMExpander(client=headed, model="m")._client.secrets()
