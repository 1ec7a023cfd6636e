"""What stands in for a chat model's failed call (``LLMExpander``): the request it was, the failure
and its reason for the diagnostics, and the expansion given instead: the original query alone, or the
variants of an expander without a model given the same question, budget, conversation and
filter."""

from __future__ import annotations

import asyncio
import http.client
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal, get_args

from fanfuse._panics import is_failure
from fanfuse.multiquery.conversation import History
from fanfuse.multiquery.expand.calls import given_to
from fanfuse.multiquery.expand.expanders import (
    Expander,
    Expansion,
    Variant,
)
from fanfuse.multiquery.expand.llm_http import HTTPFailure, TooLarge
from fanfuse.multiquery.expand.llm_parse import UnusableAnswer
from fanfuse.multiquery.expand.llm_prompts import StrategyName

#: What a failed request gives: the variants of an expander without a model (``fallback_expander``),
#: given the question's conversation, or the original query alone.
Fallback = Literal["heuristic", "original"]
FALLBACKS: tuple[Fallback, ...] = get_args(Fallback)


@dataclass(frozen=True, slots=True)
class Asked:
    """One expansion's request: what was asked, and how many variants."""

    query: str
    max_variants: int
    strategy: StrategyName
    history: History
    wanted: int
    messages: list[dict[str, str]]
    filter: Mapping[str, Any] | None


@dataclass(frozen=True, slots=True)
class Failed:
    """A call that gave no variants, and why (redacted and clipped where the call settled)."""

    reason: str


def stood_in(asked: Asked, failed: Failed, got: Expansion | BaseException | None) -> Expansion:
    """The fallback's expansion (None: the original query alone), the model's failure its reason;
    the stand-in's own failure is added to it, its note kept."""
    if isinstance(got, Expansion):
        reason = "; ".join(filter(None, [failed.reason, got.fallback_reason]))
        return Expansion(got.variants, fallback_reason=reason, note=got.note)
    reason = failed.reason if got is None else f"{failed.reason}; fallback: {type(got).__name__}: {got}"
    return Expansion((Variant(asked.query, "original"),), fallback_reason=reason)


def _call(asked: Asked, stand_in: Expander) -> dict[str, Any]:
    """The stand-in's keywords: the question's budget, conversation and filter (if it reads one)."""
    return {"max_variants": asked.max_variants, "history": asked.history, **given_to(stand_in, asked.filter)}


def fall_back(asked: Asked, failed: Failed, stand_in: Expander | None) -> Expansion:
    """What stands in for a failed call, run in the caller's thread: `stand_in`'s variants, or (None)
    the original query alone."""
    if stand_in is None:
        return stood_in(asked, failed, None)
    try:
        got = stand_in.expand(asked.query, **_call(asked, stand_in))
    except BaseException as exc:
        if not is_failure(exc):
            raise
        return stood_in(asked, failed, exc)
    return stood_in(asked, failed, got)


async def afall_back(asked: Asked, failed: Failed, stand_in: Expander | None) -> Expansion:
    """``fall_back``, on the caller's event loop."""
    if stand_in is None:
        return stood_in(asked, failed, None)
    try:
        got = await stand_in.aexpand(asked.query, **_call(asked, stand_in))
    except BaseException as exc:
        if not is_failure(exc):
            raise
        return stood_in(asked, failed, exc)
    return stood_in(asked, failed, got)


def timed_out(timeout: float) -> str:
    return f"timeout: no answer within {timeout:g} s"


def failure_reason(exc: BaseException, timeout: float) -> str:
    """A reason for the diagnostics, whole (the caller redacts, then clips it). The request's headers
    are never in it; a server's or client's text may be, which is why it is redacted."""
    # A client's own timeout (openai's APITimeoutError, httpx's) is the same deadline seen from inside.
    if isinstance(exc, (TimeoutError, asyncio.TimeoutError)) or "Timeout" in type(exc).__name__:
        return timed_out(timeout)
    if isinstance(exc, (HTTPFailure, TooLarge, UnusableAnswer)):
        return str(exc)
    if isinstance(exc, OSError):
        return f"connection failed: {exc}"
    if isinstance(exc, http.client.HTTPException):
        return f"unreadable HTTP answer: {type(exc).__name__}: {exc}"
    return f"{type(exc).__name__}: {exc}"
