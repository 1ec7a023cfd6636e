"""LLMExpander against hostile or broken chat servers (a real HTTP server on 127.0.0.1, scripted).

A server that trickles its answer, redirects elsewhere, echoes the API key, nests JSON without end or
sends megabytes must cost at most the expander's deadline and leave a fallback with a reason; the key
never appears in a message, a log line, a repr or the diagnostics.
"""

from __future__ import annotations

import asyncio
import json
import logging
import threading
import time
from pathlib import Path

import pytest
from fanfuse.errors import InvalidSetting
from fanfuse.multiquery import LLMExpander, MultiQueryRetriever, SearchResult
from llm_server import (
    ECHO,
    Reply,
    ScriptedChatServer,
    completion,
    llm_server,
    other_llm_server,
    tls_llm_server,
)
from multiquery_toys import AsyncKeywordRetriever, KeywordRetriever

__all__ = ["llm_server", "other_llm_server", "tls_llm_server"]  # the fixtures, imported for pytest

SECRET = "sk-test-fanfuse-0123456789"
QUERY = "what is reciprocal rank fusion"
GOOD = json.dumps({"queries": ["rank fusion explained", "combining ranked lists"]})
# A reply that would take 30 s: 300 bytes, one every 0.1 s.
SLOW_BYTES = 0.1


def expander(server: ScriptedChatServer, **options: object) -> LLMExpander:
    settings: dict[str, object] = {"model": "scripted", "api_key": SECRET, "timeout": 2.0, **options}
    return LLMExpander(server.base_url, **settings)  # type: ignore[arg-type]


def searched(llm: LLMExpander, mode: str, *, async_retriever: bool = False) -> SearchResult:
    retriever = MultiQueryRetriever(
        [AsyncKeywordRetriever() if async_retriever else KeywordRetriever()], expander=llm
    )
    if mode == "sync":
        return retriever.search(QUERY, max_variants=3)
    return asyncio.run(retriever.asearch(QUERY, max_variants=3))


def padded(content: str, total: int) -> bytes:
    """A chat completion of about ``total`` bytes (whitespace after the JSON)."""
    body = completion(content)
    return body + b" " * max(0, total - len(body))


@pytest.mark.parametrize("body_only", [False, True], ids=["whole-reply", "body"])
@pytest.mark.parametrize("mode", ["sync", "async", "sync-on-loop"])
def test_a_trickled_answer_stops_at_the_deadline(
    llm_server: ScriptedChatServer, mode: str, body_only: bool, caplog: pytest.LogCaptureFixture
) -> None:
    reply = padded(GOOD, 300)
    llm_server.reply(Reply(body=reply, drip=SLOW_BYTES, body_only_drip=body_only))
    llm = expander(llm_server, timeout=0.5)
    before = set(threading.enumerate())  # another test's client may still be waiting on its own peer
    begin = time.monotonic()
    # asyncio.run included: it waits for the loop's worker threads at shutdown.
    result = searched(llm, "sync" if mode == "sync" else "async", async_retriever=mode == "sync-on-loop")
    elapsed = time.monotonic() - begin
    assert elapsed < 3.0, f"the expansion took {elapsed:.1f} s with a 0.5 s deadline"
    assert result.diagnostics.expansion.fallback_reason == "timeout: no answer within 0.5 s"
    assert result.ids[0] == "rrf"
    # The request's own thread gave up at the same deadline: nothing is left reading the trickle.
    for thread in [t for t in set(threading.enumerate()) - before if t.name == "fanfuse-llm"]:
        thread.join(timeout=2.0)
        assert not thread.is_alive()
    # The fallback is logged once: by the caller that gave up, not again by the thread left behind.
    logged = [r for r in caplog.records if "LLM query expansion failed" in r.getMessage()]
    assert len(logged) == 1, [r.getMessage() for r in logged]


@pytest.mark.parametrize("status", [301, 302, 303, 307, 308])
def test_a_redirect_is_not_followed(
    llm_server: ScriptedChatServer, other_llm_server: ScriptedChatServer, status: int
) -> None:
    target = other_llm_server.base_url + "/chat/completions"
    llm_server.reply(Reply(status, b"", headers={"Location": target}))
    other_llm_server.answer(GOOD)
    result = searched(expander(llm_server), "sync")
    assert other_llm_server.requests == []  # neither the key nor the question went there
    reason = result.diagnostics.expansion.fallback_reason or ""
    assert reason.startswith(f"HTTP {status}") and "redirect" in reason and "not followed" in reason
    assert target in reason


def test_a_key_read_from_a_file_is_stripped(llm_server: ScriptedChatServer) -> None:
    llm_server.answer(GOOD)
    result = searched(expander(llm_server, api_key=f"  {SECRET}\n"), "sync")
    assert result.diagnostics.expansion.fallback_reason is None
    assert llm_server.requests[0].headers["Authorization"] == f"Bearer {SECRET}"


@pytest.mark.parametrize(
    ("key", "what"),
    [
        (f"{SECRET[:6]} {SECRET[6:]}", "a space at position 7"),
        (f"{SECRET}\nX-Injected: 1", "a line break at position 27"),
        (f"{SECRET[:4]}\x00{SECRET[4:]}", "a control character at position 5"),
        (f"{SECRET}é", "a non-ASCII character at position 27"),
        ("  \n", "blank"),
    ],
)
def test_a_malformed_key_is_refused_without_printing_it(key: str, what: str) -> None:
    with pytest.raises(InvalidSetting) as info:
        LLMExpander("http://127.0.0.1:1/v1", model="m", api_key=key)
    message = str(info.value)
    assert message.startswith("api_key ") and what in message
    assert SECRET not in message and SECRET[6:] not in message
    with pytest.raises(InvalidSetting) as info:
        LLMExpander("http://127.0.0.1:1/v1", model="m", environ={"FANFUSE_LLM_API_KEY": key})
    assert str(info.value).startswith("FANFUSE_LLM_API_KEY ") and SECRET[6:] not in str(info.value)


