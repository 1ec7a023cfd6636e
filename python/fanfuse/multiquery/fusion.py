"""Fusing the branches' lists in one call to the Rust core, then attaching payloads and provenance.

The core does all the scoring and, with ``explain=True``, says for each hit which lists gave it what
(list index, rank, contribution). This module only checks the fusion options against the core, hands
it the branches' ids (and their scores, for the methods that fuse scores), and maps list indexes back
to branches and payloads.
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from fanfuse._core import SCORE_METHODS, FusionError, fuse
from fanfuse.multiquery.diagnostics import FusedHit, Provenance
from fanfuse.multiquery.fanout import Branch, BranchOutcome
from fanfuse.multiquery.hits import CheckedHits

__all__ = ["FUSION_OPTIONS", "FusionSettings", "checked", "fuse_outcomes", "is_weighted", "takes_weights"]

# Two small lists that every valid set of options can fuse: the core checks the options on them.
_PROBE_SCORED = [(["a", "b"], [2.0, 1.0]), (["b", "c"], [1.0, 0.5])]
_TEXT_OPTIONS = ("method", "norm", "tie_break", "duplicates")
_NUMBER_OPTIONS = ("k", "phi", "sigma", "gamma")


@dataclass(frozen=True, slots=True)
class FusionSettings:
    """How the branches' lists are fused: ``fanfuse.fuse``'s method and options (docs/fusion-methods.md).

    ``norm``, ``phi``, ``sigma`` and ``gamma`` left at None take the core's defaults. Build it with
    ``checked``: the core itself validates the combination, so the accepted names are its own.
    """

    method: str = "rrf"
    k: float = 60.0
    norm: str | None = None
    phi: float | None = None
    sigma: float | None = None
    gamma: float | None = None
    tie_break: str = "rank"
    duplicates: str = "first"
    scored: bool = False  # whether the method reads scores, so the branches' scores are passed
    takes_weights: bool = True  # whether the method has a weighted form (isr, combmax... have none)
    options: Mapping[str, Any] = field(default_factory=dict, compare=False, repr=False)

    def replaced(self, changes: Mapping[str, Any], *, weighted: bool) -> FusionSettings:
        """These settings with ``changes`` applied, checked by the core (``weighted``: the lists will
        carry weights other than 1, which some methods refuse)."""
        values = {name: getattr(self, name) for name in FUSION_OPTIONS}
        values.update(changes)
        return checked(values, weighted=weighted)


#: The options a caller sets: the fields but those derived from them.
FUSION_OPTIONS = tuple(
    f.name for f in dataclasses.fields(FusionSettings) if f.name not in ("scored", "takes_weights", "options")
)


def checked(values: Mapping[str, Any], *, weighted: bool) -> FusionSettings:
    """``FusionSettings`` from option values, refused by the core's own error when it cannot fuse by them."""
    for name in _TEXT_OPTIONS:
        value = values.get(name)
        if value is not None and not isinstance(value, str):
            raise TypeError(f"{name} must be a str (got {type(value).__name__})")
    for name in _NUMBER_OPTIONS:
        value = values.get(name)
        if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float))):
            raise TypeError(f"{name} must be a number (got {type(value).__name__})")
    options = {name: value for name, value in values.items() if value is not None}
    fuse(_PROBE_SCORED, **options)
    try:
        fuse(_PROBE_SCORED, weights=[1.0, 2.0], **options)
        takes_weights = True
    except FusionError as error:
        if weighted:
            raise FusionError(
                f"{error} (the lists' weights are variant_weights x retriever_weights: leave them at 1 "
                f"with this method)"
            ) from None
        takes_weights = False
    settings = FusionSettings(
        **values, scored=options.get("method", "rrf") in SCORE_METHODS, takes_weights=takes_weights
    )
    object.__setattr__(settings, "options", options)
    return settings


def takes_weights(method: str) -> bool:
    """Whether fusion ``method`` has a weighted form (False too for a name the core does not know)."""
    try:
        return checked({"method": method}, weighted=False).takes_weights
    except (FusionError, TypeError):
        return False


def is_weighted(variant_weights: Iterable[float], retriever_weights: Iterable[float]) -> bool:
    """Whether some list may get a weight other than 1 (weight 0 lists are not searched at all)."""
    return any(w not in (0.0, 1.0) for w in (*variant_weights, *retriever_weights))


def fuse_outcomes(
    outcomes: Sequence[BranchOutcome], settings: FusionSettings, *, top_k: int | None
) -> list[FusedHit]:
    """The fused hits of the successful branches, best first (``top_k`` of them, None for all).

    A branch with weight 0 is not run (and would be ignored by the kernel), so it appears in no hit's
    provenance. Weights that are all 1 are not passed: the same fusion, and the methods without a
    weighted form accept it.
    """
    ok = [(o.branch, o.hits) for o in outcomes if o.hits is not None]
    weights = [branch.weight for branch, _ in ok]
    runs: list[Any] = (
        [_scored_run(branch, hits, settings.method) for branch, hits in ok]
        if settings.scored
        else [hits.ids for _, hits in ok]
    )
    fused = fuse(  # one crossing
        runs,
        weights=None if all(w == 1.0 for w in weights) else weights,
        top_k=top_k,
        explain=True,
        **settings.options,
    )
    # Per list: what its hits' provenance says (variant, retriever, variant index) and its hits.
    lists = [(b.variant, b.retriever_name, b.variant_index, listed.hits) for b, listed in ok]
    explanation = _Explanation(lists)
    hits = [
        FusedHit._on_demand(str(doc_id), score, explanation)
        for doc_id, score in zip(fused.ids, fused.scores, strict=True)
    ]
    explanation.pending = list(zip(hits, fused.explain or [], strict=True))
    return hits


class _Explanation:
    """The payload and provenance of a search's fused hits, read from the core's explanation for all
    of them on the first read of any: one costly attribute miss per search rather than one per hit."""

    __slots__ = ("_lists", "_lock", "pending")

    def __init__(self, lists: list[tuple[str, str, int, list[Any]]]):
        self._lists = lists
        self._lock = threading.Lock()
        self.pending: list[tuple[FusedHit, list[Any]]] = []

    def __call__(self) -> None:
        with self._lock:  # a thread that finds nothing pending finds every hit's fields set
            lists, pending, self.pending = self._lists, self.pending, []
            for hit, contributions in pending:
                provenance = []
                best_rank, best_hit = 0, None
                for c in contributions:
                    variant, retriever, variant_index, listed_hits = lists[c.list]
                    rank = c.rank
                    provenance.append(Provenance(variant, retriever, rank, c.contribution, variant_index))
                    # The payload of the best-ranked sighting (a Borda list that lacks the hit has no rank).
                    if rank is not None and (best_hit is None or rank < best_rank):
                        best_rank, best_hit = rank, listed_hits[rank - 1]
                hit.payload = getattr(best_hit, "payload", None) or {}
                hit.provenance = provenance
            self._lists = []  # set fields are read as such: the hits' lists are no longer needed


def _scored_run(branch: Branch, hits: CheckedHits, method: str) -> tuple[list[str], list[float]]:
    scores: list[Any] = [getattr(hit, "score", None) for hit in hits.hits]
    missing = next((i for i, s in enumerate(scores, 1) if s is None), None)
    if missing is not None:
        raise FusionError(
            f"method {method!r} fuses scores, but retriever {branch.retriever_name!r} returned a hit "
            f"without a score (hit {missing} for variant {branch.variant_index}); use a rank method "
            f"such as rrf"
        )
    return hits.ids, [float(s) for s in scores]
