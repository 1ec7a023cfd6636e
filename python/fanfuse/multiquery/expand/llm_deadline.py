"""One deadline for a call to a chat model, whoever makes the call.

A blocking call (the HTTP exchange of ``llm_http.py``, a user's ``openai.OpenAI`` client, a LangChain or
LlamaIndex model) runs in a daemon thread of its own and the caller waits at most until the deadline:
neither a sync caller nor ``asyncio.run`` (which joins its default executor's threads when it ends,
so no executor is used) waits for a peer that stopped answering. A coroutine (``openai.AsyncOpenAI``)
is awaited until the deadline and cancelled there. Either way the deadline passing is a
``TimeoutError``. ``outcome`` / ``awaited`` turn a call's failure (an exception, a Rust panic) into a
value, so it can be handed on and described where the rest of the work runs; a signal, an exit or a
cancellation goes on up.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import threading
import time
from collections.abc import Awaitable, Callable
from typing import TypeVar

from fanfuse._panics import is_failure

__all__ = ["await_by", "awaited", "call_by", "call_by_async", "outcome", "remaining"]

T = TypeVar("T")


def remaining(deadline: float) -> float:
    """The seconds left before ``deadline`` (a ``time.monotonic()`` value); past it, ``TimeoutError``."""
    left = deadline - time.monotonic()
    if left <= 0:
        raise TimeoutError
    return left


def call_by(call: Callable[[], T], deadline: float) -> T:
    """``call()``'s result, or ``TimeoutError`` once the deadline has passed."""
    done: concurrent.futures.Future[T] = concurrent.futures.Future()

    def settle(result: T | None, error: BaseException | None) -> None:
        if error is not None:
            done.set_exception(error)
        else:
            done.set_result(result)  # type: ignore[arg-type]

    _start(call, settle)
    try:
        return done.result(timeout=max(0.0, deadline - time.monotonic()))
    except concurrent.futures.TimeoutError:  # a class of its own on Python 3.10
        raise TimeoutError from None


async def call_by_async(call: Callable[[], T], deadline: float) -> T:
    """``call_by`` for async callers: the event loop waits, no executor thread is involved."""
    loop = asyncio.get_running_loop()
    done: asyncio.Future[T] = loop.create_future()

    def on_loop(result: T | None, error: BaseException | None) -> None:
        if done.done():  # the caller stopped waiting (deadline or cancellation)
            return
        if error is not None:
            done.set_exception(error)
        else:
            done.set_result(result)  # type: ignore[arg-type]

    def settle(result: T | None, error: BaseException | None) -> None:
        with contextlib.suppress(RuntimeError):  # the loop is closed: nobody is waiting any more
            loop.call_soon_threadsafe(on_loop, result, error)

    _start(call, settle)
    return await _bounded(done, deadline)


async def await_by(awaitable: Awaitable[T], deadline: float) -> T:
    """The awaitable's result; cancelled at the deadline (``TimeoutError``)."""
    return await _bounded(awaitable, deadline)


async def _bounded(awaitable: Awaitable[T], deadline: float) -> T:
    try:
        return await asyncio.wait_for(awaitable, max(0.0, deadline - time.monotonic()))
    except asyncio.TimeoutError:  # a class of its own on Python 3.10
        raise TimeoutError from None


def outcome(call: Callable[[], str]) -> str | BaseException:
    """What ``call`` returned, or the failure it raised (a signal, an exit, a cancellation goes on up)."""
    try:
        return call()
    except BaseException as exc:
        if not is_failure(exc):
            raise
        return exc


async def awaited(reply: Awaitable[str]) -> str | BaseException:
    """``outcome`` for an awaitable."""
    try:
        result: str = await reply
    except BaseException as exc:
        if not is_failure(exc):
            raise
        return exc
    return result


def _start(call: Callable[[], T], settle: Callable[[T | None, BaseException | None], None]) -> None:
    def run() -> None:
        try:
            result = call()
        except BaseException as exc:
            settle(None, exc)
        else:
            settle(result, None)

    threading.Thread(target=run, name="fanfuse-llm", daemon=True).start()
