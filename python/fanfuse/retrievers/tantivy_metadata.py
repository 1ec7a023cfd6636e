"""How the embedded index stores a document's metadata: as its JSON text, given back as it was given.

Not a Tantivy JSON field: that reads a string written as an RFC 3339 date as a date and gives back a
datetime in UTC, not the string. Indexes built before the JSON text hold the metadata in such a field
(``json_field``); their payloads give those dates as RFC 3339 text (``json_field_metadata``). Filters
read neither: they look up the filter terms (``filters.index_terms``). The manifest lists the keys of
the documents' metadata (``metadata_keys``), so that a filter on a key none has is refused.
"""

from __future__ import annotations

import datetime
import json
from collections.abc import Mapping
from typing import Any

import tantivy

from fanfuse.errors import InvalidIndex
from fanfuse.retrievers.index_versions import MANIFEST, REBUILD

METADATA_FIELD = "metadata_json"
# The filter tokens of each document's metadata (`filters.index_terms`): a filter is term lookups.
FILTER_FIELD = "filter_terms"
# The manifest's list of the documents' metadata keys, and the most it lists (beyond, none is listed).
METADATA_KEYS = "metadata_keys"
MOST_KEYS_LISTED = 10_000
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


def listed_keys(keys: set[str]) -> dict[str, Any]:
    """What the manifest says of the documents' metadata keys: their list, unless there are too many."""
    return {METADATA_KEYS: sorted(keys)} if len(keys) <= MOST_KEYS_LISTED else {}


def metadata_keys(manifest: Mapping[str, Any], directory: Any) -> frozenset[str] | None:
    """The keys the manifest of the index in ``directory`` lists; None where it lists none (an index
    built before it did, or with more keys than it lists)."""
    listed = manifest.get(METADATA_KEYS)
    if listed is None:
        return None
    if not isinstance(listed, list) or not all(isinstance(key, str) for key in listed):
        raise InvalidIndex(f"{directory}/{MANIFEST}: corrupt manifest ({METADATA_KEYS!r}); {REBUILD}")
    return frozenset(listed)
