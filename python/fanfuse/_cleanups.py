"""Cleanups that run however the process ends, short of SIGKILL.

`weakref.finalize` runs a cleanup when its owner is garbage-collected or at the interpreter's exit.
A `fanfuse` command stopped by SIGINT or SIGTERM skips that exit: it ends the process by the same
signal (so the shell sees 130 / 143), which runs no exit handler. So every such cleanup is made
here, and the one place commands end (`fanfuse.cli._common.run_command`) calls `run_cleanups()`
before it re-raises the signal. What a SIGKILL leaves behind, the next start removes (for the
index copies, `fanfuse.retrievers.index_copy`).
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable
from typing import Any

__all__ = ["cleanup_with", "run_cleanups"]

_pending: list[weakref.finalize[Any, Any]] = []
_lock = threading.Lock()


def cleanup_with(owner: object, function: Callable[..., object], *args: Any) -> Callable[[], object]:
    """Runs `function(*args)` once: when `owner` is garbage-collected, at the interpreter's exit, at
    `run_cleanups()`, or when the returned callable is called (an owner's `close()`), whichever
    comes first."""
    finalizer = weakref.finalize(owner, function, *args)
    with _lock:
        _pending[:] = [f for f in _pending if f.alive]
        _pending.append(finalizer)
    return finalizer


def run_cleanups() -> None:
    """Runs every pending cleanup now, the newest first (as the interpreter's exit would)."""
    with _lock:
        pending = _pending[::-1]
        _pending.clear()
    for finalizer in pending:
        finalizer()
