"""Fusing the branches' lists in one call to the Rust core, then attaching payloads and provenance.

The core does all the scoring and, with ``explain=True``, says for each hit which lists gave it what
(list index, rank, contribution). This module only builds the fusion options (a ``FusionOptions``,
which the core checks), hands it the branches' ids (and their scores, for the methods that fuse
scores), and maps list indexes back to branches and payloads.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, cast

from fanfuse import _renamed
from fanfuse._core import FUSION_OPTIONS, FusionError, fuse
from fanfuse.choices import AnyMethod
from fanfuse.multiquery.diagnostics import FusedHit, Provenance
from fanfuse.multiquery.fanout import Branch, BranchOutcome
from fanfuse.multiquery.hits import CheckedHits
from fanfuse.options import FusionOptions

__all__ = [
    "SEARCH_FUSION_OPTIONS",
    "check_list_weights",
    "checked",
    "fuse_outcomes",
    "is_weighted",
    "search_name",
    "search_settings",
    "takes_weights",
]

if not TYPE_CHECKING:  # at run time only: a type checker still refuses any name the module lacks
    __getattr__ = _renamed.module_getattr(__name__)  # an old name is refused naming its new spelling


# A search's name of a fusion option where it is not the core's: a search's ``k`` would read as how
# many hits, as a retriever's ``search(query, k)`` means, so the RRF constant is ``rrf_k``, as the
# service and the command line call it.
_SEARCH_NAMES = {"k": "rrf_k"}
_CORE_NAMES = {search: core for core, search in _SEARCH_NAMES.items()}

#: The fusion options a search caller sets, by the search's names; the search sets the others itself
#: (the lists' weights from variant and retriever weights, its own ``top_k``, and ``explain`` for the
#: provenance).
SEARCH_FUSION_OPTIONS = tuple(
    _SEARCH_NAMES.get(name, name) for name in FUSION_OPTIONS if name not in ("weights", "top_k", "explain")
)


def search_name(option: str) -> str:
    """A search's name of the core's fusion option ``option`` (``k``: ``rrf_k``)."""
    return _SEARCH_NAMES.get(option, option)


def search_settings(options: FusionOptions) -> dict[str, Any]:
    """The fusion options a search caller sets, as ``options`` holds them, by the search's names."""
    return {name: getattr(options, _CORE_NAMES.get(name, name)) for name in SEARCH_FUSION_OPTIONS}


@_renamed.refusing_old_keywords
def checked(values: Mapping[str, Any], *, weights: Iterable[float] = ()) -> FusionOptions:
    """The fusion options of ``values`` (by the search's names; None: the core's default), checked by
    the core when built.
    ``weights``: the variant and retriever weights the lists' weights are made of; a method without
    per-list weights refuses any but 0 (a list not searched) and 1."""
    unknown = values.keys() - set(SEARCH_FUSION_OPTIONS)
    if unknown:
        raise TypeError(f"{sorted(unknown)[0]!r} is not a fusion option of a search")
    given = {_CORE_NAMES.get(name, name): value for name, value in values.items() if value is not None}
    try:
        options = FusionOptions(**given)
    except (FusionError, TypeError) as error:
        raise _in_search_names(error) from None
    if "method" not in given:
        # A search has no trained model, so the method left unset is the core's default, and the
        # norm is judged against it now rather than at the first search.
        options = options.replace(method=options.method)
    uneven = _uneven(weights)
    if uneven and not options.takes_weights:
        try:
            options.replace(weights=uneven)  # refused, in the core's words
        except FusionError as error:
            raise FusionError(
                f"{error} (the lists' weights are variant_weights x retriever_weights: leave them at 1 "
                f"with this method)"
            ) from None
    return options


def _in_search_names(error: Exception) -> Exception:
    """``error`` naming the search's option where it names the core's (``k must be ...``: ``rrf_k must
    be ...``), its ``option`` too; else ``error`` itself."""
    for core, search in _SEARCH_NAMES.items():
        if str(error).startswith(f"{core} "):
            renamed = type(error)(search + str(error)[len(core) :])
            if getattr(error, "option", None) is not None:
                renamed.option = search  # type: ignore[attr-defined]
            return renamed
    return error


def takes_weights(method: str) -> bool:
    """Whether fusion ``method`` has a weighted form (False too for a name the core does not know)."""
    try:
        # Any name: one the core does not know is its refusal, answered False.
        return FusionOptions(method=cast("AnyMethod", method)).takes_weights
    except (FusionError, TypeError):
        return False


def is_weighted(variant_weights: Iterable[float], retriever_weights: Iterable[float]) -> bool:
    """Whether some list may get a weight other than 1 (weight 0 lists are not searched at all)."""
    return bool(_uneven([*variant_weights, *retriever_weights]))


def _uneven(weights: Iterable[float]) -> list[float]:
    """The weights that make a list weigh other than 1: neither 1 nor 0 (a list not searched)."""
    return [w for w in weights if w not in (0.0, 1.0)]


def fuse_outcomes(
    outcomes: Sequence[BranchOutcome], options: FusionOptions, *, top_k: int | None
) -> list[FusedHit]:
    """The fused hits of the successful branches, best first (``top_k`` of them, None for all).

    A branch with weight 0 is not run (and would be ignored by the kernel), so it appears in no hit's
    provenance. Weights that are all 1 are not passed: the same fusion, and the methods without a
    weighted form accept it.
    """
    ok = [(o.branch, o.hits) for o in outcomes if o.hits is not None]
    weights = [branch.weight for branch, _ in ok]
    runs: list[Any] = (
        [_scored_run(branch, hits, options.method) for branch, hits in ok]
        if options.reads_scores
        else [hits.ids for _, hits in ok]
    )
    weighted = None if all(w == 1.0 for w in weights) else weights
    fused = fuse(runs, options=options.replace(weights=weighted, top_k=top_k, explain=True))  # one crossing
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


def _scored_run(branch: Branch, hits: CheckedHits, method: AnyMethod) -> tuple[list[str], list[float]]:
    scores: list[Any] = [getattr(hit, "score", None) for hit in hits.hits]
    missing = next((i for i, s in enumerate(scores, 1) if s is None), None)
    if missing is not None:
        raise FusionError(
            f"method {method!r} fuses scores, but retriever {branch.retriever_name!r} returned a hit "
            f"without a score (hit {missing} for variant {branch.variant_index}); use a rank method "
            f"such as rrf"
        )
    return hits.ids, [float(s) for s in scores]


def check_list_weights(weights: Iterable[float]) -> None:
    """A search's list weights, each a variant's weight times its retriever's, that sum beyond the
    largest float (a product of two large weights does) are refused naming the two arguments that
    make them, where the core would name its own `weights[i]`: only their ratios matter."""
    total = sum(weights)
    if not total < float("inf"):
        raise FusionError(
            "variant_weights x retriever_weights: the weights of the lists (a variant's weight times its "
            f"retriever's) sum to {total}, beyond the largest float; only their ratios matter, so scale "
            "them down"
        )
