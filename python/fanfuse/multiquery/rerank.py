"""Reranking the fused window with a user callable ``reranker(query, hits) -> scores``.

The reranker (a cross-encoder, an LLM judge, ...) returns one score per hit, higher is better; it may
be ``async def``, otherwise it runs in threads of its own so it never blocks the event loop. It has
the same time limit as a branch. If it fails, times out or returns something unusable, the fused
order stands and the diagnostics carry the error: a broken reranker degrades the ranking, it does not
take the search down. Failing means what it means for a retriever (``fanfuse._panics.is_failure``): an
exception or a Rust panic.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import math
import time
from collections.abc import Awaitable, Callable, Sequence
from concurrent.futures import wait
from dataclasses import dataclass

from fanfuse._panics import is_failure
from fanfuse.multiquery.diagnostics import FusedHit
from fanfuse.multiquery.workers import MissedDeadline, Workers, timeout_reason, within

__all__ = ["Reranked", "Reranker", "check_reranker", "is_async_reranker", "rerank", "rerank_sync"]

Reranker = Callable[[str, Sequence[FusedHit]], Sequence[float] | Awaitable[Sequence[float]]]


@dataclass(slots=True)
class Reranked:
    hits: list[FusedHit]
    error: str | None  # why the fused order stands, if the reranker failed
    elapsed_ms: float


async def rerank(
    reranker: Reranker | None, query: str, hits: list[FusedHit], workers: Workers, timeout: float | None
) -> Reranked:
    """The hits reordered by the reranker's scores (stable for ties); unchanged without a reranker."""
    begin = time.perf_counter()
    if reranker is None or not hits:
        return Reranked(hits, None, 0.0)
    try:
        if is_async_reranker(reranker):
            scores = await within(reranker(query, hits), timeout)  # type: ignore[arg-type]
        else:
            scores = await workers.call(functools.partial(reranker, query, hits), timeout)  # type: ignore[arg-type]
        return _reranked(hits, scores, begin)
    except MissedDeadline as exc:
        assert timeout is not None  # no deadline, nothing to miss
        return _unchanged(hits, timeout_reason(timeout, exc), begin)
    except BaseException as exc:
        if not is_failure(exc):  # a signal, an exit or a cancellation goes on up
            raise
        return _unchanged(hits, f"{type(exc).__name__}: {exc}", begin)


def rerank_sync(
    reranker: Reranker | None, query: str, hits: list[FusedHit], workers: Workers, timeout: float | None
) -> Reranked:
    """``rerank`` for a sync reranker called from sync code: in the calling thread without a time
    limit, else in the reranker's threads."""
    begin = time.perf_counter()
    if reranker is None or not hits:
        return Reranked(hits, None, 0.0)
    try:
        if timeout is None:
            return _reranked(hits, reranker(query, hits), begin)
        future = workers.submit(functools.partial(reranker, query, hits))
        # Waited for apart from its result: the reranker's own TimeoutError is its error, as in rerank.
        if not wait([future], timeout).done:
            return _unchanged(hits, timeout_reason(timeout, workers.timed_out(future)), begin)
        return _reranked(hits, future.result(), begin)
    except BaseException as exc:
        if not is_failure(exc):  # a signal, an exit or a cancellation goes on up
            raise
        return _unchanged(hits, f"{type(exc).__name__}: {exc}", begin)


def _reranked(hits: list[FusedHit], scores: object, begin: float) -> Reranked:
    checked = _checked_scores(scores, len(hits))
    order = sorted(range(len(hits)), key=lambda i: -checked[i])
    reordered = [dataclasses.replace(hits[i], rerank_score=checked[i]) for i in order]
    return Reranked(reordered, None, (time.perf_counter() - begin) * 1e3)


def _unchanged(hits: list[FusedHit], error: str, begin: float) -> Reranked:
    return Reranked(hits, error, (time.perf_counter() - begin) * 1e3)


def check_reranker(reranker: Reranker | None) -> Reranker | None:
    if reranker is not None and not callable(reranker):
        raise TypeError(f"reranker must be callable as reranker(query, hits) (got {type(reranker).__name__})")
    return reranker


def is_async_reranker(fn: object) -> bool:
    return inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(getattr(fn, "__call__", None))  # noqa: B004


def _checked_scores(scores: object, expected: int) -> list[float]:
    if isinstance(scores, (str, bytes)) or not isinstance(scores, Sequence):
        raise TypeError(f"reranker returned {type(scores).__name__}, expected a list of {expected} floats")
    if len(scores) != expected:
        raise ValueError(f"reranker returned {len(scores)} scores for {expected} hits")
    out = [float(s) for s in scores]
    if not all(math.isfinite(s) for s in out):
        raise ValueError("reranker returned a score that is NaN or infinite")
    return out
