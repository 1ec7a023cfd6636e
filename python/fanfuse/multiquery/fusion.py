"""Fusing the branches' lists in one call to the Rust core, then attaching payloads and provenance.

The core does all the scoring and, with ``explain=True``, says for each hit which lists gave it what
(list index, rank, contribution). This module only maps list indexes back to branches and payloads.
"""

from __future__ import annotations

from collections.abc import Sequence

from fanfuse._core import fuse
from fanfuse.multiquery.diagnostics import FusedHit, Provenance
from fanfuse.multiquery.fanout import BranchOutcome

__all__ = ["fuse_outcomes"]


def fuse_outcomes(outcomes: Sequence[BranchOutcome], *, k: float, top_k: int | None) -> list[FusedHit]:
    """The fused hits of the successful branches, best first (``top_k`` of them, None for all).

    A branch with weight 0 is not run (and would be ignored by the kernel), so it appears in no hit's
    provenance.
    """
    ok = [(o.branch, o.hits) for o in outcomes if o.hits is not None]
    id_lists = [hits.ids for _, hits in ok]
    weights = [branch.weight for branch, _ in ok]
    fused = fuse(id_lists, method="rrf", k=k, weights=weights, top_k=top_k, explain=True)  # one crossing
    explain = fused.explain or []

    hits = []
    for doc_id, score, contributions in zip(fused.ids, fused.scores, explain, strict=True):
        provenance = []
        best_rank, best_hit = 0, None
        for c in contributions:
            branch, branch_hits = ok[c.list]
            rank = c.rank or 0  # always set for RRF: every contributing list contains the hit
            provenance.append(
                Provenance(
                    variant=branch.variant,
                    retriever=branch.retriever_name,
                    rank=rank,
                    contribution=c.contribution,
                    variant_index=branch.variant_index,
                )
            )
            if best_hit is None or rank < best_rank:  # the payload of the best-ranked sighting
                best_rank, best_hit = rank, branch_hits.hits[rank - 1]
        payload = getattr(best_hit, "payload", None) or {}
        hits.append(FusedHit(id=str(doc_id), score=score, payload=payload, provenance=provenance))
    return hits
