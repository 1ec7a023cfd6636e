"""The retrievers of a ``MultiQueryRetriever``, checked and named: a dict's keys, else each one's
``name`` or class.

The names label branches, provenance and ``retriever_weights``, so they must be unique.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from fanfuse.errors import InvalidSetting
from fanfuse.multiquery.fanout import is_async_retriever

__all__ = ["NamedRetriever", "named_retrievers"]


@dataclass(frozen=True, slots=True)
class NamedRetriever:
    name: str
    retriever: Any
    is_async: bool


def named_retrievers(retrievers: Any) -> list[NamedRetriever]:
    """A retriever, a list of them, or a dict name -> retriever, checked and named."""
    if isinstance(retrievers, Mapping):
        items = list(retrievers.items())
        for name, _ in items:
            if not isinstance(name, str) or not name:
                raise TypeError(f"retriever names must be non-empty str (got {name!r})")
    elif hasattr(retrievers, "search"):
        items = _default_names([retrievers])
    elif isinstance(retrievers, Iterable) and not isinstance(retrievers, (str, bytes)):
        items = _default_names(list(retrievers))
    else:
        raise TypeError(
            "retrievers must be a retriever, a list of retrievers or a dict name -> retriever "
            f"(got {type(retrievers).__name__})"
        )
    if not items:
        raise InvalidSetting("retrievers is empty: pass at least one retriever")
    named = []
    for name, retriever in items:
        if not callable(getattr(retriever, "search", None)):
            raise TypeError(
                f"retriever {name!r} ({type(retriever).__name__}) has no search(query, k, filter=None) method"
            )
        named.append(NamedRetriever(name, retriever, is_async_retriever(retriever)))
    return named


def _default_names(retrievers: list[Any]) -> list[tuple[str, Any]]:
    """``name`` attribute or class name; a repeated name gets ``-2``, ``-3``, ..."""
    items: list[tuple[str, Any]] = []
    seen: dict[str, int] = {}
    for retriever in retrievers:
        name = getattr(retriever, "name", None)
        base = name if isinstance(name, str) and name else type(retriever).__name__
        seen[base] = seen.get(base, 0) + 1
        items.append((base if seen[base] == 1 else f"{base}-{seen[base]}", retriever))
    return items
