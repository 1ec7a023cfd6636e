"""Reranking the fused window with a user callable ``reranker(query, hits) -> scores``.

The reranker (a cross-encoder, an LLM judge, ...) returns one score per hit, higher is better; it may
be ``async def``, otherwise it runs in the thread pool so it never blocks the event loop. If it fails
or returns something unusable, the fused order stands and the diagnostics carry the error: a broken
reranker degrades the ranking, it does not take the search down.
"""

from __future__ import annotations

import asyncio
import dataclasses
import inspect
import math
from collections.abc import Awaitable, Callable, Sequence
from concurrent.futures import Executor

from fanfuse.multiquery.diagnostics import FusedHit

__all__ = ["Reranker", "check_reranker", "is_async_reranker", "rerank", "rerank_sync"]

Reranker = Callable[[str, Sequence[FusedHit]], Sequence[float] | Awaitable[Sequence[float]]]


async def rerank(
    reranker: Reranker, query: str, hits: list[FusedHit], executor: Executor
) -> tuple[list[FusedHit], str | None]:
    """The hits reordered by the reranker's scores (stable for ties), and an error message or None."""
    if not hits:
        return hits, None
    try:
        if is_async_reranker(reranker):
            scores = await reranker(query, hits)  # type: ignore[misc]
        else:
            scores = await asyncio.get_running_loop().run_in_executor(executor, reranker, query, hits)
        checked = _checked_scores(scores, len(hits))
    except Exception as exc:
        return hits, f"{type(exc).__name__}: {exc}"
    return _reordered(hits, checked), None


def rerank_sync(reranker: Reranker, query: str, hits: list[FusedHit]) -> tuple[list[FusedHit], str | None]:
    """``rerank`` for a sync reranker called from sync code: in the calling thread."""
    if not hits:
        return hits, None
    try:
        checked = _checked_scores(reranker(query, hits), len(hits))
    except Exception as exc:
        return hits, f"{type(exc).__name__}: {exc}"
    return _reordered(hits, checked), None


def _reordered(hits: list[FusedHit], scores: list[float]) -> list[FusedHit]:
    order = sorted(range(len(hits)), key=lambda i: -scores[i])
    return [dataclasses.replace(hits[i], rerank_score=scores[i]) for i in order]


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
