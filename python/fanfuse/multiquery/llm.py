"""``LLMExpander``: query variants from any OpenAI-compatible chat-completions endpoint.

OpenAI, vLLM, Ollama (``http://localhost:11434/v1``) and llama.cpp's server all speak it. One request
per expansion (the model's latency dwarfs connection set-up), bounded by one deadline from connecting
to the last byte of the answer, never following a redirect (``llm_http.py``). Every failure
(connection, HTTP status, redirect, deadline, an answer too large, too deep or unreadable) falls back
to the heuristic expander, or to the original query alone, and the ``Expansion`` says why: query
expansion must never be the reason a search fails.

The API key is checked when the expander is built (printable ASCII, surrounding whitespace such as a
file's trailing newline stripped) and is replaced by ``***`` in everything the server's answer can put
in front of a user: fallback reasons, log lines, variants.
"""

from __future__ import annotations

import asyncio
import http.client
import json
import logging
import math
import os
from collections.abc import Hashable, Mapping
from typing import Any

from fanfuse._core import FusionError
from fanfuse.multiquery.conversation import History
from fanfuse.multiquery.expanders import Expander, Expansion, HeuristicExpander, Variant, assemble_variants
from fanfuse.multiquery.llm_http import Endpoint, HTTPFailure, TooLarge, post, post_async, server_text
from fanfuse.multiquery.llm_parse import UnusableAnswer, completion_text, parse_variants

__all__ = ["STRATEGIES", "LLMExpander", "check_strategy"]

logger = logging.getLogger("fanfuse.multiquery")

#: What each strategy asks the model for; ``{n}`` is the number of variants wanted.
STRATEGIES: dict[str, str] = {
    "paraphrase": (
        "Rewrite the search query in {n} different ways that keep its meaning exactly: "
        "use synonyms, other word order and other phrasing."
    ),
    "entity": (
        "Write {n} search queries that each focus on one named entity, product or key concept of the "
        "query, in the words a document about it would use."
    ),
    "stepback": (
        "Write {n} more general 'step-back' queries about the broader topic or background knowledge "
        "the query depends on."
    ),
    "decompose": (
        "Break the query into {n} simpler sub-questions that together answer it; each must make sense "
        "on its own."
    ),
}
FALLBACKS = ("heuristic", "original")
DEFAULT_BASE_URL = "https://api.openai.com/v1"
#: Longest fallback reason kept (the server's text in it is clipped, not the whole answer).
_REASON_LIMIT = 300


