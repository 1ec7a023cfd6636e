"""`Contribution`: what one list gave one fused hit, the entries of ``Fused.explain``.

A record in Python rather than a class of the compiled core: the core builds one per entry only when
``explain`` is read, and a named tuple is the cheapest immutable record Python builds (about a third
of a frozen dataclass's cost); its fields, ``repr`` and value equality are the record's whole face.
"""

from __future__ import annotations

from typing import NamedTuple

__all__ = ["Contribution"]


class Contribution(NamedTuple):
    """What one list gave one fused hit (an entry of ``Fused.explain``)."""

    list: int
    """Index of the list (0-based, in input order)."""
    rank: int | None
    """1-based rank of the hit in that list; None where the list does not contain it (Borda points)."""
    id: str | int | None
    """The id the hit had in that list (differs from the fused id only with content keys)."""
    score: float | None
    """The input score in that list, or None if the list had no scores."""
    contribution: float
    """That list's term: a hit's contributions, added in list order, are exactly its score."""


# The public name, where it has always been: ``fanfuse.Contribution`` (pickles by that path).
Contribution.__module__ = "fanfuse"