def test_a_key_type_error_names_the_argument() -> None:
    with pytest.raises(TypeError, match="api_key must be a str"):
        LLMExpander("http://127.0.0.1:1/v1", model="m", api_key=b"sk-bytes")  # type: ignore[arg-type]


ECHOES = {
    "reason phrase": Reply(401, b'{"error": "bad key"}', reason=f"Unauthorized {ECHO}"),
    "error body": Reply(200, f'{{"error": "invalid key {ECHO}"}}'.encode()),
    "answer text": Reply(200, completion(f"Your key: {ECHO}\nrank fusion explained")),
    "answer as JSON": Reply(200, completion(json.dumps({"queries": [ECHO, "rank fusion explained"]}))),
}


@pytest.mark.parametrize("echo", list(ECHOES))
def test_a_server_echoing_the_key_does_not_get_it_logged(
    llm_server: ScriptedChatServer, echo: str, caplog: pytest.LogCaptureFixture
) -> None:
    llm_server.reply(ECHOES[echo])
    llm = expander(llm_server)
    with caplog.at_level(logging.DEBUG):
        result = searched(llm, "sync")
    shown = [
        caplog.text,
        result.diagnostics.summary(),
        repr(result.diagnostics),
        repr(llm),
        json.dumps([v.text for v in result.diagnostics.variants]),
    ]
    assert all(SECRET not in text for text in shown)
    if echo in ("reason phrase", "error body"):
        assert "***" in (result.diagnostics.expansion.fallback_reason or "")


@pytest.mark.parametrize("where", ["envelope", "content"])
@pytest.mark.parametrize("mode", ["sync", "async"])
def test_deeply_nested_json_is_a_fallback(llm_server: ScriptedChatServer, where: str, mode: str) -> None:
    deep = "[" * 200_000 + "]" * 200_000
    if where == "envelope":
        llm_server.answer_raw(200, deep.encode())
    else:
        llm_server.answer('{"queries": ' + deep + "}")
    result = searched(expander(llm_server), mode)
    assert "nested too deeply" in (result.diagnostics.expansion.fallback_reason or "")
    assert result.ids[0] == "rrf"


@pytest.mark.parametrize("with_length", [True, False], ids=["content-length", "until-close"])
def test_an_answer_over_one_mib_is_refused(llm_server: ScriptedChatServer, with_length: bool) -> None:
    llm_server.reply(Reply(body=padded(GOOD, 3 << 20), content_length=with_length))
    result = searched(expander(llm_server), "sync")
    assert "larger than 1 MiB" in (result.diagnostics.expansion.fallback_reason or "")


def test_an_answer_just_under_one_mib_is_read(llm_server: ScriptedChatServer) -> None:
    llm_server.reply(Reply(body=padded(GOOD, (1 << 20) - 10), content_length=False))
    result = searched(expander(llm_server), "sync")
    assert result.diagnostics.expansion.fallback_reason is None
    assert [v.source for v in result.diagnostics.variants] == ["original", "llm", "llm"]


def test_plain_http_goes_through_the_proxy_named_by_the_environment(
    llm_server: ScriptedChatServer, other_llm_server: ScriptedChatServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    proxy = llm_server.base_url.removesuffix("/v1")
    monkeypatch.setenv("HTTP_PROXY", proxy.replace("http://", "http://user:pass%21@"))
    monkeypatch.delenv("NO_PROXY", raising=False)
    monkeypatch.delenv("no_proxy", raising=False)
    llm_server.answer(GOOD)
    via_proxy = LLMExpander("http://llm.example.invalid/v1", model="scripted", api_key=SECRET)
    assert via_proxy.expand(QUERY, max_variants=3).fallback_reason is None
    (request,) = llm_server.requests
    assert request.path == "http://llm.example.invalid/v1/chat/completions"
    assert request.headers["Proxy-Authorization"] == "Basic dXNlcjpwYXNzIQ=="  # user:pass!
    monkeypatch.setenv("NO_PROXY", "127.0.0.1")
    other_llm_server.answer(GOOD)
    assert expander(other_llm_server).expand(QUERY, max_variants=3).fallback_reason is None
    assert len(llm_server.requests) == 1 and other_llm_server.requests[0].path == "/v1/chat/completions"


def test_a_proxy_the_client_cannot_speak_is_refused_at_construction(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HTTPS_PROXY", "socks5://user:secret@127.0.0.1:1080")
    monkeypatch.delenv("NO_PROXY", raising=False)
    monkeypatch.delenv("no_proxy", raising=False)
    with pytest.raises(InvalidSetting, match="HTTPS_PROXY must be an http:// proxy URL") as info:
        LLMExpander("https://api.example.invalid/v1", model="m")
    assert "secret" not in str(info.value)


def test_https_verifies_the_certificate_before_sending_the_key(
    tls_llm_server: tuple[ScriptedChatServer, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    server, certificate = tls_llm_server
    server.answer(GOOD)
    refused = expander(server).expand(QUERY, max_variants=3)
    assert "CERTIFICATE_VERIFY_FAILED" in (refused.fallback_reason or "")
    assert server.requests == []  # nothing, the key least of all, went over the unverified connection
    monkeypatch.setenv("SSL_CERT_FILE", str(certificate))  # now the certificate is trusted
    trusted = expander(server, timeout=5.0).expand(QUERY, max_variants=3)
    assert trusted.fallback_reason is None and len(trusted.variants) == 3
    assert server.requests[0].headers["Authorization"] == f"Bearer {SECRET}"
