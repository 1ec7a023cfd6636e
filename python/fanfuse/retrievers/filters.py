"""What a metadata filter means, on every backend: one predicate, and the terms an index stores for it.

A filter maps metadata keys to the values wanted:

- `{"key": value}`: the document's metadata `key` equals `value`; where the metadata holds a list
  there, one of its items equals `value` (membership).
- `{"key": [v1, v2]}`: any of the values; a list in a filter always means any of.
- several keys: each must match. A document without the key does not match.
- values are str, bool, int or finite float, compared as JSON values: strings exactly (no case
  folding, no Unicode normalisation), numbers by value (1 equals 1.0, -0.0 equals 0; a float is the
  decimal it is written as, `repr`), and a bool equals only a bool (true is not 1).
- what metadata holds besides those (objects, null, lists inside lists) matches nothing.
- a key is a string that is not empty or only white space (the mistake `--filter " =x"` makes).

`conditions` is the one check of a filter, whichever way it came: a `filter=` argument in Python,
the service's `filter` field (its schema states the types; this decides) and `fanfuse search
--filter KEY=VALUE` (`filter_from_flags` reads the text, then this checks it).

A key no document has would match nothing: a retriever that knows its documents' keys
(`metadata_keys`: the embedded index, the dense retriever) refuses it (`check_known_keys`), naming
the key and the keys there are, as a search over retrievers that all know theirs does.

`matches` is that predicate; the dense retriever applies it, the adapters check every hit a framework
returns with it. Tantivy indexes `index_terms(metadata)` and looks up `Condition.tokens`, PostgreSQL
builds the same rules from jsonb containment (`postgres.py`); a property test checks all of them
against `matches` on generated metadata and filters (`tests/test_filter_semantics.py`).
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Collection, Hashable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from fanfuse.errors import InvalidFilter

__all__ = [
    "Condition",
    "FilterScalar",
    "check_known_keys",
    "conditions",
    "filter_from_flags",
    "filter_key",
    "index_terms",
    "is_fanfuse_filter",
    "known_metadata_keys",
    "matches",
    "shared_metadata_keys",
    "value_terms",
]

FilterScalar = str | int | float | bool
_SCALARS = (str, int, float, bool)
_MANY = (list, tuple, set, frozenset)
ACCEPTED = "a str, bool, int or finite float, or a non-empty list of them"
# How many of the documents' keys a refusal of an unknown one lists.
_LISTED_KEYS = 20
# Index tokens longer than this are stored as their hash: Tantivy drops tokens over 65,530 bytes.
_LONGEST_TOKEN = 200


@dataclass(frozen=True)
class Condition:
    """One key of a filter: the metadata key and the values any of which it may hold (their first
    spelling kept, duplicates by value dropped)."""

    key: str
    values: tuple[FilterScalar, ...]

    @property
    def terms(self) -> frozenset[str]:
        return frozenset(term for value in self.values if (term := _term(value)) is not None)

    @property
    def tokens(self) -> list[str]:
        """The index tokens of a document that matches: one per wanted value."""
        return sorted(_token(self.key, term) for term in self.terms)


def conditions(filter: Mapping[str, Any]) -> list[Condition]:
    """The filter checked, one `Condition` per key; a bad entry is an `InvalidFilter` naming it."""
    if not isinstance(filter, Mapping):
        raise TypeError(f"filter must be a dict metadata key -> value(s) (got {type(filter).__name__})")
    checked = []
    for key, wanted in filter.items():
        values = list(wanted) if isinstance(wanted, _MANY) else [wanted]
        if (
            not isinstance(key, str)
            or not key.strip()
            or not values
            or not all(isinstance(v, _SCALARS) and _term(v) is not None for v in values)
        ):
            raise InvalidFilter(
                f"filter[{key!r}] = {wanted!r}: expected a non-empty metadata key mapped to {ACCEPTED}"
            )
        for text in [key, *(v for v in values if isinstance(v, str))]:
            try:
                text.encode("utf-8")
            except UnicodeEncodeError as error:
                raise InvalidFilter(
                    f"filter[{key!r}]: not valid Unicode ({error.reason} at index {error.start})"
                ) from None
        distinct: dict[str, FilterScalar] = {}
        for value in values:
            distinct.setdefault(_term(value) or "", value)
        checked.append(Condition(key, tuple(distinct.values())))
    return checked


def check_known_keys(checked: Iterable[Condition], known: Collection[str]) -> None:
    """A filter on a key that no document's metadata has would match nothing: an ``InvalidFilter``
    naming the key and those there are (``known``: every document's keys)."""
    for condition in checked:
        if condition.key not in known:
            keys = sorted(known)
            listed = ", ".join(repr(key) for key in keys[:_LISTED_KEYS]) + (
                ", ..." if len(keys) > _LISTED_KEYS else ""
            )
            raise InvalidFilter(
                f"filter names the metadata key {condition.key!r}, which no document has, and would match "
                f"nothing; the documents' keys: {listed or 'none (they have no metadata)'}"
            )


def known_metadata_keys(retriever: object) -> frozenset[str] | None:
    """The keys of the metadata of ``retriever``'s documents, where it says (``metadata_keys``, a set);
    None where it does not."""
    keys = getattr(retriever, "metadata_keys", None)
    return frozenset(keys) if isinstance(keys, (set, frozenset)) else None


def shared_metadata_keys(retrievers: Iterable[object]) -> frozenset[str] | None:
    """The keys of the documents of all ``retrievers`` (``known_metadata_keys``), or None where one
    does not say."""
    keys: set[str] = set()
    for retriever in retrievers:
        known = known_metadata_keys(retriever)
        if known is None:
            return None
        keys |= known
    return frozenset(keys)


def filter_key(filter: Mapping[str, Any]) -> Hashable:
    """What ``filter`` means, hashable: equal for filters that keep the same documents however written
    (``{"n": 1}`` and ``{"n": 1.0}``, a list in another order)."""
    return tuple(sorted((condition.key, tuple(sorted(condition.terms))) for condition in conditions(filter)))


def filter_from_flags(items: Iterable[str], flag: str = "--filter") -> dict[str, Any]:
    """`["lang=en", "year=2020", "lang=de"]` -> `{"lang": ["en", "de"], "year": 2020}`, checked by
    `conditions`. VALUE is read as JSON when it is JSON, else as the text; a JSON list is alternatives
    (its items as they are: a list inside it is refused, as in every other filter), and a repeated
    key adds alternatives (a key cannot equal two values at once, so "all of them" would only ever
    find list fields). Errors name `flag` and the item."""
    values: dict[str, list[Any]] = {}
    for item in items:
        key, sep, raw = item.partition("=")
        if not sep or not key:
            raise InvalidFilter(f"{flag} {_shown(item)}: expected KEY=VALUE, e.g. {flag} lang=en")
        try:
            value = json.loads(raw)
        except json.JSONDecodeError:
            value = raw  # not JSON: the text itself
        except (ValueError, RecursionError):  # JSON, but an int of too many digits, or nested too deep
            raise InvalidFilter(
                f"{flag} {_shown(item)}: VALUE is JSON that cannot be read (too many digits or nested "
                f"too deeply); expected {ACCEPTED}"
            ) from None
        values.setdefault(key, []).extend(value if isinstance(value, list) else [value])
    filter = {
        key: given[0] if len(given) == 1 and not isinstance(given[0], list) else given
        for key, given in values.items()
    }
    try:
        conditions(filter)
    except InvalidFilter as error:
        raise InvalidFilter(f"{flag}: {error}") from None
    return filter


def _shown(text: str) -> str:
    return repr(text if len(text) <= 60 else text[:60] + "...")


def is_fanfuse_filter(filter: object) -> bool:
    """Whether `filter` is one these rules read (else it is in some store's own syntax)."""
    if not isinstance(filter, Mapping):
        return False
    try:
        conditions(filter)
    except InvalidFilter:
        return False
    return True


def matches(filter: Mapping[str, Any] | list[Condition], metadata: Mapping[str, Any]) -> bool:
    """Whether a document with this metadata passes the filter (a mapping, or its `conditions`)."""
    checked = conditions(filter) if isinstance(filter, Mapping) else filter
    return all(
        condition.key in metadata and not condition.terms.isdisjoint(value_terms(metadata[condition.key]))
        for condition in checked
    )


def value_terms(value: Any) -> Iterator[str]:
    """The terms a metadata value matches: its own, or each of its items' when it is a list."""
    if isinstance(value, list | tuple):
        items: Any = value
    else:
        items = (value,)
    for item in items:
        term = _term(item)
        if term is not None:
            yield term


def index_terms(metadata: Mapping[str, Any]) -> list[str]:
    """The tokens an index stores for a document's metadata, so that a `Condition` is a lookup of
    `Condition.tokens`."""
    return sorted(
        {
            _token(key, term)
            for key, value in metadata.items()
            if isinstance(key, str)
            for term in value_terms(value)
        }
    )


def _term(value: Any) -> str | None:
    """A scalar's canonical form: equal forms for equal JSON values, None for what matches nothing."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return "s" + value
    if isinstance(value, int | float):
        number = _number(value)
        return None if number is None else "n" + number
    return None


def _number(value: int | float) -> str | None:
    """Significant digits and exponent, trailing zeros dropped: one spelling per decimal value."""
    if isinstance(value, float):
        if not math.isfinite(value):
            return None
        exact = Decimal(repr(value))  # the decimal the float is written as, in JSON and in PostgreSQL
    else:
        exact = Decimal(value)
    if exact == 0:
        return "0"
    sign, digits, exponent = exact.as_tuple()
    significant = "".join(map(str, digits)).rstrip("0")
    assert isinstance(exponent, int)  # finite
    exponent += len(digits) - len(significant)
    return f"{'-' if sign else ''}{significant}e{exponent}"


def _token(key: str, term: str) -> str:
    # The key's length first: no key and term can spell another pair's token.
    token = f"{len(key)}:{key}{term}"
    if len(token.encode("utf-8", "surrogatepass")) > _LONGEST_TOKEN:
        return "#" + hashlib.blake2b(token.encode("utf-8", "surrogatepass"), digest_size=20).hexdigest()
    return token
