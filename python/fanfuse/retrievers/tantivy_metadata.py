"""How the embedded index stores a document's metadata: as its JSON text, given back as it was given.

Not a Tantivy JSON field: that reads a string written as an RFC 3339 date as a date and gives back a
datetime in UTC, not the string. Indexes built before the JSON text hold the metadata in such a field
(``json_field``); their payloads give those dates as RFC 3339 text (``json_field_metadata``). Filters
read neither: they look up the filter terms (``filters.index_terms``).
"""

from __future__ import annotations

import datetime
import json
from collections.abc import Mapping
from typing import Any

import tantivy

METADATA_FIELD = "metadata_json"
# Where indexes built before METADATA_FIELD hold the metadata.
_JSON_FIELD = "metadata"
# One encoder for every document (json.dumps with an option builds a new one per call). NaN is no JSON.
_ENCODER = json.JSONEncoder(allow_nan=False)


def metadata_json(metadata: Mapping[str, Any]) -> bytes:
    """What METADATA_FIELD stores. TypeError or ValueError for a value JSON cannot hold."""
    return _ENCODER.encode(metadata).encode()


def stored_metadata(stored: tantivy.Document) -> Mapping[str, Any]:
    text = stored.get_first(METADATA_FIELD)
    metadata: Mapping[str, Any] = json.loads(text) if text else {}
    return metadata


def json_field(stored: tantivy.Document) -> Mapping[str, Any]:
    """The metadata of an index built before METADATA_FIELD, as Tantivy gives it back."""
    metadata: Mapping[str, Any] = stored.get_first(_JSON_FIELD) or {}
    return metadata


def json_field_metadata(stored: tantivy.Document) -> Mapping[str, Any]:
    """``json_field`` with its dates as RFC 3339 text (UTC, as Tantivy keeps them; a string written with
    another offset or precision is not recovered)."""
    return {key: _undated(value) for key, value in json_field(stored).items()}


def _undated(value: Any) -> Any:
    if isinstance(value, datetime.datetime):
        return value.isoformat().replace("+00:00", "Z")
    if isinstance(value, list):
        return [_undated(item) for item in value]
    if isinstance(value, dict):
        return {key: _undated(item) for key, item in value.items()}
    return value
