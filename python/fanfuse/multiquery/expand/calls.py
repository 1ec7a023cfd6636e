"""What every expander's ``expand`` and ``aexpand`` do around their own code (``Expander`` wraps each
one a subclass writes): the ``max_variants`` keyword is checked, and ``strategy``, ``history`` and
``filter`` are left out for one written without them, so an expander of one's own needs none of
them; what it returns is checked to be an expansion, so that a wrong answer (a list of str) is
refused where it is returned, naming the expander and what it must return, not met later as another
object's missing attribute."""

from __future__ import annotations

import contextvars
import functools
import inspect
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from fanfuse.multiquery.config import check_max_variants
from fanfuse.multiquery.workers import Workers

T = TypeVar("T")

#: What a search gives an expander besides the question and the budget, each only where it is taken.
OPTIONAL_KEYWORDS = ("strategy", "history", "filter")


def budget_checked(
    expand: Callable[..., Any], method_name: str, wrong_answer: Callable[[object], str | None]
) -> Callable[..., Any]:
    """An expander's ``expand`` (or ``aexpand``, the ``method_name``) with its ``max_variants`` keyword
    checked first (None: the expander's own limit), ``strategy``, ``history`` and ``filter`` left out
    for one written without them, and what it returns refused when ``wrong_answer`` says what it is
    instead."""
    unread = tuple(name for name in OPTIONAL_KEYWORDS if not takes_keyword(expand, name))
    if inspect.iscoroutinefunction(expand):

        @functools.wraps(expand)
        async def checked_async(self: object, query: str, *args: Any, **kwargs: Any) -> Any:
            _check_call(kwargs, unread)
            return _answer(self, method_name, await expand(self, query, *args, **kwargs), wrong_answer)

        return checked_async

    @functools.wraps(expand)
    def checked(self: object, query: str, *args: Any, **kwargs: Any) -> Any:
        _check_call(kwargs, unread)
        return _answer(self, method_name, expand(self, query, *args, **kwargs), wrong_answer)

    return checked


def takes_keyword(function: Callable[..., Any], name: str) -> bool:
    """Whether ``function`` takes the keyword ``name`` (by name, or through ``**kwargs``)."""
    parameters = inspect.signature(function).parameters.values()
    return any(p.name == name or p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters)


def _check_call(kwargs: dict[str, Any], unread: tuple[str, ...]) -> None:
    budget = kwargs.get("max_variants")
    if budget is not None:
        check_max_variants(budget)
    for name in unread:
        kwargs.pop(name, None)


def _answer(
    expander: object, method_name: str, result: object, wrong: Callable[[object], str | None]
) -> object:
    got = wrong(result)
    if got is None:
        return result
    raise TypeError(
        f"{type(expander).__name__}.{method_name} returned {got}: an expander returns an Expansion of "
        "Variants, the original query first (a function that returns a list of str goes in CallableExpander)"
    )


#: The threads of blocking expanders' sync calls under ``asearch`` (``Expander.blocking``): their own,
#: so that an expander stuck in its model holds at most these, never the event loop's executor, and a
#: call whose search stopped waiting is withdrawn before it starts.
EXPANDER_THREADS = Workers("expander", 8)


def in_context(fn: Callable[..., T], *args: Any, **kwargs: Any) -> Callable[[], T]:
    """``fn(*args, **kwargs)`` to run in another thread with the caller's context variables (a
    request id, a trace), as ``asyncio.to_thread`` runs a call."""
    return functools.partial(contextvars.copy_context().run, fn, *args, **kwargs)


async def calling_expand(self: Any, query: str, **options: Any) -> Any:
    """The inherited ``aexpand``, with every keyword passed on: ``expand`` called directly for an
    expander that does not block, else in ``EXPANDER_THREADS``."""
    if not self.blocking:
        return self.expand(query, **options)
    return await EXPANDER_THREADS.call(in_context(self.expand, query, **options), None)


def given_to(expander: Any, filter: Mapping[str, Any] | None) -> dict[str, Any]:
    """What a search gives an expander besides the question: its filter, where the expander reads one."""
    return {"filter": filter} if filter is not None and expander.reads_filter else {}
