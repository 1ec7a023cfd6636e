"""JSON in and out: one line of a JSONL input read (``json_line``: the corpus and a conversation's
lines), and a search result (or any of its reports, dataclasses) as JSON data: what ``fanfuse
search --json`` prints and what the HTTP service answers."""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Mapping
from typing import Any

from fanfuse._core import FusionError


def json_line(text: str, where: str, expected: str) -> Any:
    """One line of a JSONL input as its value; a line that is not JSON, or nested too deeply for
    Python's parser to read, is a FusionError naming `where` (file:line) and what a line holds."""
    try:
        return json.loads(text)
    except RecursionError:
        problem = "nested too deeply to read"
    except ValueError as error:  # JSONDecodeError, and an integer of more digits than Python converts
        problem = f"not valid JSON ({getattr(error, 'msg', error)})"
    raise FusionError(f"{where}: {problem}; expected {expected}")


def as_data(report: Any) -> dict[str, Any]:
    """A result (or one of its reports, a dataclass) as JSON data. Field by field as
    `dataclasses.asdict`, without its deep copy of every payload (a search's whole answer took 2 ms
    that way, the HTTP service's largest cost per request after the search itself); non-finite floats
    become None."""
    data: dict[str, Any] = _plain(report)
    return data


_FIELDS: dict[type, tuple[str, ...]] = {}


def _plain(value: Any) -> Any:
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, (str, int, type(None))):
        return value
    if isinstance(value, Mapping):
        return {key: _plain(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(item) for item in value]
    kind = type(value)
    names = _FIELDS.get(kind)
    if names is None:
        if not dataclasses.is_dataclass(kind):
            return value  # written by the JSON encoder's default (str)
        names = _FIELDS[kind] = tuple(f.name for f in dataclasses.fields(kind))
    return {name: _plain(getattr(value, name)) for name in names}
