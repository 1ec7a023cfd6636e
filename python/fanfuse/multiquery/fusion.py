"""Fusing the branches' lists in one call to the Rust core, then attaching payloads and provenance.

The core does all the scoring; this module only keeps the bookkeeping needed to explain a hit:
which branches found it, at which rank, and the term each added to its score.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from fanfuse._core import rrf
from fanfuse.multiquery.diagnostics import FusedHit, Provenance
from fanfuse.multiquery.fanout import BranchOutcome

__all__ = ["fuse_outcomes", "rrf_contribution"]


def rrf_contribution(weight: float, k: float, rank: int) -> float:
    """The term one list adds to a hit's fused score.

    It must equal the kernel's term, ``w_i / (k + rank_i)`` (DESIGN.md), bit for bit: the tests check
    that a hit's contributions, summed in branch order, give exactly its fused score.
    """
    return weight / (k + rank)


def fuse_outcomes(outcomes: Sequence[BranchOutcome], *, k: float, top_k: int | None) -> list[FusedHit]:
    """The fused hits of the successful branches, best first (``top_k`` of them, None for all)."""
    ok = [o for o in outcomes if o.hits is not None]
    id_lists = [[hit.id for hit in o.hits or ()] for o in ok]
    weights = [o.branch.weight for o in ok]
    fused = rrf(id_lists, k=k, weights=weights, top_k=top_k)  # the one crossing into Rust

    # First position of each id in each list: fusion counts a repeated id once, at its first position.
    firsts: list[dict[str, tuple[int, Any]]] = []
    for outcome in ok:
        first: dict[str, tuple[int, Any]] = {}
        for rank, hit in enumerate(outcome.hits or (), start=1):
            first.setdefault(hit.id, (rank, hit))
        firsts.append(first)

    hits = []
    for doc_id, score in zip(fused.ids, fused.scores, strict=True):
        provenance = []
        best_rank, best_hit = None, None
        for outcome, first in zip(ok, firsts, strict=True):
            found = first.get(str(doc_id))
            if found is None:
                continue
            rank, hit = found
            branch = outcome.branch
            provenance.append(
                Provenance(
                    variant=branch.variant,
                    retriever=branch.retriever_name,
                    rank=rank,
                    contribution=rrf_contribution(branch.weight, k, rank),
                    variant_index=branch.variant_index,
                )
            )
            if best_rank is None or rank < best_rank:  # the payload of the best-ranked sighting
                best_rank, best_hit = rank, hit
        payload = getattr(best_hit, "payload", None) or {}
        hits.append(FusedHit(id=str(doc_id), score=score, payload=payload, provenance=provenance))
    return hits
