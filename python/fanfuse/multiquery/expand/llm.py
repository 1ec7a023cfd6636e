"""``LLMExpander``: query variants from a chat model, the one place that decides how a call to it goes.

The model is reached by ``base_url`` (any OpenAI-compatible chat-completions endpoint: OpenAI, vLLM,
Ollama, llama.cpp's server) or by the user's own client (``openai.OpenAI`` / ``AsyncOpenAI``, a
LangChain chat model, a LlamaIndex LLM), each an adapter in ``llm_clients.py``. Whichever it is, here:

- **one deadline** (``timeout``) bounds the call from its start to the last byte (``llm_deadline.py``)
  and the reading of what came back: the answer's size checked, its secrets removed and its variants
  parsed in the call's own thread, never on the caller's thread or event loop after the deadline;
- **what a client returns is bounded**: an answer over ``MAX_ANSWER_BYTES`` (1 MiB, as ``base_url``'s
  reader refuses) is refused before it is read, and no more than that of an error's text is read;
- **every failure** (connection, HTTP status, redirect, deadline, an exception of the client, a Rust
  panic in it, an answer too large, too deep, unreadable or empty) falls back, and the ``Expansion``
  says why: query expansion must never be the reason a search fails. Only a signal, an exit or a
  cancellation goes on up (``fanfuse._panics.is_failure``). What stands in is the original query
  alone, or (``"heuristic"``) an expander without a model given the same question, budget,
  conversation and filter, run as the call was (``expand`` or ``aexpand``): ``fallback_expander``, by default
  the default search's expander over no index (the history expander's joined reading of the
  conversation, then the question's content words), or the default search's own over the index a
  retriever searches (``open_index`` sets it: ``with_index_fallback``; topic words and feedback too);
- **every secret** the client holds (the API key, a LangChain model's ``SecretStr``...) is removed,
  in any spelling and any fragment (``llm_redact.py``), from everything that came back or was raised,
  before it is read, parsed, clipped, logged or shown;
- **bytes that are not UTF-8** (and lone surrogates escaped in JSON) make no variant: such a variant is
  dropped with a note, and an answer left with none falls back, saying so.

What each strategy asks for, with or without the conversation, is in ``llm_prompts.py``.
"""

from __future__ import annotations

import copy
import json
import logging
import os
import time
from collections.abc import Hashable, Mapping
from dataclasses import replace
from typing import Any

from fanfuse._panics import is_failure
from fanfuse.errors import InvalidSetting
from fanfuse.limits import check_choice, check_float, optional_float, optional_int
from fanfuse.multiquery._portal import run_sync
from fanfuse.multiquery.conversation import History
from fanfuse.multiquery.expand.expanders import (
    Expander,
    Expansion,
    Variant,
    assemble_variants,
)
from fanfuse.multiquery.expand.history import conversation_default
from fanfuse.multiquery.expand.llm_clients import ChatClient, HTTPChat, client_adapter, http_chat
from fanfuse.multiquery.expand.llm_deadline import await_by, awaited, call_by, call_by_async, outcome
from fanfuse.multiquery.expand.llm_fallback import (
    FALLBACKS,
    Asked,
    Failed,
    Fallback,
    afall_back,
    failure_reason,
    fall_back,
    timed_out,
)
from fanfuse.multiquery.expand.llm_http import MAX_ANSWER_BYTES, TooLarge
from fanfuse.multiquery.expand.llm_parse import UnusableAnswer, parse_passage, parse_variants
from fanfuse.multiquery.expand.llm_prompts import (
    PROMPT_ROLES,
    STRATEGIES,
    StrategyName,
    check_strategy,
    messages,
)
from fanfuse.multiquery.expand.llm_redact import MIN_FRAGMENT, Redactor, shown
from fanfuse.text import check_unicode

__all__ = ["FALLBACKS", "STRATEGIES", "Fallback", "LLMExpander", "StrategyName", "check_strategy"]

logger = logging.getLogger("fanfuse.multiquery")

#: Longest fallback reason kept (the server's text in it is clipped, not the whole answer).
_REASON_LIMIT = 300


