"""What a multi-query search returns: the fused hits with their provenance, and how the search went.

Plain slotted dataclasses, not frozen: a search builds dozens of them and a frozen dataclass costs
five times as much to create (about 1.8 us against 0.36 us here). Treat them as read-only.

A search's hits carry ~50 ``Provenance`` records that many callers never read, so a fused hit is
created with ``payload`` and ``provenance`` unset and both are read from the fusion's explanation
the first time either is (any read: the attribute, ``==``, ``repr``, ``dataclasses.asdict``).

Each field says what it holds in its ``metadata["description"]``: the one text that the JSON of a
result (``fanfuse.multiquery.result_json``) and the HTTP service's OpenAPI schema show for it.
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


def _about(description: str) -> dict[str, str]:
    """The metadata of a field: what it holds, as its JSON and the OpenAPI schema show it."""
    return {"description": description}


@dataclass(slots=True)
class Provenance:
    """One branch (query variant x retriever) that gave a hit part of its score."""

    variant: str = field(metadata=_about("the query variant the branch searched"))
    retriever: str = field(metadata=_about("the retriever that searched it"))
    rank: int | None = field(
        metadata=_about(
            "the hit's 1-based rank in the branch's list (its first position, as fusion counts it); "
            "null where the list lacks the hit and the method still gives it points, as Borda does"
        )
    )
    contribution: float = field(
        metadata=_about(
            "the term the branch added to the fused score; NaN (null in JSON) for Condorcet, whose "
            "score is a position"
        )
    )
    variant_index: int = field(
        default=0, metadata=_about("the variant's position in `diagnostics.variants` (0: the question)")
    )


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
    """A hit of the fused list, with where its score came from."""

    id: str = field(metadata=_about("the document's id"))
    score: float = field(metadata=_about("the fused score (of the fusion method, RRF by default)"))
    payload: Mapping[str, Any] = field(
        default_factory=dict, metadata=_about("the document's fields, from the retriever that ranked it best")
    )
    provenance: list[Provenance] = field(
        default_factory=list,
        metadata=_about("each branch that gave the hit part of its score, in branch order"),
    )
    rerank_score: float | None = field(
        default=None, metadata=_about("the reranker's score; null when no reranker ran")
    )

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
    """A query variant that was searched."""

    text: str = field(metadata=_about("the variant as searched"))
    source: str = field(
        metadata=_about(
            "where it came from: original (the question), history, heuristic, feedback, llm, static, "
            "callable or explicit"
        )
    )
    weight: float = field(metadata=_about("its lists' weight in fusion"))


@dataclass(slots=True)
class ExpansionReport:
    """How the query variants were obtained."""

    expander: str = field(
        metadata=_about(
            "the expander that wrote them: none when expansion was off, explicit when the call gave "
            "the variants"
        )
    )
    cached: bool = field(default=False, metadata=_about("they came from the expansion cache"))
    fallback_reason: str | None = field(
        default=None, metadata=_about("why a simpler expansion stood in for the expander's; null: none did")
    )
    note: str | None = field(
        default=None, metadata=_about("anything else the expander noted (e.g. too few variants)")
    )
    elapsed_ms: float = field(default=0.0, metadata=_about("how long the expansion took, in ms"))
    dropped_turns: int = field(
        default=0,
        metadata=_about(
            "how many of the conversation's earlier turns of the roles the expander reads were left "
            "out to keep it within its budget (the oldest ones: `fanfuse.limits.CONVERSATION`)"
        ),
    )


@dataclass(slots=True)
class BranchReport:
    """One (variant x retriever) search."""

    variant_index: int = field(metadata=_about("the variant's position in `diagnostics.variants`"))
    variant: str = field(metadata=_about("the query variant searched"))
    retriever: str = field(metadata=_about("the retriever that searched it"))
    hits: int = field(metadata=_about("how many hits it returned"))
    started_ms: float = field(metadata=_about("when it started, in ms after the search began"))
    latency_ms: float = field(metadata=_about("how long it took, in ms"))
    error: str | None = field(
        default=None, metadata=_about("why it failed (its list was left out of fusion); null: it did not")
    )
    timed_out: bool = field(default=False, metadata=_about("it failed by running past its deadline"))
    skipped: bool = field(default=False, metadata=_about("its weight was 0, so it was not searched"))

    @property
    def ok(self) -> bool:
        return self.error is None


@dataclass(slots=True)
class Diagnostics:
    """How a search went: its variants, its branches and where the time went."""

    variants: list[VariantReport] = field(metadata=_about("the query variants searched, the question first"))
    expansion: ExpansionReport = field(metadata=_about("how the variants were obtained"))
    branches: list[BranchReport] = field(metadata=_about("each (variant x retriever) search"))
    fusion_ms: float = field(metadata=_about("how long fusion took, in ms"))
    rerank_ms: float = field(metadata=_about("how long the reranker took, in ms"))
    total_ms: float = field(metadata=_about("how long the whole search took, in ms"))
    rerank_error: str | None = field(
        default=None, metadata=_about("why the reranker failed (the fused order stands); null: it did not")
    )

    @property
    def failed_branches(self) -> list[BranchReport]:
        return [b for b in self.branches if b.error is not None]

    @property
    def degraded(self) -> bool:
        """The result is partial: a branch failed, the reranker failed, or the expansion fell back."""
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
    """What a multi-query search returns: the fused hits and how the search went."""

    query: str = field(metadata=_about("the question"))
    hits: list[FusedHit] = field(metadata=_about("the fused hits, best first"))
    diagnostics: Diagnostics = field(metadata=_about("how the search went"))

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
