"""Workers: at most ``limit`` threads per retriever, calls withdrawn when their caller gives up."""

from __future__ import annotations

import asyncio
import threading
from concurrent.futures import TimeoutError as FutureTimeout

import pytest
from fanfuse.multiquery.workers import Countdown, MissedDeadline, NeverStarted, Workers


class Gate:
    """Calls that say they started, then block until ``release`` is set."""

    def __init__(self) -> None:
        self.release, self.started = threading.Event(), threading.Semaphore(0)
        self.ran: list[str] = []

    def blocking(self, label: str) -> str:
        self.ran.append(label)
        self.started.release()
        self.release.wait()
        return label


def test_calls_beyond_the_limit_wait_and_a_withdrawn_one_never_runs() -> None:
    gate = Gate()
    workers = Workers("two", 2)

    first, second = workers.submit(lambda: gate.blocking("a")), workers.submit(lambda: gate.blocking("b"))
    assert gate.started.acquire(timeout=10) and gate.started.acquire(timeout=10)  # both threads are busy
    withdrawn = workers.submit(lambda: gate.blocking("never"))
    queued = workers.submit(lambda: gate.blocking("c"))
    with pytest.raises(FutureTimeout):
        withdrawn.result(timeout=0.05)
    assert isinstance(workers.timed_out(withdrawn), NeverStarted)
    assert len([t for t in threading.enumerate() if t.name == "fanfuse-two"]) == 2
    gate.release.set()
    assert [f.result(timeout=10) for f in (first, second, queued)] == ["a", "b", "c"]
    assert sorted(gate.ran) == ["a", "b", "c"]
    workers.close()


def test_an_async_call_that_misses_its_deadline_says_whether_it_ever_started() -> None:
    release = threading.Event()
    workers = Workers("one", 1)

    async def scenario() -> tuple[BaseException, BaseException]:
        running = asyncio.create_task(workers.call(release.wait, 0.2))
        await asyncio.sleep(0)  # let it take the only thread first
        waiting = asyncio.create_task(workers.call(release.wait, 0.2))
        results = await asyncio.gather(running, waiting, return_exceptions=True)
        return results[0], results[1]  # type: ignore[return-value]

    try:
        ran, never = asyncio.run(scenario())
    finally:
        release.set()
    assert type(ran) is MissedDeadline and isinstance(never, NeverStarted)
    assert "waiting for one of the 1 threads of 'one'" in str(never)


def test_close_ends_idle_threads_and_refuses_new_calls() -> None:
    workers = Workers("closing", 3)
    assert [workers.submit(lambda i=i: i).result(timeout=10) for i in range(3)] == [0, 1, 2]
    threads = [t for t in threading.enumerate() if t.name == "fanfuse-closing"]
    workers.close()
    for thread in threads:
        thread.join(timeout=10)
        assert not thread.is_alive()
    with pytest.raises(RuntimeError, match="closed"):
        workers.submit(lambda: 0)


def test_a_batch_wakes_its_caller_once_and_a_withdrawn_call_never_runs() -> None:
    gate = Gate()
    workers = Workers("batch", 1)

    countdown = Countdown(2)
    running = workers.start(lambda: gate.blocking("a"), countdown)
    assert gate.started.acquire(timeout=10)  # the only thread is busy
    queued = workers.start(lambda: gate.blocking("never"), countdown)
    assert not countdown.wait(0.05)
    assert isinstance(workers.withdraw(queued), NeverStarted)
    assert type(workers.withdraw(running)) is MissedDeadline  # running: it cannot be taken back
    gate.release.set()
    finished = Countdown(2)
    calls = [workers.start(lambda: "b", finished), workers.start(lambda: 1 / 0, finished)]
    assert finished.wait(10) and all(call.done for call in calls)
    assert calls[0].result() == "b"
    with pytest.raises(ZeroDivisionError):
        calls[1].result()
    assert gate.ran == ["a"]
    workers.close()
