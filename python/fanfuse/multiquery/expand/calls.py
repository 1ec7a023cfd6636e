"""What every expander's ``expand`` and ``aexpand`` do before their own code (``Expander`` wraps each
one a subclass writes): the ``max_variants`` keyword is checked, and ``history`` is left out for one
written without it, so an expander of one's own needs neither."""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Any

from fanfuse.multiquery.config import check_max_variants


def budget_checked(expand: Callable[..., Any]) -> Callable[..., Any]:
    """An expander's ``expand`` (or ``aexpand``) with its ``max_variants`` keyword checked first
    (None: the expander's own limit), and ``history`` left out for one written without it."""
    reads_history = takes_keyword(expand, "history")
    if inspect.iscoroutinefunction(expand):

        @functools.wraps(expand)
        async def checked_async(self: object, query: str, *args: Any, **kwargs: Any) -> Any:
            _check_call(kwargs, reads_history)
            return await expand(self, query, *args, **kwargs)

        return checked_async

    @functools.wraps(expand)
    def checked(self: object, query: str, *args: Any, **kwargs: Any) -> Any:
        _check_call(kwargs, reads_history)
        return expand(self, query, *args, **kwargs)

    return checked


def takes_keyword(function: Callable[..., Any], name: str) -> bool:
    """Whether ``function`` takes the keyword ``name`` (by name, or through ``**kwargs``)."""
    parameters = inspect.signature(function).parameters.values()
    return any(p.name == name or p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters)


def _check_call(kwargs: dict[str, Any], reads_history: bool) -> None:
    budget = kwargs.get("max_variants")
    if budget is not None:
        check_max_variants(budget)
    if not reads_history:
        kwargs.pop("history", None)
