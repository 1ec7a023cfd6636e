"""Running every (variant x retriever) branch of a search concurrently.

Async retrievers run as tasks on the event loop; sync ones in their retriever's own ``Workers``
threads, so a hung backend holds its own threads only. A sync retriever with a ``search_batch(queries,
k, filter=None)`` method gets all its branches of a search in one call, one thread hand-off (a dense
retriever then embeds the variants in one encoder call); each branch is still reported on its own.
A semaphore bounds how many calls of one search run at once, and each branch has a deadline that covers
the call, the wait for a thread and the reading of what the retriever returned (``hits.py``: checked
inside the branch, in its thread when reading may block). A branch that raises (a Rust panic included:
pyo3 raises it as a BaseException), returns bad hits or times out becomes a report with its error
instead of a list; the caller decides what to do when all of them fail. A branch of weight 0 is not
run at all and is reported as skipped. Cancelling the awaiting task cancels every branch
(``asyncio.gather`` propagates the cancellation to its children).
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from fanfuse._panics import is_failure
from fanfuse.multiquery._portal import run_sync
from fanfuse.multiquery.diagnostics import BranchReport
from fanfuse.multiquery.hits import CheckedHits, consumed_in_thread, read_hits
from fanfuse.multiquery.workers import Call, Countdown, MissedDeadline, Workers, timeout_reason, within

__all__ = ["Branch", "BranchOutcome", "batches_queries", "fan_out", "fan_out_sync", "is_async_retriever"]


def is_async_retriever(retriever: object) -> bool:
    return inspect.iscoroutinefunction(getattr(retriever, "search", None))


def batches_queries(retriever: object) -> bool:
    """Whether a sync retriever takes several queries in one call (``search_batch``)."""
    batch = getattr(retriever, "search_batch", None)
    return callable(batch) and not inspect.iscoroutinefunction(batch) and not is_async_retriever(retriever)


@dataclass(slots=True)
class Branch:
    variant_index: int
    variant: str
    retriever_name: str
    retriever: Any
    is_async: bool
    weight: float
    workers: Workers
    batched: bool = False  # the retriever's branches of a search go in one search_batch call


@dataclass(slots=True)
class BranchOutcome:
    branch: Branch
    hits: CheckedHits | None  # None when the branch failed or was skipped
    report: BranchReport


async def fan_out(
    branches: Sequence[Branch],
    *,
    k: int,
    filter: Mapping[str, Any] | None,
    timeout: float | None,
    limit: int,
    started: float,
) -> list[BranchOutcome]:
    """Each branch's outcome, in branch order. ``started`` is the search's ``perf_counter`` origin."""
    calls = _calls(branches)
    if all(len(call) == 1 for call in calls):
        semaphore = asyncio.Semaphore(limit) if limit < len(branches) else None
        run = functools.partial(
            _run_branch, k=k, filter=filter, timeout=timeout, semaphore=semaphore, started=started
        )
        if len(branches) == 1:  # expansion off with one retriever: no task, no gather
            return [await run(branches[0])]
        return list(await asyncio.gather(*(run(branch) for branch in branches)))
    semaphore = asyncio.Semaphore(limit) if limit < len(calls) else None
    run_call = functools.partial(
        _run_call, k=k, filter=filter, timeout=timeout, semaphore=semaphore, started=started
    )
    ran = await asyncio.gather(*(run_call([branches[i] for i in call]) for call in calls))
    outcomes: list[BranchOutcome | None] = [None] * len(branches)
    for call, results in zip(calls, ran, strict=True):
        for i, outcome in zip(call, results, strict=True):
            outcomes[i] = outcome
    return _in_branch_order(branches, outcomes, started)


async def _run_call(
    call: list[Branch],
    *,
    k: int,
    filter: Mapping[str, Any] | None,
    timeout: float | None,
    semaphore: asyncio.Semaphore | None,
    started: float,
) -> list[BranchOutcome]:
    if len(call) == 1:
        branch = call[0]
        return [
            await _run_branch(
                branch, k=k, filter=filter, timeout=timeout, semaphore=semaphore, started=started
            )
        ]
    if semaphore is not None:
        await semaphore.acquire()
    begin = time.perf_counter()
    deadline = None if timeout is None else time.monotonic() + timeout
    try:
        batch = functools.partial(_run_sync_batch, call, k, filter, timeout, deadline, started)
        return await call[0].workers.call(batch, timeout)
    except BaseException as exc:
        if not is_failure(exc):
            raise
        error = _reason(exc, timeout)
        return [_outcome(branch, None, error, begin, started) for branch in call]
    finally:
        if semaphore is not None:
            semaphore.release()


async def _run_branch(
    branch: Branch,
    *,
    k: int,
    filter: Mapping[str, Any] | None,
    timeout: float | None,
    semaphore: asyncio.Semaphore | None,
    started: float,
) -> BranchOutcome:
    if branch.weight == 0:
        return _skipped(branch, started)
    if semaphore is not None:
        await semaphore.acquire()
    begin = time.perf_counter()
    deadline = None if timeout is None else time.monotonic() + timeout
    hits: CheckedHits | None = None
    error: tuple[str, bool] | None = None
    try:
        if branch.is_async:
            result = await within(_search_call(branch, k, filter)(), timeout)
        else:
            call = functools.partial(_call_in_thread, branch, k, filter, deadline, on_loop=True)
            result = await branch.workers.call(call, timeout)
        if isinstance(result, _Awaiting):  # a sync-looking method that returned an awaitable
            result = await within(result.awaitable, _left(deadline))
        if isinstance(result, CheckedHits):
            hits = result
        elif consumed_in_thread(result):  # e.g. a generator: its next() may block
            read = functools.partial(read_hits, result, branch.retriever_name, deadline)
            hits = await branch.workers.call(read, _left(deadline))
        else:
            hits = read_hits(result, branch.retriever_name, deadline)
    except BaseException as exc:
        if not is_failure(exc):
            raise
        error = _reason(exc, timeout)
    finally:
        if semaphore is not None:
            semaphore.release()
    return _outcome(branch, hits, error, begin, started)


def fan_out_sync(
    branches: Sequence[Branch],
    *,
    k: int,
    filter: Mapping[str, Any] | None,
    timeout: float | None,
    started: float,
) -> list[BranchOutcome]:
    """The same for sync retrievers called from sync code, without an event loop: each branch runs in
    its retriever's threads and is waited for until its deadline. A single branch without a deadline
    runs right in the calling thread, exactly like calling the retriever directly."""
    if len(branches) == 1 and timeout is None:
        return [_run_sync_branch(branches[0], k, filter, None, None, started)]
    submitted = time.perf_counter()
    deadline = None if timeout is None else time.monotonic() + timeout
    calls = _calls(branches)
    # One countdown for the whole search: the caller sleeps once, until the last call ends or the
    # deadline (the same for every branch) passes, rather than once per call it finds unfinished.
    countdown = Countdown(len(calls))
    running: list[tuple[list[int], Call[Any]]] = []
    for call in calls:
        first = branches[call[0]]
        run = (
            functools.partial(_run_sync_branch, first, k, filter, timeout, deadline, started)
            if len(call) == 1
            else functools.partial(
                _run_sync_batch, [branches[i] for i in call], k, filter, timeout, deadline, started
            )
        )
        running.append((call, first.workers.start(run, countdown)))
    countdown.wait(_left(deadline))
    outcomes: list[BranchOutcome | None] = [None] * len(branches)
    for call, queued in running:
        if queued.done:
            result = queued.result()
            if len(call) == 1:
                outcomes[call[0]] = result
            else:
                for i, outcome in zip(call, result, strict=True):
                    outcomes[i] = outcome
        else:  # deadline is set: without one, the countdown waits for every call
            assert timeout is not None
            error = (timeout_reason(timeout, branches[call[0]].workers.withdraw(queued)), True)
            for i in call:
                outcomes[i] = _outcome(branches[i], None, error, submitted, started)
    return _in_branch_order(branches, outcomes, started)


def _calls(branches: Sequence[Branch]) -> list[list[int]]:
    """The branches that run, as calls of branch positions: all branches of a batched retriever in
    one call, every other branch in a call of its own. Branches of weight 0 are in none."""
    if not any(branch.batched for branch in branches):
        return [[i] for i, branch in enumerate(branches) if branch.weight != 0]
    calls: list[list[int]] = []
    batches: dict[int, list[int]] = {}
    for i, branch in enumerate(branches):
        if branch.weight == 0:
            continue
        if not branch.batched:
            calls.append([i])
        elif (batch := batches.get(id(branch.retriever))) is not None:
            batch.append(i)
        else:
            batches[id(branch.retriever)] = batch = [i]
            calls.append(batch)
    return calls


def _in_branch_order(
    branches: Sequence[Branch], outcomes: list[BranchOutcome | None], started: float
) -> list[BranchOutcome]:
    """The outcomes by branch position; a branch that did not run (weight 0) is reported skipped."""
    return [_skipped(branches[i], started) if o is None else o for i, o in enumerate(outcomes)]


def _run_sync_batch(
    call: list[Branch],
    k: int,
    filter: Mapping[str, Any] | None,
    timeout: float | None,
    deadline: float | None,
    started: float,
) -> list[BranchOutcome]:
    """One ``search_batch`` call for the branches of one retriever; each list is read and checked
    on its own, so a bad list fails its own branch only."""
    begin = time.perf_counter()
    retriever, name = call[0].retriever, call[0].retriever_name
    queries = [branch.variant for branch in call]
    try:
        if filter is None:
            lists = retriever.search_batch(queries, k)
        else:
            lists = retriever.search_batch(queries, k, filter=filter)
        if inspect.isawaitable(lists):
            if inspect.iscoroutine(lists):
                lists.close()
            raise TypeError(
                f"retriever {name!r} returned a coroutine from search_batch: declare search async"
            )
        if not isinstance(lists, (list, tuple)) or len(lists) != len(queries):
            raise TypeError(
                f"retriever {name!r}: search_batch returned {type(lists).__name__} for {len(queries)} "
                f"queries, expected a list of {len(queries)} lists of Hit"
            )
    except BaseException as exc:
        if not is_failure(exc):
            raise
        error = _reason(exc, timeout)
        ended = time.perf_counter()
        return [_outcome(branch, None, error, begin, started, ended) for branch in call]
    read: list[tuple[CheckedHits | None, tuple[str, bool] | None]] = []
    for result in lists:
        try:
            read.append((read_hits(result, name, deadline), None))
        except BaseException as exc:
            if not is_failure(exc):
                raise
            read.append((None, _reason(exc, timeout)))
    ended = time.perf_counter()  # one call: every branch of it reports the same time
    return [
        _outcome(branch, hits, error, begin, started, ended)
        for branch, (hits, error) in zip(call, read, strict=True)
    ]


def _run_sync_branch(
    branch: Branch,
    k: int,
    filter: Mapping[str, Any] | None,
    timeout: float | None,
    deadline: float | None,
    started: float,
) -> BranchOutcome:
    if branch.weight == 0:
        return _skipped(branch, started)
    begin = time.perf_counter()
    hits: CheckedHits | None = None
    error: tuple[str, bool] | None = None
    try:
        result = _call_in_thread(branch, k, filter, deadline, on_loop=False)
        assert isinstance(result, CheckedHits)
        hits = result
    except BaseException as exc:
        if not is_failure(exc):
            raise
        error = _reason(exc, timeout)
    return _outcome(branch, hits, error, begin, started)


@dataclass(slots=True)
class _Awaiting:
    awaitable: Awaitable[Any]


def _call_in_thread(
    branch: Branch, k: int, filter: Mapping[str, Any] | None, deadline: float | None, *, on_loop: bool
) -> CheckedHits | _Awaiting:
    """A sync retriever's call and the reading of its output, both in the calling (worker) thread.

    A sync-looking ``search`` may return an awaitable (a wrapper around an async client). It is
    awaited as an ``async def`` search would be, so that ``search`` and ``asearch`` agree: handed back
    to the caller's loop (``on_loop``), or, for a search without one, run on the background loop that
    sync searches share, within the branch's deadline."""
    result = _search_call(branch, k, filter)()
    if inspect.isawaitable(result):
        if on_loop:
            return _Awaiting(result)
        result = run_sync(within(result, _left(deadline)))
    return read_hits(result, branch.retriever_name, deadline)


