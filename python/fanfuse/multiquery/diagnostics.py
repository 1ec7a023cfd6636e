"""What a multi-query search returns: the fused hits with their provenance, and how the search went.

Plain slotted dataclasses, not frozen: a search builds dozens of them and a frozen dataclass costs
five times as much to create (about 1.8 us against 0.36 us here). Treat them as read-only.

A search's hits carry ~50 ``Provenance`` records that many callers never read, so a fused hit is
created with ``payload`` and ``provenance`` unset and both are read from the fusion's explanation
the first time either is (any read: the attribute, ``==``, ``repr``, ``dataclasses.asdict``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, Any

from fanfuse.errors import SearchFailed

__all__ = [
    "AllBranchesFailed",
    "BranchReport",
    "Diagnostics",
    "ExpansionReport",
    "FusedHit",
    "Provenance",
    "SearchResult",
    "VariantReport",
]


@dataclass(slots=True)
class Provenance:
    """One branch that gave a hit part of its score: the query variant, the retriever, the hit's
    1-based rank in that branch's list (its first position, as fusion counts it; None where the list
    lacks the hit and the method still gives it points, as Borda does), and the term it added to the
    fused score (NaN for Condorcet, whose score is a position)."""

    variant: str
    retriever: str
    rank: int | None
    contribution: float
    variant_index: int = 0


class _ExplainedOnDemand:
    """The slot of a fused hit whose payload and provenance are still to be read: ``_explained()``
    sets them (and those of the other hits of its search)."""

    __slots__ = ("_explained",)
    _explained: Callable[[], None] | None

    if not TYPE_CHECKING:  # for mypy, FusedHit has its fields and no others

        def __getattr__(self, name: str) -> Any:
            # Only reached when ordinary lookup fails: a field left unset, or no such attribute.
            explain = getattr(self, "_explained", None) if name in ("payload", "provenance") else None
            if explain is None:
                raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
            explain()
            return object.__getattribute__(self, name)


@dataclass(slots=True)
class FusedHit(_ExplainedOnDemand):
    """A fused result. ``score`` is the fused score (of the fusion method, RRF by default);
    ``rerank_score`` is set when a reranker ran.
    ``payload`` comes from the retriever that ranked the hit best. ``provenance`` is in branch order."""

    id: str
    score: float
    payload: Mapping[str, Any] = field(default_factory=dict)
    provenance: list[Provenance] = field(default_factory=list)
    rerank_score: float | None = None

    def __reduce__(self) -> tuple[Any, ...]:
        # Copies and pickles hold the fields, read, not the search's pending explanation.
        return type(self), tuple(getattr(self, f.name) for f in fields(self))

    @classmethod
    def _on_demand(cls, id: str, score: float, explain: Callable[[], None]) -> FusedHit:
        """A hit whose payload and provenance ``explain()`` sets, called on their first read."""
        hit = cls.__new__(cls)
        hit.id, hit.score, hit.rerank_score = id, score, None
        hit._explained = explain  # type: ignore[misc]  # the slot is the base class's
        return hit


@dataclass(slots=True)
class VariantReport:
    """A variant that was searched, where it came from and its fusion weight."""

    text: str
    source: str
    weight: float


@dataclass(slots=True)
class ExpansionReport:
    """How the variants were obtained. ``expander`` is ``none`` when expansion was off and
    ``explicit`` when the call passed ``variants``; ``fallback_reason`` says why a fallback stood in;
    ``dropped_turns``: how many of the conversation's earlier turns of the roles the expander reads
    were left out to keep it within its budget (the oldest ones: ``fanfuse.limits.CONVERSATION``)."""

    expander: str
    cached: bool = False
    fallback_reason: str | None = None
    note: str | None = None
    elapsed_ms: float = 0.0
    dropped_turns: int = 0


@dataclass(slots=True)
class BranchReport:
    """One (variant x retriever) search: how many hits it returned, when it started (ms after the
    search began), how long it took, and its error if it failed (a failed branch is left out of fusion).
    ``skipped``: its weight was 0, so it was not searched at all."""

    variant_index: int
    variant: str
    retriever: str
    hits: int
    started_ms: float
    latency_ms: float
    error: str | None = None
    timed_out: bool = False
    skipped: bool = False

    @property
    def ok(self) -> bool:
        return self.error is None


@dataclass(slots=True)
class Diagnostics:
    variants: list[VariantReport]
    expansion: ExpansionReport
    branches: list[BranchReport]
    fusion_ms: float
    rerank_ms: float
    total_ms: float
    rerank_error: str | None = None

    @property
    def failed_branches(self) -> list[BranchReport]:
        return [b for b in self.branches if b.error is not None]

    @property
    def degraded(self) -> bool:
        """The result is partial: a branch failed, the reranker failed, or expansion fell back."""
        return bool(self.failed_branches or self.rerank_error or self.expansion.fallback_reason)

    def summary(self) -> str:
        """One line, as logged at INFO for every search."""
        failed = len(self.failed_branches)
        skipped = sum(b.skipped for b in self.branches)
        counts = [f"{skipped} skipped: weight 0"] if skipped else []
        counts += [f"{failed} failed"] if failed else []
        parts = [
            f"{len(self.variants)} variants x {len({b.retriever for b in self.branches})} retrievers",
            f"{len(self.branches)} branches"
            + (f" ({', '.join(counts)})" if counts else "")
            + f" in {self.total_ms:.2f} ms (expand {self.expansion.elapsed_ms:.2f}, "
            f"fusion {self.fusion_ms:.3f}, rerank {self.rerank_ms:.2f})",
        ]
        if self.expansion.fallback_reason:
            parts.append(f"expansion fell back: {self.expansion.fallback_reason}")
        if self.expansion.dropped_turns:
            parts.append(f"{self.expansion.dropped_turns} older turn(s) of the conversation left out")
        return ", ".join(parts)


@dataclass(slots=True)
class SearchResult:
    query: str
    hits: list[FusedHit]
    diagnostics: Diagnostics

    @property
    def ids(self) -> list[str]:
        return [hit.id for hit in self.hits]

    def __len__(self) -> int:
        return len(self.hits)

    def __iter__(self) -> Iterator[FusedHit]:
        return iter(self.hits)


class AllBranchesFailed(SearchFailed):
    """Every (variant x retriever) branch of a search failed; ``branches`` holds each one's error."""

    def __init__(self, message: str, branches: list[BranchReport]):
        super().__init__(message)
        self.branches = branches
