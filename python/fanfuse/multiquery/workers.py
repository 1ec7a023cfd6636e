"""Threads for the sync calls of one retriever (or of the reranker), at most ``limit`` at once.

A sync call cannot be interrupted: a call into a backend that hangs holds its thread until the
backend answers, perhaps never. With one pool shared by every retriever, a hung backend soon holds
all its threads, and the healthy retrievers' calls queue behind it until they time out. So each
retriever has its own ``Workers``: a hung backend holds at most ``limit`` threads, its later calls
wait in its own queue, and a call whose caller stopped waiting (its branch timed out) is withdrawn
from the queue and never runs. The healthy retrievers keep their threads.

The threads are daemon threads that end after a while idle: a thread stuck in a backend neither
keeps the process from exiting nor is waited for by ``asyncio.run``.
"""

from __future__ import annotations

import asyncio
import contextlib
import queue
import sys
import threading
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from concurrent.futures import Future
from typing import Any, Generic, TypeVar

__all__ = ["Call", "Countdown", "MissedDeadline", "NeverStarted", "Workers", "timeout_reason", "within"]

T = TypeVar("T")

#: Seconds an idle thread waits for work before it ends.
IDLE_SECONDS = 30.0


class Workers:
    """Runs calls in at most ``limit`` threads named ``fanfuse-<name>``, in the order submitted."""

    def __init__(self, name: str, limit: int):
        self.name = name
        self.limit = limit
        self._lock = threading.Lock()
        self._waiting: OrderedDict[Future[Any] | Call[Any], Callable[[], Any]] = OrderedDict()
        # An idle thread blocks on _wakeups; one token is put per idle thread that is to wake, never
        # more, so tokens do not pile up however many calls wait for a hung backend.
        self._wakeups: queue.SimpleQueue[None] = queue.SimpleQueue()
        self._tokens = 0
        self._threads = 0
        self._idle = 0
        self._closed = False

    def submit(self, fn: Callable[[], T]) -> Future[T]:
        """``fn``'s future. Cancelling it before a thread has taken it withdraws the call."""
        future: Future[T] = Future()
        self._enqueue(future, fn)
        future.add_done_callback(self._withdraw)
        return future

    def start(self, fn: Callable[[], T], countdown: Countdown) -> Call[T]:
        """``fn`` queued as a ``Call`` that counts ``countdown`` down when it ends. Lighter than
        ``submit`` for a caller that waits for a whole batch at once; ``withdraw`` takes it back."""
        call: Call[T] = Call(countdown)
        self._enqueue(call, fn)
        return call

    def withdraw(self, call: Call[Any]) -> MissedDeadline:
        """The error for a ``Call`` whose caller stopped waiting; withdraws it if it is still queued."""
        with self._lock:
            queued = self._waiting.pop(call, None) is not None
        return NeverStarted(self.name, self.limit) if queued else MissedDeadline()

    def _enqueue(self, task: Future[Any] | Call[Any], fn: Callable[[], Any]) -> None:
        with self._lock:
            if self._closed:
                raise RuntimeError(f"the workers of {self.name!r} are closed")
            self._waiting[task] = fn
            wake = self._idle > self._tokens
            spawn = not wake and self._threads < self.limit
            self._tokens += wake
            self._threads += spawn
        if wake:
            self._wakeups.put(None)
        elif spawn:
            threading.Thread(target=self._work, name=f"fanfuse-{self.name}", daemon=True).start()

    async def call(self, fn: Callable[[], T], timeout: float | None) -> T:
        """``fn()`` run in a thread, awaited at most ``timeout`` seconds.

        Raises ``MissedDeadline``; when the call never got a thread, ``NeverStarted``."""
        loop = asyncio.get_running_loop()
        waiter: asyncio.Future[T] = loop.create_future()
        future = self.submit(fn)
        future.add_done_callback(lambda done: _settle_on_loop(loop, waiter, done))
        try:
            return await within(waiter, timeout)
        except MissedDeadline:
            raise self.timed_out(future) from None
        except BaseException:
            future.cancel()  # cancelled by the caller: a call still waiting for a thread never runs
            raise

    def timed_out(self, future: Future[Any]) -> MissedDeadline:
        """The error for a call whose caller stopped waiting; withdraws it if it is still queued."""
        if future.cancel():
            return NeverStarted(self.name, self.limit)
        return MissedDeadline()

    def close(self) -> None:
        """Refuse new calls and let idle threads end; running calls finish on their own."""
        with self._lock:
            self._closed = True
            unwoken = self._idle - self._tokens
            self._tokens = self._idle
        for _ in range(unwoken):
            self._wakeups.put(None)

    def _work(self) -> None:
        while True:
            task: Future[Any] | Call[Any] | None
            with self._lock:
                if self._waiting:
                    task, fn = self._waiting.popitem(last=False)
                elif self._closed:
                    self._threads -= 1
                    return
                else:
                    self._idle += 1
                    task = None
            if task is None:
                if not self._wait_for_work():
                    return
                continue
            if not task.set_running_or_notify_cancel():
                continue
            try:
                task.set_result(fn())
            except BaseException as exc:
                task.set_exception(exc)
            del task, fn  # do not keep the last call alive while idle

    def _wait_for_work(self) -> bool:
        """Block until woken; False when this idle thread should end instead."""
        while True:
            try:
                self._wakeups.get(timeout=IDLE_SECONDS)
            except queue.Empty:
                with self._lock:
                    if self._tokens < self._idle:  # no token is meant for this thread: end it
                        self._idle -= 1
                        self._threads -= 1
                        return False
                continue  # a token was put meanwhile: take it
            with self._lock:
                self._idle -= 1
                self._tokens -= 1
            return True

    def _withdraw(self, future: Future[Any]) -> None:
        if future.cancelled():
            with self._lock:
                self._waiting.pop(future, None)