class LLMExpander(Expander):
    """Asks a chat model for ``max_variants - 1`` variants of the query, as ``{"queries": [...]}``.

    Args:
        base_url: the API root, e.g. ``http://localhost:8000/v1`` (``/chat/completions`` is appended).
            Default: ``FANFUSE_LLM_BASE_URL``, else OpenAI's.
        model: the model name. Default: ``FANFUSE_LLM_MODEL``; one of the two is required.
        api_key: sent as ``Authorization: Bearer``. Default: ``FANFUSE_LLM_API_KEY``, else
            ``OPENAI_API_KEY``, else none (local servers; an empty value counts as none). Surrounding
            whitespace is stripped; a key with whitespace or a control character inside is refused.
            Never logged, never in ``repr``, replaced by ``***`` wherever the server echoes it.
        strategy: the default strategy (``paraphrase``, ``entity``, ``stepback``, ``decompose``);
            each call may pick another.
        instructions: domain instructions added to the prompt (e.g. "Queries are about Kubernetes").
        temperature, timeout: sampling temperature and the whole request's deadline in seconds.
        fallback: what stands in on failure: ``"heuristic"`` variants, or the ``"original"`` query only.
        extra_body: extra fields merged into the request (e.g. ``{"response_format": {...}}``).
    """

    name = "llm"

    def __init__(
        self,
        base_url: str | None = None,
        model: str | None = None,
        api_key: str | None = None,
        strategy: str = "paraphrase",
        *,
        instructions: str | None = None,
        temperature: float = 0.3,
        timeout: float = 8.0,
        fallback: str = "heuristic",
        extra_body: Mapping[str, Any] | None = None,
        environ: Mapping[str, str] | None = None,
    ):
        env = os.environ if environ is None else environ
        base_url = base_url or env.get("FANFUSE_LLM_BASE_URL") or DEFAULT_BASE_URL
        if not base_url.startswith(("http://", "https://")):
            raise FusionError(
                f"base_url (or FANFUSE_LLM_BASE_URL) must start with http:// or https:// (got {base_url!r})"
            )
        model = model or env.get("FANFUSE_LLM_MODEL")
        if not model:
            raise FusionError("LLMExpander needs a model: pass model=... or set FANFUSE_LLM_MODEL")
        self._endpoint = Endpoint.parse(
            base_url.rstrip("/") + "/chat/completions", "base_url (or FANFUSE_LLM_BASE_URL)"
        )
        self.url = self._endpoint.url
        self.model = model
        self._api_key = _api_key(api_key, env)
        self.strategy = check_strategy(strategy)
        self.instructions = instructions
        if not (isinstance(temperature, (int, float)) and math.isfinite(temperature) and temperature >= 0):
            raise FusionError(f"temperature must be a finite number >= 0 (got {temperature!r})")
        if not (isinstance(timeout, (int, float)) and math.isfinite(timeout) and timeout > 0):
            raise FusionError(f"timeout must be a number of seconds > 0 (got {timeout!r})")
        if fallback not in FALLBACKS:
            raise FusionError(f"fallback must be 'heuristic' or 'original' (got {fallback!r})")
        self.temperature = float(temperature)
        self.timeout = float(timeout)
        self.fallback = fallback
        self.extra_body = dict(extra_body or {})
        self._heuristic = HeuristicExpander(max_variants=5)

    def __repr__(self) -> str:  # the API key stays out on purpose
        key = "set" if self._api_key else "none"
        return (
            f"LLMExpander(url={self.url!r}, model={self.model!r}, strategy={self.strategy!r}, api_key={key})"
        )

    def cache_key(self) -> Hashable:
        """Everything that shapes the answer; the key (and the timeout, the fallback) does not."""
        extra = json.dumps(self.extra_body, sort_keys=True, default=str)
        return ("llm", self.url, self.model, self.strategy, self.instructions, self.temperature, extra)

    def expand(
        self, query: str, *, max_variants: int, strategy: str | None = None, history: History = ()
    ) -> Expansion:
        if max_variants <= 1:
            return Expansion((Variant(query, "original"),))
        body, headers = self._request(query, max_variants - 1, strategy)
        try:
            answer = completion_text(post(self._endpoint, body, headers, self.timeout))
        except Exception as exc:
            return self._fall_back(query, max_variants, _describe(exc, self.timeout))
        return self._read(query, answer, max_variants)

    async def aexpand(
        self, query: str, *, max_variants: int, strategy: str | None = None, history: History = ()
    ) -> Expansion:
        if max_variants <= 1:
            return Expansion((Variant(query, "original"),))
        body, headers = self._request(query, max_variants - 1, strategy)
        try:
            answer = completion_text(await post_async(self._endpoint, body, headers, self.timeout))
        except Exception as exc:
            return self._fall_back(query, max_variants, _describe(exc, self.timeout))
        return self._read(query, answer, max_variants)

    def _request(self, query: str, n: int, strategy: str | None) -> tuple[bytes, dict[str, str]]:
        chosen = self.strategy if strategy is None else check_strategy(strategy)
        system = (
            "You write search queries for a document retrieval system. "
            + STRATEGIES[chosen].format(n=n)
            + (f" {self.instructions.strip()}" if self.instructions else "")
            + f' Answer with JSON only, exactly {n} strings: {{"queries": ["...", ...]}}.'
            " Do not repeat the original query."
        )
        body = {
            "model": self.model,
            "messages": [{"role": "system", "content": system}, {"role": "user", "content": query}],
            "temperature": self.temperature,
            **self.extra_body,
        }
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if self._api_key:
            headers["Authorization"] = f"Bearer {self._api_key}"
        return json.dumps(body).encode(), headers

    def _read(self, query: str, answer: str, max_variants: int) -> Expansion:
        try:
            texts = [self._redacted(text) for text in parse_variants(answer)]
        except UnusableAnswer as exc:
            return self._fall_back(query, max_variants, str(exc))
        variants = assemble_variants(query, texts, max_variants, "llm")
        if len(variants) == 1:
            return self._fall_back(query, max_variants, "the model only repeated the original query")
        wanted, got = max_variants - 1, len(variants) - 1
        note = None
        if got < wanted:
            note = f"asked the model for {wanted} variants, got {got} usable"
        elif len(texts) > wanted:
            note = f"the model gave {len(texts)} variants, kept the first {wanted} new ones"
        return Expansion(variants, note=note)

    def _fall_back(self, query: str, max_variants: int, reason: str) -> Expansion:
        reason = server_text(self._redacted(reason), _REASON_LIMIT)
        logger.warning("LLM query expansion failed (%s); using the %s fallback", reason, self.fallback)
        if self.fallback == "heuristic":
            variants = self._heuristic.expand(query, max_variants=max_variants).variants
        else:
            variants = (Variant(query, "original"),)
        return Expansion(variants, fallback_reason=reason)

    def _redacted(self, text: str) -> str:
        """``text`` with every occurrence of the API key replaced (a server may echo what it got)."""
        return text.replace(self._api_key, "***") if self._api_key else text


