"""A refusal of the weights counts them against what the entry point fuses, in its own word: lists
for ``rrf``/``rrf_batch`` (their argument is lists), runs for ``fuse``/``fuse_batch``/``fuse_runs``.
The entry points are every function of ``fanfuse._core`` that takes fusion options over data."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

import fanfuse
import fanfuse._core as core
import pytest

TWO = [["a", "b"], ["b", "c"]]
CALLS: dict[str, tuple[str, Callable[[], Any]]] = {
    "rrf": ("list", lambda: fanfuse.rrf(TWO, weights=[1.0])),
    "fuse": ("run", lambda: fanfuse.fuse(TWO, weights=[1.0])),
    "rrf_batch": ("list", lambda: fanfuse.rrf_batch([TWO], weights=[1.0])),
    "fuse_batch": ("run", lambda: fanfuse.fuse_batch([TWO], weights=[1.0])),
    "fuse_runs": (
        "run",
        lambda: fanfuse.fuse_runs(
            [fanfuse.Run.from_columns(["q"], [d], [1.0], name=d) for d in "ab"], weights=[1.0]
        ),
    ),
}


def test_every_entry_point_over_lists_or_runs_is_called_here() -> None:
    takes = {
        name
        for name, fn in vars(core).items()
        if callable(fn)
        and not name.startswith("_")
        and inspect.isbuiltin(fn)
        and next(iter(inspect.signature(fn).parameters), None) in ("lists", "runs", "queries")
        and "options" in inspect.signature(fn).parameters
    }
    assert takes == set(CALLS)


@pytest.mark.parametrize("name", sorted(CALLS))
def test_the_weights_are_counted_in_the_entry_points_word(name: str) -> None:
    noun, call = CALLS[name]
    with pytest.raises(fanfuse.FusionError) as refused:
        call()
    message = str(refused.value)
    assert f"one weight per {noun}" in message
    assert f"2 {noun}s" in message