class Countdown:
    """Released when ``count`` calls have ended: the caller of a batch wakes once, when the last
    one ends, instead of once per call it finds unfinished."""

    __slots__ = ("_guard", "_left", "_released")

    def __init__(self, count: int):
        self._left = count
        self._guard = threading.Lock()
        self._released = threading.Lock()
        if count:
            self._released.acquire()

    def count_down(self) -> None:
        with self._guard:
            self._left -= 1
            last = self._left == 0
        if last:
            self._released.release()

    def wait(self, timeout: float | None) -> bool:
        """Whether every call ended within ``timeout`` seconds (None: no limit)."""
        return self._released.acquire(timeout=-1 if timeout is None else timeout)


class Call(Generic[T]):
    """A queued call read by one waiter after its ``Countdown``: what a ``Future`` offers without
    its condition variable, callbacks and cancellation (``Workers.withdraw`` takes a call back)."""

    __slots__ = ("_countdown", "done", "error", "value")

    def __init__(self, countdown: Countdown):
        self._countdown = countdown
        self.done = False
        self.value: T | None = None
        self.error: BaseException | None = None

    def result(self) -> T:
        """The call's value, or its exception raised; only once ``done``."""
        if self.error is not None:
            raise self.error
        return self.value  # type: ignore[return-value]

    def set_running_or_notify_cancel(self) -> bool:
        return True  # a withdrawn call is no longer queued, so a thread never takes it

    def set_result(self, value: T) -> None:
        self.value = value
        self.done = True
        self._countdown.count_down()

    def set_exception(self, error: BaseException) -> None:
        self.error = error
        self.done = True
        self._countdown.count_down()


class MissedDeadline(TimeoutError):
    """Our deadline passed (as opposed to a ``TimeoutError`` raised by the code we called)."""


class NeverStarted(MissedDeadline):
    """A call that timed out while every thread of its retriever was busy with earlier calls."""

    def __init__(self, name: str, limit: int):
        super().__init__(f"waiting for one of the {limit} threads of {name!r}, all busy with earlier calls")


def timeout_reason(timeout: float, error: BaseException) -> str:
    """What a call that missed its deadline reports; one that never got a thread says so."""
    waited = f" {error}" if isinstance(error, NeverStarted) else ""
    return f"timed out after {timeout:g} s{waited}"


async def within(awaitable: Awaitable[T], timeout: float | None) -> T:
    """``await awaitable``, at most ``timeout`` seconds (None: no limit), else ``MissedDeadline``."""
    if timeout is None:
        return await awaitable
    if sys.version_info >= (3, 11):  # asyncio.timeout: no extra task, unlike wait_for
        try:
            async with asyncio.timeout(timeout) as scope:
                return await awaitable
        except TimeoutError:
            if scope.expired():
                raise MissedDeadline from None
            raise
    begin = time.monotonic()
    try:
        return await asyncio.wait_for(awaitable, timeout)
    except asyncio.TimeoutError:  # wait_for's own, unless the awaitable raised one before the time
        if time.monotonic() - begin >= timeout:
            raise MissedDeadline from None
        raise


def _settle_on_loop(loop: asyncio.AbstractEventLoop, waiter: asyncio.Future[T], done: Future[T]) -> None:
    def settle() -> None:
        if waiter.done():  # the caller stopped waiting
            return
        if done.cancelled():
            waiter.cancel()
        elif (error := done.exception()) is not None:
            waiter.set_exception(error)
        else:
            waiter.set_result(done.result())

    with contextlib.suppress(RuntimeError):  # the loop is closed: nobody is waiting any more
        loop.call_soon_threadsafe(settle)