def check_strategy(strategy: str) -> str:
    if strategy not in STRATEGIES:
        raise FusionError(f"strategy must be one of {', '.join(STRATEGIES)} (got {strategy!r})")
    return strategy


_KEY_SOURCES = ("FANFUSE_LLM_API_KEY", "OPENAI_API_KEY")


def _api_key(given: object, env: Mapping[str, str]) -> str | None:
    """The key from the argument, else the first variable set; checked, surrounding whitespace removed.

    An error names where the key came from and what is wrong with it, never the key itself."""
    candidates = [("api_key", given), *((name, env.get(name)) for name in _KEY_SOURCES)]
    for source, value in candidates:
        if value is None or value == "":
            continue
        if not isinstance(value, str):
            raise TypeError(f"{source} must be a str or None (got {type(value).__name__})")
        key = value.strip()
        if not key:
            raise FusionError(
                f"{source} is blank (whitespace only); leave it unset for a server without keys"
            )
        for position, char in enumerate(key, start=1):
            if not "!" <= char <= "~":
                raise FusionError(
                    f"{source} must be printable ASCII without whitespace, but has {_char_kind(char)} at "
                    f"position {position} (the key is not shown)"
                )
        return key
    return None


def _char_kind(char: str) -> str:
    if char == " ":
        return "a space"
    if char in "\r\n":
        return "a line break"
    if char == "\t":
        return "a tab"
    if char < " " or char == "\x7f":
        return "a control character"
    return "a non-ASCII character"


def _describe(exc: BaseException, timeout: float) -> str:
    """A short reason for the diagnostics; the request's headers (the API key) are never in it."""
    if isinstance(exc, (TimeoutError, asyncio.TimeoutError)):  # distinct classes on Python 3.10
        return f"timeout: no answer within {timeout:g} s"
    if isinstance(exc, (HTTPFailure, TooLarge, UnusableAnswer)):
        return str(exc)
    if isinstance(exc, OSError):
        return f"connection failed: {exc}"
    if isinstance(exc, http.client.HTTPException):
        return f"unreadable HTTP answer: {type(exc).__name__}: {exc}"
    return f"{type(exc).__name__}: {exc}"