def _search_call(branch: Branch, k: int, filter: Mapping[str, Any] | None) -> Callable[[], Any]:
    # Pass filter only when there is one, so retrievers without filtering still work unfiltered.
    if filter is None:
        return functools.partial(branch.retriever.search, branch.variant, k)
    return functools.partial(branch.retriever.search, branch.variant, k, filter=filter)


def _left(deadline: float | None) -> float | None:
    return None if deadline is None else max(0.0, deadline - time.monotonic())


def _reason(exc: BaseException, timeout: float | None) -> tuple[str, bool]:
    """The branch's error and whether it missed its deadline (a retriever's own ``TimeoutError``,
    e.g. its HTTP client's, is reported as it is)."""
    if isinstance(exc, MissedDeadline) and timeout is not None:
        return timeout_reason(timeout, exc), True
    return f"{type(exc).__name__}: {exc}", False


def _skipped(branch: Branch, started: float) -> BranchOutcome:
    now = time.perf_counter()
    return BranchOutcome(branch, None, _report(branch, None, None, now, started, skipped=True))


def _outcome(
    branch: Branch,
    hits: CheckedHits | None,
    error: tuple[str, bool] | None,
    begin: float,
    started: float,
    ended: float | None = None,
) -> BranchOutcome:
    message, timed_out = error if error is not None else (None, False)
    report = _report(branch, hits, message, begin, started, timed_out=timed_out, ended=ended)
    return BranchOutcome(branch, hits, report)


def _report(
    branch: Branch,
    hits: CheckedHits | None,
    error: str | None,
    begin: float,
    started: float,
    *,
    timed_out: bool = False,
    skipped: bool = False,
    ended: float | None = None,
) -> BranchReport:
    return BranchReport(
        variant_index=branch.variant_index,
        variant=branch.variant,
        retriever=branch.retriever_name,
        hits=0 if hits is None else len(hits.ids),
        started_ms=(begin - started) * 1e3,
        latency_ms=((time.perf_counter() if ended is None else ended) - begin) * 1e3,
        error=error,
        timed_out=timed_out,
        skipped=skipped,
    )