class LLMExpander(Expander):
    """Asks a chat model for ``max_variants - 1`` variants of the query, as ``{"queries": [...]}``
    (``hyde``: one passage), given the conversation before it when the search has one.

    Args:
        base_url: the API root, e.g. ``http://localhost:8000/v1`` (``/chat/completions`` is appended).
            Default: ``FANFUSE_LLM_BASE_URL``, else OpenAI's.
        model: the model name. Default: ``FANFUSE_LLM_MODEL``; one of the two is required (with a
            LangChain or LlamaIndex client: the client's own, so not given).
        api_key: sent as ``Authorization: Bearer``. Default: ``FANFUSE_LLM_API_KEY``, else
            ``OPENAI_API_KEY``, else none (local servers; an empty value counts as none). Surrounding
            whitespace is stripped; a key with whitespace or a control character inside is refused.
            Never logged, never in ``repr``, removed wherever the server echoes it.
        strategy: the default strategy (``llm_prompts.STRATEGIES``: paraphrase, entity, stepback,
            decompose, condense, hyde); each call may pick another.
        client: the user's own client instead of ``base_url``/``api_key``: an ``openai.OpenAI`` or
            ``openai.AsyncOpenAI`` (with ``model``), a LangChain chat model or a LlamaIndex LLM (their
            own model and settings).
        instructions: domain instructions added to the prompt (e.g. "Queries are about Kubernetes").
        temperature: sampling temperature (default 0.3). max_tokens: the longest answer, in tokens
            (default: the server's). Neither with a LangChain or LlamaIndex client.
        timeout: the whole call's deadline in seconds.
        fallback: what stands in on failure: ``"heuristic"``, the variants of ``fallback_expander``
            (an expander without a model, given the same question, budget and conversation), or the
            ``"original"`` query only.
        extra_body: extra fields merged into the request (e.g. ``{"response_format": {...}}``).
    """

    name = "llm"
    blocking = False
    strategies = tuple(STRATEGIES)
    history_roles = PROMPT_ROLES

    def __init__(
        self,
        base_url: str | None = None,
        model: str | None = None,
        api_key: str | None = None,
        strategy: StrategyName = "paraphrase",
        *,
        client: object | None = None,
        instructions: str | None = None,
        temperature: float | None = None,
        max_tokens: int | None = None,
        timeout: float = 8.0,
        fallback: Fallback = "heuristic",
        extra_body: Mapping[str, Any] | None = None,
        environ: Mapping[str, str] | None = None,
    ):
        env = os.environ if environ is None else environ
        self.strategy = check_strategy(strategy)
        if instructions is not None and not isinstance(instructions, str):
            raise TypeError(f"instructions must be a str or None (got {type(instructions).__name__})")
        self.instructions = None if instructions is None else check_unicode("instructions", instructions)
        settings = _settings(temperature, max_tokens, extra_body)
        if client is not None:
            if base_url is not None or api_key is not None:
                raise InvalidSetting(
                    "base_url and api_key belong to the client: pass client=... or base_url/api_key, not both"
                )
            named = {
                "model": model,
                "temperature": temperature,
                "max_tokens": max_tokens,
                "extra_body": extra_body,
            }
            given = [name for name, value in named.items() if value is not None]
            self._client: ChatClient = client_adapter(
                client, model, env.get("FANFUSE_LLM_MODEL"), settings, given
            )
        else:
            self._client = http_chat(base_url, model, api_key, settings, env)
        self.settings = settings
        self.fallback = check_choice("fallback", fallback, FALLBACKS)
        self.fallback_expander = conversation_default()
        self._fallback_given = False  # the caller's own, which a retriever over an index keeps
        self.timeout = check_float("timeout", timeout)
        self._redaction: tuple[tuple[str, ...], Redactor] = ((), Redactor(()))

    def __repr__(self) -> str:  # no secret, on purpose
        key = ""
        if isinstance(self._client, HTTPChat):
            key = f", api_key={'set' if self._client.api_key else 'none'}"
        return f"LLMExpander({self._client.describe()}, strategy={self.strategy!r}{key})"

    @property
    def fallback_expander(self) -> Expander:
        """What the ``"heuristic"`` fallback runs. By default the default search's expander
        (``fanfuse.index_retriever.default_expander``) as far as it goes without an index: the history
        expander's reading of the conversation (no index to judge words by: the joined turns) and the
        question's content words. Settable; a retriever over an index (``open_index``) gives a copy of
        this expander the default search's own over it (``with_index_fallback``: topic words and
        feedback too), which an expander built before the index cannot know, unless one was set."""
        return self._fallback_expander

    @fallback_expander.setter
    def fallback_expander(self, expander: Expander) -> None:
        if not isinstance(expander, Expander):
            raise TypeError(f"fallback_expander must be an Expander (got {type(expander).__name__})")
        self._fallback_expander = expander
        self._fallback_given = True
        # A sync call waits for the client and the fallback; either async-only runs on the loop.
        self.sync_capable = not self._client.native_async and expander.sync_capable

    @property
    def reads_filter(self) -> bool:  # type: ignore[override]
        """Whether a search's filter shapes the variants: only through the fallback that stands in
        (feedback over the index reads the documents the filter leaves)."""
        stand_in = self._stand_in()
        return stand_in is not None and stand_in.reads_filter

    @property
    def url(self) -> str | None:
        return self._client.endpoint.url if isinstance(self._client, HTTPChat) else None

    def cache_key(self) -> Hashable:
        """Everything that shapes the answer; the key (and the timeout, the fallback) does not."""
        settings = json.dumps(self.settings, sort_keys=True, default=str)
        return ("llm", self._client.cache_key(), self.strategy, self.instructions, settings)

    def expand(
        self,
        query: str,
        *,
        max_variants: int,
        strategy: str | None = None,
        history: History = (),
        filter: Mapping[str, Any] | None = None,
    ) -> Expansion:
        asked = self._asked(query, max_variants, strategy, history, filter)
        if isinstance(asked, Expansion):
            return asked
        if not self.sync_capable:  # an async client or fallback runs on the loop sync searches share
            return run_sync(self._aexpand(asked))
        deadline = time.monotonic() + self.timeout
        call = self._client.call
        try:
            got = call_by(
                lambda: self._settle(asked, outcome(lambda: call(asked.messages, deadline))), deadline
            )
        except TimeoutError:
            got = self._failed(timed_out(self.timeout))
        if isinstance(got, Failed):
            got = fall_back(asked, got, self._stand_in())
        return self._handed_over(got)

    async def aexpand(
        self,
        query: str,
        *,
        max_variants: int,
        strategy: str | None = None,
        history: History = (),
        filter: Mapping[str, Any] | None = None,
    ) -> Expansion:
        asked = self._asked(query, max_variants, strategy, history, filter)
        if isinstance(asked, Expansion):
            return asked
        return await self._aexpand(asked)

    async def _aexpand(self, asked: Asked) -> Expansion:
        deadline = time.monotonic() + self.timeout
        client = self._client
        try:
            if client.native_async:  # the client's coroutine on this loop; what it returns, in a thread
                got = await awaited(await_by(client.acall(asked.messages, deadline), deadline))
                expansion = await call_by_async(lambda: self._settle(asked, got), deadline)
            else:
                expansion = await call_by_async(
                    lambda: self._settle(asked, outcome(lambda: client.call(asked.messages, deadline))),
                    deadline,
                )
        except TimeoutError:
            expansion = self._failed(timed_out(self.timeout))
        if isinstance(expansion, Failed):
            expansion = await afall_back(asked, expansion, self._stand_in())
        return self._handed_over(expansion)

    def _asked(
        self,
        query: str,
        max_variants: int,
        strategy: str | None,
        history: History,
        filter: Mapping[str, Any] | None,
    ) -> Asked | Expansion:
        """The request to make, or the expansion when none is needed."""
        chosen = self.strategy if strategy is None else check_strategy(strategy)
        if max_variants <= 1:
            return Expansion((Variant(query, "original"),))
        if STRATEGIES[chosen].needs_history and not history:
            note = f"{chosen} rewrites a question from its conversation; without history it is searched as is"
            return Expansion((Variant(query, "original"),), note=note)
        wanted = 1 if STRATEGIES[chosen].passage else max_variants - 1
        asked = messages(chosen, query, history, wanted, self.instructions)
        return Asked(query, max_variants, chosen, history, wanted, asked, filter)

    def _settle(self, asked: Asked, got: str | BaseException) -> Expansion | Failed:
        """The expansion from what the client returned or raised, or why there is none. Runs in the
        call's own thread, inside the deadline: reading an answer (redacting, parsing) costs time, an
        event loop's above all. The fallback itself is the caller's to run: it is an expander like
        any other, run as the caller runs expanders (sync, or on its loop), and a call the deadline
        left behind must not run it."""
        try:
            if isinstance(got, BaseException):
                return self._failed(failure_reason(got, self.timeout))
            # Counted in UTF-8 bytes as base_url's reader counts them (a lone surrogate as one).
            if len(got) > MAX_ANSWER_BYTES or len(got.encode("utf-8", "replace")) > MAX_ANSWER_BYTES:
                return self._failed(str(TooLarge()))
            return self._read(asked, got)
        except BaseException as exc:  # a bug in reading it (or no memory) is this model's failure too
            if not is_failure(exc):
                raise
            return self._failed(failure_reason(exc, self.timeout))

    def _read(self, asked: Asked, reply: str) -> Expansion | Failed:
        redact = self._redactor()
        try:
            answer = redact(self._client.content(redact(reply)))
            passage = STRATEGIES[asked.strategy].passage
            texts = [parse_passage(answer)] if passage else parse_variants(answer)
        except UnusableAnswer as exc:
            return self._failed(str(exc))
        texts = [redact(text) for text in texts]
        readable = [text for text in texts if _is_unicode(text)]
        notes = []
        if len(readable) < len(texts):
            unreadable = len(texts) - len(readable)
            if not readable:
                return self._failed("the model's answer is not valid UTF-8 text")
            notes.append(f"dropped {unreadable} variant(s) that were not valid UTF-8 text")
        variants = assemble_variants(asked.query, readable, asked.max_variants, "llm")
        if len(variants) == 1:
            return self._failed("the model only repeated the original query")
        if passage:  # a passage, not a query: for the retrievers that read plain text only
            variants = (variants[0], *(replace(v, plain=v.text, plain_only=True) for v in variants[1:]))
        got = len(variants) - 1
        if got < asked.wanted:
            notes.append(f"asked the model for {asked.wanted} variants, got {got} usable")
        elif len(readable) > asked.wanted:
            notes.append(f"the model gave {len(readable)} variants, kept the first {asked.wanted} new ones")
        return Expansion(variants, note="; ".join(notes) or None)

    def _handed_over(self, expansion: Expansion) -> Expansion:
        """`expansion` as the caller gets it, its fallback logged here, where the caller waits, not in
        the call's thread: a call the deadline left behind settles later, and must not log again."""
        if expansion.fallback_reason is not None:
            logger.warning(
                "LLM query expansion failed (%s); using the %s fallback",
                expansion.fallback_reason,
                self.fallback,
            )
        return expansion

    def _failed(self, reason: str) -> Failed:
        return Failed(self._shown(reason))

    def _stand_in(self) -> Expander | None:
        return None if self.fallback == "original" else self._fallback_expander

    def _shown(self, reason: str) -> str:
        """``reason`` redacted and clipped; of a longer one, only the first ``MAX_ANSWER_BYTES``
        characters are read."""
        redact = self._redactor()
        if len(reason) <= MAX_ANSWER_BYTES:
            return shown(redact(reason), _REASON_LIMIT)
        # A secret cut at the end leaves a piece too short to recognise: the last characters go too.
        return shown(redact(reason[:MAX_ANSWER_BYTES])[: 1 - MIN_FRAGMENT] + "...", _REASON_LIMIT)

    def _redactor(self) -> Redactor:
        """The redactor of the client's secrets as they are now (a client may fetch its key late)."""
        secrets = tuple(self._client.secrets())
        known, redactor = self._redaction  # one tuple: read and replaced whole, safe across threads
        if secrets != known:
            redactor = Redactor(secrets)
            self._redaction = (secrets, redactor)
        return redactor


