"""Whatever a user's own LLM client does stays inside ``LLMExpander``'s guard: for every kind of client
the expander takes (``CLIENT_KINDS``, the one list it dispatches on) and every way a model can misbehave
(an answer far over the size cap, no answer before the deadline, an exception, a Rust panic), through
every way to call it (``expand``, ``aexpand``, ``search``, ``asearch``), the call returns the recorded
fallback within the deadline, nothing escapes, and an async caller's event loop keeps running; the
fallback is logged once, though a call the deadline left behind fails later in its own thread.

The clients are the real classes: ``openai.OpenAI`` / ``AsyncOpenAI`` over an ``httpx.MockTransport``
(the model's side scripted, the client's own request and parsing code run), and subclasses of
LangChain's ``SimpleChatModel`` and LlamaIndex's ``CustomLLM`` (the frameworks' own bases for a model,
run through their ``invoke`` / ``chat``). The panic is a test double: an exception of pyo3's
``pyo3_runtime.PanicException`` name and kind (a ``BaseException``), as a compiled client would raise;
a real one needs a broken compiled library."""

from __future__ import annotations

import asyncio
import contextlib
import json
import threading
import time
from collections.abc import Awaitable, Callable, Iterator
from typing import Any

import pytest
from fanfuse.multiquery import LLMExpander, MultiQueryRetriever
from fanfuse.multiquery.conversation import check_history
from fanfuse.multiquery.expand.expanders import Expansion
from fanfuse.multiquery.expand.llm_clients import CLIENT_KINDS, client_kind
from fanfuse.multiquery.expand.llm_http import MAX_ANSWER_BYTES
from multiquery_toys import AsyncKeywordRetriever, KeywordRetriever

KEY = "sk-guard-test-0123456789abcdef"
QUERY = "which fusion method is cheaper?"
HISTORY = check_history(["compare rrf and combsum"])
#: The deadline of a call to a model that never answers in time; a run that keeps to it returns well
#: before three times it.
TIMEOUT = 1.0
#: The deadline of a call to a model that answers, raises or panics at once: far beyond what the call
#: takes, so that a busy machine cannot turn the fault into a timeout; each such call is still held
#: to returning within three times TIMEOUT.
PROMPT_DEADLINE = 30.0
#: Lines of queries, the key in every one (so reading them means redacting them): 5.8 MB, over five
#: times the cap, and seconds of redacting and parsing for a reader without one.
HUGE = "".join(f"rank fusion question {i} {KEY}\n" for i in range(100_000))
#: When a late model fails: after the deadline, well before the test stops waiting for it.
LATE = 1.5 * TIMEOUT
GOOD = json.dumps({"queries": ["cost of rank fusion methods", "is rrf cheaper than combsum"]})
#: A test double: what pyo3 raises for a Rust panic (a BaseException, recognised by its name).
PanicException = type("PanicException", (BaseException,), {"__module__": "pyo3_runtime"})

_released = threading.Event()  # holds the slow clients' threads until the module ends


@pytest.fixture(scope="module", autouse=True)
def release_slow_clients() -> Iterator[None]:
    yield
    _released.set()


class Behaviour:
    """What the model does when asked: answer (at once, or never in time), raise, or panic."""

    def __init__(self, name: str, text: str = GOOD):
        self.name = name
        self.text = text

    def answer(self) -> str:
        if self.name == "answering":
            return self.text
        if self.name == "huge":
            return HUGE
        if self.name == "slow":
            _released.wait(60)
            return json.dumps({"queries": ["too late"]})
        if self.name == "late":  # fails, once the caller's deadline has passed
            time.sleep(LATE)
            raise RuntimeError("the model broke down late")
        if self.name == "raising":
            raise RuntimeError("the model broke down")
        raise PanicException("called `Option::unwrap()` on a `None` value")

    async def aanswer(self) -> str:
        if self.name in ("slow", "late"):
            await asyncio.sleep(60 if self.name == "slow" else LATE)
        return self.answer()


BEHAVIOURS = ("answering", "huge", "slow", "raising", "panicking")
#: The fallback reason each behaviour is recorded with (an openai client wraps a transport's
#: exception in its own APIConnectionError: a failure of the client all the same).
REASONS: dict[str, str | tuple[str, ...] | None] = {
    "answering": None,
    "huge": "the answer is larger than 1 MiB",
    "slow": f"timeout: no answer within {TIMEOUT:g} s",
    "raising": ("RuntimeError: the model broke down", "APIConnectionError"),
    "panicking": "PanicException: called `Option::unwrap()`",
}


def _completion(text: str) -> dict[str, Any]:
    return {
        "id": "chatcmpl-guard",
        "object": "chat.completion",
        "created": 0,
        "model": "scripted",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
    }


