"""A retriever's output, read into checked hits inside its own branch.

A retriever may return a list, a tuple or any other iterable (e.g. a generator paging through a
backend). Whatever it returns is consumed and checked within its branch's deadline, and anything but
a list or a tuple is consumed in the retriever's own thread (a generator's ``next`` may block), so a
retriever that returns something slow, endless or malformed fails only its own branches, named:

- every hit has an ``id``: a str that encodes as UTF-8, or an int (read as its decimal string);
- its ``score``, if it has one, is a finite real number; its ``payload``, if set, a mapping.
"""

from __future__ import annotations

import math
import numbers
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from fanfuse.multiquery.workers import MissedDeadline

__all__ = ["CheckedHits", "consumed_in_thread", "read_hits"]

_MISSING = object()


@dataclass(slots=True)
class CheckedHits:
    hits: list[Any]  # as the retriever returned them (payloads are taken from these)
    ids: list[str]  # each hit's id as fusion sees it


def consumed_in_thread(result: object) -> bool:
    """Whether reading ``result`` may block, so that it must not happen on the event loop."""
    return not isinstance(result, (list, tuple))


def read_hits(result: object, name: str, deadline: float | None) -> CheckedHits:
    """``result`` read (by ``time.monotonic`` ``deadline``, else ``MissedDeadline``) and checked."""
    if isinstance(result, (list, tuple)):
        hits = list(result)
    elif isinstance(result, (str, bytes, Mapping)) or not isinstance(result, Iterable):
        raise TypeError(f"retriever {name!r} returned {type(result).__name__}, expected a list of Hit")
    else:
        hits = _drained(result, deadline)
    return CheckedHits(hits, _checked_ids(hits, name))


def _drained(items: Iterable[Any], deadline: float | None) -> list[Any]:
    if deadline is None:
        return list(items)
    hits = []
    for item in items:
        hits.append(item)
        if time.monotonic() > deadline:  # an endless generator stops here, freeing its thread
            raise MissedDeadline
    return hits


def _checked_ids(hits: list[Any], name: str) -> list[str]:
    """Each hit's id as a str, after checking the hit. A search reads 100s of hits, so the common
    case (a str id in ASCII, a float score, a dict or no payload) is one line of cheap tests."""
    ids = []
    for position, hit in enumerate(hits, 1):
        doc_id = getattr(hit, "id", _MISSING)
        score = getattr(hit, "score", _MISSING)
        payload = getattr(hit, "payload", None)
        # score - score is 0.0 exactly for a finite float (NaN for NaN and the infinities)
        if not (
            type(doc_id) is str
            and doc_id.isascii()
            and type(score) is float
            and score - score == 0.0
            and (payload is None or type(payload) is dict)
        ):
            doc_id = _checked_hit(hit, doc_id, score, payload, name, position)
        ids.append(doc_id)
    return ids


def _checked_hit(hit: Any, doc_id: Any, score: Any, payload: Any, name: str, position: int) -> str:
    checked: str = doc_id
    if type(doc_id) is not str or not doc_id.isascii():
        checked = _checked_id(doc_id, hit, name, position)
    if type(score) is not float or not math.isfinite(score):
        _check_score(score, name, position)
    if payload is not None and not isinstance(payload, Mapping):
        raise TypeError(
            f"retriever {name!r} hit {position} has a payload of type {type(payload).__name__}; "
            "payloads must be mappings"
        )
    return checked


def _checked_id(doc_id: object, hit: object, name: str, position: int) -> str:
    if doc_id is _MISSING:
        raise TypeError(
            f"retriever {name!r} returned {type(hit).__name__} without a str id (hit {position}); "
            "return fanfuse.retrievers.Hit objects"
        )
    if isinstance(doc_id, str):
        try:
            doc_id.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise ValueError(
                f"retriever {name!r} hit {position} has an id that is not valid Unicode "
                f"({exc.reason} at index {exc.start}); ids must encode as UTF-8"
            ) from None
        return doc_id
    if isinstance(doc_id, numbers.Integral) and not isinstance(doc_id, bool):
        return str(int(doc_id))
    raise TypeError(
        f"retriever {name!r} hit {position} has an id of type {type(doc_id).__name__}; ids must be str or int"
    )


def _check_score(score: object, name: str, position: int) -> None:
    if score is _MISSING:
        return
    if not isinstance(score, numbers.Real) or isinstance(score, bool):
        raise TypeError(
            f"retriever {name!r} hit {position} has a score of type {type(score).__name__}; "
            "scores must be finite numbers"
        )
    if not math.isfinite(score):
        raise ValueError(
            f"retriever {name!r} hit {position} has score {float(score)!r}; scores must be finite numbers"
        )
