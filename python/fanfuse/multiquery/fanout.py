"""Running every (variant x retriever) branch of a search concurrently.

Async retrievers run as tasks on the event loop, sync ones in a thread pool. A semaphore bounds how
many run at once, and each branch has a deadline. A branch that raises or times out becomes a report
with its error instead of a list; the caller decides what to do when all of them fail. Cancelling the
awaiting task cancels every branch (``asyncio.gather`` propagates the cancellation to its children).
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import sys
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from concurrent.futures import Executor
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass
from typing import Any

from fanfuse.multiquery.diagnostics import BranchReport

__all__ = ["Branch", "BranchOutcome", "fan_out", "fan_out_sync", "is_async_retriever"]


def is_async_retriever(retriever: object) -> bool:
    return inspect.iscoroutinefunction(getattr(retriever, "search", None))


@dataclass(slots=True)
class Branch:
    variant_index: int
    variant: str
    retriever_name: str
    retriever: Any
    is_async: bool
    weight: float


@dataclass(slots=True)
class BranchOutcome:
    branch: Branch
    hits: Sequence[Any] | None  # None when the branch failed
    report: BranchReport


async def fan_out(
    branches: Sequence[Branch],
    *,
    k: int,
    filter: Mapping[str, Any] | None,
    timeout: float | None,
    limit: int,
    executor: Executor,
    started: float,
) -> list[BranchOutcome]:
    """Each branch's outcome, in branch order. ``started`` is the search's ``perf_counter`` origin."""
    semaphore = asyncio.Semaphore(limit) if limit < len(branches) else None
    run = functools.partial(
        _run_branch,
        k=k,
        filter=filter,
        timeout=timeout,
        semaphore=semaphore,
        executor=executor,
        started=started,
    )
    if len(branches) == 1:  # expansion off with one retriever: no task, no gather
        return [await run(branches[0])]
    return list(await asyncio.gather(*(run(branch) for branch in branches)))


async def _run_branch(
    branch: Branch,
    *,
    k: int,
    filter: Mapping[str, Any] | None,
    timeout: float | None,
    semaphore: asyncio.Semaphore | None,
    executor: Executor,
    started: float,
) -> BranchOutcome:
    if semaphore is not None:
        await semaphore.acquire()
    begin = time.perf_counter()
    error: str | None = None
    timed_out = False
    hits: Sequence[Any] | None = None
    try:
        call = _search_call(branch.retriever, branch.variant, k, filter)
        loop = asyncio.get_running_loop()
        pending = call() if branch.is_async else loop.run_in_executor(executor, call)
        result = await _within(pending, timeout)
        if inspect.isawaitable(result):  # a sync-looking method that returned a coroutine
            result = await _within(result, timeout)
        hits = _checked_hits(result, branch.retriever_name)
    except asyncio.TimeoutError as exc:
        # A sync retriever's thread cannot be interrupted: it finishes in the background, unused.
        timed_out = timeout is not None
        error = f"timed out after {timeout:g} s" if timeout is not None else f"TimeoutError: {exc}"
    except Exception as exc:
        error = f"{type(exc).__name__}: {exc}"
    finally:
        if semaphore is not None:
            semaphore.release()
    return _outcome(branch, hits, error, timed_out, begin, time.perf_counter(), started)


def fan_out_sync(
    branches: Sequence[Branch],
    *,
    k: int,
    filter: Mapping[str, Any] | None,
    timeout: float | None,
    executor: Executor,
    started: float,
) -> list[BranchOutcome]:
    """The same for sync retrievers called from sync code, without an event loop: each branch runs in
    the pool and is waited for until its deadline. A single branch without a deadline runs right in
    the calling thread, exactly like calling the retriever directly."""
    if len(branches) == 1 and timeout is None:
        return [_run_sync_branch(branches[0], k, filter, started)]
    submitted = time.perf_counter()
    futures = [executor.submit(_run_sync_branch, branch, k, filter, started) for branch in branches]
    outcomes = []
    for branch, future in zip(branches, futures, strict=True):
        remaining = None if timeout is None else max(0.0, submitted + timeout - time.perf_counter())
        try:
            outcomes.append(future.result(remaining))
        except FutureTimeout:
            future.cancel()  # if it has not started yet; a running thread finishes in the background
            error = f"timed out after {timeout:g} s"
            outcomes.append(_outcome(branch, None, error, True, submitted, time.perf_counter(), started))
    return outcomes


def _run_sync_branch(
    branch: Branch, k: int, filter: Mapping[str, Any] | None, started: float
) -> BranchOutcome:
    begin = time.perf_counter()
    hits: Sequence[Any] | None = None
    error: str | None = None
    try:
        result = _search_call(branch.retriever, branch.variant, k, filter)()
        if inspect.iscoroutine(result):
            result.close()
            raise TypeError(f"retriever {branch.retriever_name!r} returned a coroutine: declare it async def")
        hits = _checked_hits(result, branch.retriever_name)
    except Exception as exc:
        error = f"{type(exc).__name__}: {exc}"
    return _outcome(branch, hits, error, False, begin, time.perf_counter(), started)


def _outcome(
    branch: Branch,
    hits: Sequence[Any] | None,
    error: str | None,
    timed_out: bool,
    begin: float,
    end: float,
    started: float,
) -> BranchOutcome:
    report = BranchReport(
        variant_index=branch.variant_index,
        variant=branch.variant,
        retriever=branch.retriever_name,
        hits=0 if hits is None else len(hits),
        started_ms=(begin - started) * 1e3,
        latency_ms=(end - begin) * 1e3,
        error=error,
        timed_out=timed_out,
    )
    return BranchOutcome(branch, hits, report)


async def _within(awaitable: Awaitable[Any], timeout: float | None) -> Any:
    if timeout is None:
        return await awaitable
    if sys.version_info >= (3, 11):  # asyncio.timeout: no extra task per branch, unlike wait_for
        async with asyncio.timeout(timeout):
            return await awaitable
    return await asyncio.wait_for(awaitable, timeout)


def _search_call(retriever: Any, query: str, k: int, filter: Mapping[str, Any] | None) -> Callable[[], Any]:
    # Pass filter only when there is one, so retrievers without filtering still work unfiltered.
    if filter is None:
        return functools.partial(retriever.search, query, k)
    return functools.partial(retriever.search, query, k, filter=filter)


def _checked_hits(result: object, name: str) -> Sequence[Any]:
    if isinstance(result, (str, bytes)) or not isinstance(result, Sequence):
        if result is None or not hasattr(result, "__iter__"):
            raise TypeError(f"retriever {name!r} returned {type(result).__name__}, expected a list of Hit")
        result = list(result)
    for hit in result:
        if not isinstance(getattr(hit, "id", None), str):
            raise TypeError(
                f"retriever {name!r} returned {type(hit).__name__} without a str id; "
                "return fanfuse.retrievers.Hit objects"
            )
    return result