def openai_client(behaviour: Behaviour) -> Any:
    openai = pytest.importorskip("openai", reason="the openai package is not installed")
    import httpx

    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, json=_completion(behaviour.answer()))

    transport = httpx.Client(transport=httpx.MockTransport(handler))
    return openai.OpenAI(base_url="http://127.0.0.1:9/v1", api_key=KEY, max_retries=0, http_client=transport)


def async_openai_client(behaviour: Behaviour) -> Any:
    openai = pytest.importorskip("openai", reason="the openai package is not installed")
    import httpx

    async def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, json=_completion(await behaviour.aanswer()))

    transport = httpx.AsyncClient(transport=httpx.MockTransport(handler))
    return openai.AsyncOpenAI(
        base_url="http://127.0.0.1:9/v1", api_key=KEY, max_retries=0, http_client=transport
    )


def langchain_model(behaviour: Behaviour) -> Any:
    chat_models = pytest.importorskip(
        "langchain_core.language_models.chat_models", reason="langchain-core is not installed"
    )
    from pydantic import SecretStr

    class ScriptedChatModel(chat_models.SimpleChatModel):  # type: ignore[misc,name-defined]
        api_key: SecretStr
        behaviour: Any

        @property
        def _llm_type(self) -> str:
            return "scripted"

        def _call(self, messages: Any, stop: Any = None, run_manager: Any = None, **kwargs: Any) -> str:
            return str(self.behaviour.answer())

    return ScriptedChatModel(api_key=SecretStr(KEY), behaviour=behaviour)


def llamaindex_llm(behaviour: Behaviour) -> Any:
    custom = pytest.importorskip("llama_index.core.llms.custom", reason="llama-index-core is not installed")
    from llama_index.core.base.llms.types import CompletionResponse, LLMMetadata
    from llama_index.core.llms.callbacks import llm_completion_callback

    class ScriptedLLM(custom.CustomLLM):  # type: ignore[misc,name-defined]
        api_key: str
        behaviour: Any

        @property
        def metadata(self) -> LLMMetadata:
            return LLMMetadata(model_name="scripted")

        @llm_completion_callback()  # type: ignore[misc]
        def complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponse:
            return CompletionResponse(text=self.behaviour.answer())

        @llm_completion_callback()  # type: ignore[misc]
        def stream_complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> Any:
            raise NotImplementedError

    return ScriptedLLM(api_key=KEY, behaviour=behaviour)


#: A real client of each kind the expander takes, behaving as told.
CLIENTS: dict[str, Callable[[Behaviour], Any]] = {
    "openai": openai_client,
    "async-openai": async_openai_client,
    "langchain": langchain_model,
    "llamaindex": llamaindex_llm,
}


def test_every_kind_of_client_is_covered() -> None:
    assert sorted(CLIENTS) == sorted(kind.name for kind in CLIENT_KINDS)


def expander(kind: str, behaviour: str, timeout: float = TIMEOUT, text: str = GOOD) -> LLMExpander:
    client = CLIENTS[kind](Behaviour(behaviour, text))
    found = client_kind(client)
    assert found is not None and found.name == kind
    model = {"model": "scripted"} if "openai" in kind else {}
    return LLMExpander(client=client, timeout=timeout, **model)  # type: ignore[arg-type]


@pytest.fixture(scope="module", autouse=True)
def warm_clients() -> None:
    """A first call of each kind of client loads its modules: not part of any deadline below."""
    for kind in CLIENTS:
        with contextlib.suppress(pytest.skip.Exception):
            expander(kind, "answering", timeout=60.0).expand(QUERY, max_variants=3, history=HISTORY)


async def ticking(call: Awaitable[Any]) -> tuple[Any, list[float]]:
    """``call``'s result, and the gaps between the ticks of a task ticking every 10 ms meanwhile."""
    gaps: list[float] = []

    async def tick() -> None:
        last = time.monotonic()
        while True:
            await asyncio.sleep(0.01)
            now = time.monotonic()
            gaps.append(now - last)
            last = now

    ticker = asyncio.create_task(tick())
    await asyncio.sleep(0)
    try:
        result = await call
    finally:
        ticker.cancel()
    return result, gaps


def run(llm: LLMExpander, mode: str) -> tuple[Expansion | Any, list[float]]:
    """The expansion report of one call in ``mode``, and the ticker's gaps (async modes)."""
    if mode == "expand":
        return llm.expand(QUERY, max_variants=3, history=HISTORY), []
    if mode == "search":
        result = MultiQueryRetriever([KeywordRetriever()], expander=llm).search(
            QUERY, max_variants=3, history=HISTORY
        )
        return result.diagnostics.expansion, []
    if mode == "aexpand":
        return asyncio.run(ticking(llm.aexpand(QUERY, max_variants=3, history=HISTORY)))
    retriever = MultiQueryRetriever([AsyncKeywordRetriever()], expander=llm)
    result, gaps = asyncio.run(ticking(retriever.asearch(QUERY, max_variants=3, history=HISTORY)))
    return result.diagnostics.expansion, gaps


