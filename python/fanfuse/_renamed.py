"""Old spellings of public modules, names and keywords: each refused with a message naming the new one.

One table, read two ways: importing an old path (``import fanfuse.runs``, ``from
fanfuse.retrievers.langchain import ...``, ``from fanfuse.tune import weight_grid``) raises
``ImportError`` from a finder placed last on ``sys.meta_path``, so it answers only for a module that
does not exist; an old attribute of a module (``fanfuse.runs``, ``fanfuse.multiquery.fusion.FusionSettings``)
raises ``AttributeError`` from that module's ``__getattr__`` (:func:`refuse`), which every module
holding an old name defines. From a module that is not a package, ``from ... import OLD`` gives
Python's own ``cannot import name`` (the import statement drops an ``AttributeError``'s message). An
old keyword of a public callable (``RENAMED_KEYWORDS``) raises ``TypeError`` from the wrapper
:func:`refusing_old_keywords` puts around it. A renamed spelling keeps no second path to the same
code: the message is the only thing it gives.
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable, Sequence
from importlib.machinery import ModuleSpec
from types import ModuleType
from typing import Any, NoReturn, TypeVar, cast

# Old dotted name -> where its content is now.
RENAMED: dict[str, str] = {
    "fanfuse.default_search": "fanfuse.index_retriever",
    "fanfuse.runs": (
        "fanfuse.run_scores (RunScores, score_run, with_means, DEFAULT_METRICS) "
        "and fanfuse.tables (to_pandas, from_frame)"
    ),
    "fanfuse.retrievers.langchain": "fanfuse.integrations.langchain",
    "fanfuse.retrievers.llamaindex": "fanfuse.integrations.llamaindex",
    "fanfuse.retrievers.haystack": "fanfuse.integrations.haystack",
    "fanfuse.retrievers.interop": "fanfuse.integrations.conversion",
    "fanfuse.multiquery.expand.named": "fanfuse.multiquery.retriever_names",
    "fanfuse.multiquery.expand.plain": "fanfuse.multiquery.plain_text",
    "fanfuse.json_data": "fanfuse.multiquery.result_json (as_data) and fanfuse.jsonl (json_line)",
    "fanfuse.multiquery.fusion.FusionSettings": "fanfuse.FusionOptions",
    "fanfuse.multiquery.planning.check_return_k": (
        "fanfuse.multiquery.planning.check_reranked, which takes the names given (rerank_window, return_k)"
    ),
    "fanfuse.paired_t_test": "fanfuse.paired_t, which returns (t, p-value)",
    "fanfuse.service.schema.SearchResponse": (
        "fanfuse.service.schema.response_model(fanfuse.multiquery.SearchResult), the model of the "
        "answer made from the result type"
    ),
    "fanfuse.tune.weight_grid": "fanfuse.tune.space.weight_grid",
}


# Options of a search over an index (`fanfuse search`'s flags, the service's fields) that are gone,
# each refused with why: none of them ever changed a search.
REMOVED_SEARCH_OPTIONS: dict[str, str] = {
    "duplicates": "an index holds each id once, so no list of its search repeats an id, and the policy "
    "for a repeated id never applied (fanfuse.fuse and MultiQueryRetriever over other retrievers take it)",
}

# Old keyword arguments of public callables: the callable's dotted name -> {old keyword: new}.
# A search's RRF constant, whose ``k`` read as how many hits, as a retriever's ``search(query, k)`` means.
RENAMED_SEARCH_OPTIONS: dict[str, str] = {"k": "rrf_k"}

RENAMED_KEYWORDS: dict[str, dict[str, str]] = {
    **dict.fromkeys(
        (
            "fanfuse.MultiQueryRetriever",
            "fanfuse.multiquery.MultiQueryRetriever",
            "fanfuse.multiquery.retriever.MultiQueryRetriever",
        ),
        RENAMED_SEARCH_OPTIONS,
    ),
    "fanfuse.multiquery.fusion.checked": {"weighted": "weights"},
    "fanfuse.report.Report.render": {"form": "format"},
    "fanfuse.service.page.page_router": {"renamed": "option_of_field"},
}

# Keywords that are gone, by callable: each answered with why where it is given. The request model's
# are answered by the service (422), as it answers every field a request may not send.
REMOVED_KEYWORDS: dict[str, dict[str, str]] = {"fanfuse.service.schema.SearchRequest": REMOVED_SEARCH_OPTIONS}

_Callable = TypeVar("_Callable", bound=Callable[..., Any])


def refusing_old_keywords(function: _Callable) -> _Callable:
    """`function`, refusing each of its old keywords (``RENAMED_KEYWORDS``) with a ``TypeError`` naming
    the new one, as Python refuses a keyword a function does not take."""
    # A class's __init__ is named as the class is called.
    called = function.__qualname__.removesuffix(".__init__")
    renamed = RENAMED_KEYWORDS[f"{function.__module__}.{called}"]

    @functools.wraps(function)
    def checked(*args: Any, **kwargs: Any) -> Any:
        if kwargs and not renamed.keys().isdisjoint(kwargs):  # no set built on a call's way through
            old = next(keyword for keyword in kwargs if keyword in renamed)
            raise TypeError(f"{called}() keyword {old} is renamed: use {renamed[old]}")
        return function(*args, **kwargs)

    return cast(_Callable, checked)


def message(old: str) -> str:
    return f"{old} is renamed: use {RENAMED[old]}"


def refuse(module: str, name: str) -> NoReturn:
    """What ``module.__getattr__(name)`` raises for a name it does not have: ``AttributeError``, whose
    message names the new spelling of an old one."""
    if f"{module}.{name}" in RENAMED:
        raise AttributeError(message(f"{module}.{name}"))
    raise AttributeError(f"module {module!r} has no attribute {name!r}")


def module_getattr(module: str) -> Callable[[str], NoReturn]:
    """The ``__getattr__`` of a module that holds old names: :func:`refuse` for that module."""
    return functools.partial(refuse, module)


class RenamedModules:
    """A meta path finder that refuses the old module paths of ``RENAMED``."""

    @staticmethod
    def find_spec(
        fullname: str, path: Sequence[str] | None = None, target: ModuleType | None = None
    ) -> ModuleSpec | None:
        if fullname in RENAMED:
            raise ImportError(message(fullname), name=fullname)
        return None


def install() -> None:
    """Puts the finder last on ``sys.meta_path`` (once): a module that exists is found before it."""
    if not any(isinstance(finder, RenamedModules) for finder in sys.meta_path):
        sys.meta_path.append(RenamedModules())
