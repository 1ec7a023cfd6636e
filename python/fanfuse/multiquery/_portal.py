"""Running a coroutine to completion from synchronous code, from any thread.

``MultiQueryRetriever.search`` is sync but the fan-out is asyncio. Creating an event loop per call
(``asyncio.run``) costs more than the orchestration itself, and fails inside a thread that already runs
a loop. So one daemon thread per process runs a loop for all sync callers: a call submits its coroutine
there and blocks on the result. Its thread can be a thread with a running loop of its own, and many
threads can call at once (the coroutines interleave on the portal loop; sync retrievers run in pools).
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Coroutine
from typing import Any, TypeVar

T = TypeVar("T")

_lock = threading.Lock()
_loop: asyncio.AbstractEventLoop | None = None
_thread: threading.Thread | None = None


def _portal_loop() -> asyncio.AbstractEventLoop:
    global _loop, _thread
    with _lock:
        if _loop is None or _thread is None or not _thread.is_alive():
            loop = asyncio.new_event_loop()
            thread = threading.Thread(target=loop.run_forever, name="fanfuse-portal", daemon=True)
            thread.start()
            _loop, _thread = loop, thread
        return _loop


def run_sync(coro: Coroutine[Any, Any, T]) -> T:
    """The coroutine's result, computed on the portal loop; the caller's thread blocks meanwhile."""
    if threading.current_thread() is _thread:
        # Called from code already running on the portal loop (an async retriever calling a sync
        # search): blocking here would deadlock, so use a private loop in a helper thread.
        return _run_in_new_thread(coro)
    future = asyncio.run_coroutine_threadsafe(coro, _portal_loop())
    try:
        return future.result()
    except BaseException:
        future.cancel()  # e.g. KeyboardInterrupt in the caller: stop the branches too
        raise


def _run_in_new_thread(coro: Coroutine[Any, Any, T]) -> T:
    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["value"] = asyncio.run(coro)
        except BaseException as exc:
            box["error"] = exc

    thread = threading.Thread(target=target, name="fanfuse-nested-search")
    thread.start()
    thread.join()
    if "error" in box:
        raise box["error"]
    value: T = box["value"]
    return value