def with_index_fallback(expander: LLMExpander, fallback: Expander) -> LLMExpander:
    """`expander`, or a copy of it (the caller's is left as it is) whose ``"heuristic"`` fallback is
    `fallback`, the default search's expander over the index a retriever searches, unless the
    caller set one: how a failed model call gives that search's own variants."""
    if expander._fallback_given:
        return expander
    copied = copy.copy(expander)
    copied.fallback_expander = fallback
    copied._fallback_given = False
    return copied


def _settings(
    temperature: float | None, max_tokens: int | None, extra_body: Mapping[str, Any] | None
) -> dict[str, Any]:
    """The request fields given (checked): temperature, max_tokens, then extra_body's."""
    given: dict[str, Any] = {}
    if temperature is not None:
        given["temperature"] = optional_float("temperature", temperature)
    if max_tokens is not None:
        given["max_tokens"] = optional_int("max_tokens", max_tokens)
    if extra_body is not None and not isinstance(extra_body, Mapping):
        raise TypeError(f"extra_body must be a Mapping (got {type(extra_body).__name__})")
    return {**given, **(extra_body or {})}


def _is_unicode(text: str) -> bool:
    """Whether ``text`` encodes as UTF-8: no lone surrogate (an undecodable byte, or a JSON escape)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True
