"""A search result as JSON data, and the shape of that JSON: what `fanfuse search --json` prints,
what the HTTP service answers, and what its OpenAPI schema is built from (`fanfuse.service.schema`).

The JSON of a result type (the dataclasses of `fanfuse.multiquery.diagnostics`) is an object of its
fields by their names, in their order, then the properties `PROPERTIES` lists; each field's meaning
is its `metadata["description"]`, a property's its docstring. A float that is not finite (NaN,
infinity) is written as null, so every float of a result is a number or null in JSON. A payload is
written as the retriever gave it (a value JSON has no type for as its str, by the encoder).
"""

from __future__ import annotations

import dataclasses
import inspect
import math
import typing
from collections.abc import Mapping
from typing import Any, NamedTuple

from fanfuse.multiquery.diagnostics import Diagnostics

__all__ = ["PROPERTIES", "JsonField", "as_data", "json_fields"]

# The read-only properties a result type's JSON holds after its fields: what a reader of the JSON
# cannot work out from the fields as easily as the library can.
PROPERTIES: dict[type, tuple[str, ...]] = {Diagnostics: ("degraded",)}


class JsonField(NamedTuple):
    """One member of a result type's JSON: its name, its Python type and what it holds."""

    name: str
    kind: Any
    description: str


def json_fields(kind: type) -> tuple[JsonField, ...]:
    """The members of the JSON of the dataclass `kind`, in the order `as_data` writes them."""
    hints = typing.get_type_hints(kind)
    members = [
        JsonField(f.name, hints[f.name], f.metadata.get("description", "")) for f in dataclasses.fields(kind)
    ]
    for name in PROPERTIES.get(kind, ()):
        read = getattr(kind, name).fget
        members.append(JsonField(name, typing.get_type_hints(read)["return"], inspect.getdoc(read) or ""))
    assert [m.name for m in members] == list(_names(kind)), kind  # the shape is what as_data writes
    return tuple(members)


def as_data(report: Any) -> dict[str, Any]:
    """A result (or one of its reports, a dataclass) as JSON data. Field by field as
    `dataclasses.asdict`, without its deep copy of every payload (the HTTP service's largest cost per
    request after the search itself), plus the `PROPERTIES`; non-finite floats become None."""
    data: dict[str, Any] = _plain(report)
    return data


_NAMES: dict[type, tuple[str, ...]] = {}


def _names(kind: type) -> tuple[str, ...]:
    names = _NAMES.get(kind)
    if names is None:
        fields = tuple(f.name for f in dataclasses.fields(kind))
        names = _NAMES[kind] = fields + PROPERTIES.get(kind, ())
    return names


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
    if kind not in _NAMES and not dataclasses.is_dataclass(kind):
        return value  # written by the JSON encoder's default (str)
    return {name: _plain(getattr(value, name)) for name in _names(kind)}