@pytest.mark.parametrize("mode", ["expand", "aexpand", "search", "asearch"])
@pytest.mark.parametrize("behaviour", BEHAVIOURS)
@pytest.mark.parametrize("kind", sorted(CLIENTS))
def test_a_misbehaving_client_is_a_recorded_fallback_within_the_deadline(
    kind: str, behaviour: str, mode: str
) -> None:
    llm = expander(kind, behaviour, timeout=TIMEOUT if behaviour == "slow" else PROMPT_DEADLINE)
    begin = time.monotonic()
    report, gaps = run(llm, mode)
    elapsed = time.monotonic() - begin
    assert elapsed < 3 * TIMEOUT, f"returned after {elapsed:.1f} s with a {TIMEOUT:g} s deadline"
    # The event loop ran the ticker throughout: never a whole deadline without a tick.
    assert max(gaps, default=0.0) < TIMEOUT, f"the event loop was blocked for {max(gaps):.1f} s"
    expected = REASONS[behaviour]
    if expected is None:  # the control: the client works, its variants come through
        assert report.fallback_reason is None
    else:
        assert (report.fallback_reason or "").startswith(expected), report.fallback_reason
        assert KEY not in report.fallback_reason
    if mode in ("expand", "aexpand"):
        sources = [v.source for v in report.variants]
        assert sources == ["original", "llm", "llm"] if expected is None else sources[0] == "original"


@pytest.mark.parametrize("kind", sorted(CLIENTS))
def test_the_cap_is_the_one_base_url_reads_up_to(kind: str) -> None:
    """An answer of exactly ``MAX_ANSWER_BYTES`` bytes (UTF-8) is read; one byte more is refused."""
    assert len(HUGE.encode()) > MAX_ANSWER_BYTES
    padding = MAX_ANSWER_BYTES - len(GOOD.encode()) - len("é".encode())
    largest = GOOD + " " * padding + "é"  # a 2-byte character: bytes are counted, not characters
    assert len(largest.encode()) == MAX_ANSWER_BYTES
    for text, reason in ((largest, None), (largest + " ", "the answer is larger than 1 MiB")):
        expansion = expander(kind, "answering", timeout=60.0, text=text).expand(QUERY, max_variants=3)
        assert expansion.fallback_reason == reason


class RaisingWith(Behaviour):
    def __init__(self, message: str):
        super().__init__("raising")
        self.message = message

    def answer(self) -> str:
        raise RuntimeError(self.message)


@pytest.mark.parametrize("kind", ["langchain", "llamaindex"])
def test_an_errors_text_is_read_up_to_the_cap_and_no_piece_of_the_key_is_shown(kind: str) -> None:
    # The key over and over past the cap, cut there 5 characters into a copy: too short a piece for
    # the redactor to recognise, so the reason must not end with it.
    head = "RuntimeError: " + "y" * 27
    message = head[len("RuntimeError: ") :] + KEY * (MAX_ANSWER_BYTES // len(KEY) + 2)
    assert (MAX_ANSWER_BYTES - len(head)) % len(KEY) == 5
    # A generous deadline: redacting a MiB that is all key is the redactor's slowest case.
    llm = LLMExpander(client=CLIENTS[kind](RaisingWith(message)), timeout=60.0)
    reason = llm.expand(QUERY, max_variants=3).fallback_reason or ""
    assert reason.startswith(head + "*") and reason.endswith("..."), reason
    assert KEY[:5] not in reason, reason


@pytest.mark.parametrize("mode", ["expand", "aexpand", "search", "asearch"])
@pytest.mark.parametrize("kind", sorted(CLIENTS))
def test_a_fallback_is_logged_once_though_the_call_left_behind_settles_later(
    kind: str, mode: str, caplog: pytest.LogCaptureFixture
) -> None:
    llm = expander(kind, "late")
    before = set(threading.enumerate())
    report, _ = run(llm, mode)
    assert report.fallback_reason == REASONS["slow"]
    for thread in [t for t in set(threading.enumerate()) - before if t.name == "fanfuse-llm"]:
        thread.join(timeout=10 * TIMEOUT)  # the call answered late and was settled, unseen
        assert not thread.is_alive()
    logged = [r.getMessage() for r in caplog.records if "LLM query expansion failed" in r.getMessage()]
    assert logged == [f"LLM query expansion failed ({REASONS['slow']}); using the heuristic fallback"]
