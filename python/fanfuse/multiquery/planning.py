"""The options of one search, shared by ``search`` and ``asearch``, checked into a ``Plan``.

Every option left out (or None) takes the instance's setting. ``history`` (the conversation before
the query, ``conversation.py``) is the call's alone: the expander reads it. A per-call
``retriever_weights`` sets the weights of the retrievers it names and leaves the others at the
instance's weights. The fusion options (``method``, ``rrf_k``, ``norm``, ``phi``, ``sigma``, ``gamma``,
``tie_break``, ``duplicates``) are ``fanfuse.fuse``'s (``rrf_k`` its ``k``) and are checked by the
core. A method without a weighted form (``isr``, ``combmax``...) fuses every list with weight 1
unless the call itself gives weights other than 1, which it refuses (docs/multiquery.md, "Weights").
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol, TypedDict

from fanfuse import _renamed
from fanfuse._renamed import RENAMED_SEARCH_OPTIONS
from fanfuse.choices import DuplicatePolicy, Method, Norm, TieBreak
from fanfuse.errors import InvalidSetting
from fanfuse.idle_settings import GoesWith, refuse_idle
from fanfuse.limits import check_float, check_int, derived_int, optional_float, optional_int
from fanfuse.multiquery.config import MultiQueryConfig, check_max_variants, check_variant_weights
from fanfuse.multiquery.conversation import History, Turn, check_history
from fanfuse.multiquery.expand.expanders import Expander, Variant
from fanfuse.multiquery.fusion import SEARCH_FUSION_OPTIONS, checked, search_name
from fanfuse.multiquery.rerank import Reranker, check_reranker
from fanfuse.options import FusionOptions
from fanfuse.retrievers.filters import check_known_keys, conditions
from fanfuse.text import check_unicode

__all__ = [
    "SEARCH_OPTION_NAMES",
    "InstanceSettings",
    "Plan",
    "SearchOptions",
    "check_option_names",
    "check_query",
    "check_reranked",
    "check_strategy_read",
    "make_plan",
    "refuse_unread",
    "weights_by_retriever",
]


if not TYPE_CHECKING:  # at run time only: a type checker still refuses any name the module lacks
    __getattr__ = _renamed.module_getattr(__name__)  # an old name is refused naming its new spelling


class SearchOptions(TypedDict, total=False):
    """The keyword options of ``search`` and ``asearch`` (docs/multiquery.md, "Search options")."""

    top_k: int | None
    expansion: bool | None
    max_variants: int | None
    filter: Mapping[str, Any] | None
    variants: Sequence[str] | None
    history: Sequence[str | Mapping[str, str] | Turn] | None
    strategy: str | None
    variant_weights: Sequence[float] | None
    retriever_weights: Mapping[str, float] | None
    branch_k: int | None
    reranker: Reranker | None
    rerank_window: int | None
    return_k: int | None
    min_score: float | None
    method: Method | None
    rrf_k: float | None
    norm: Norm | None
    phi: float | None
    sigma: float | None
    gamma: float | None
    tie_break: TieBreak | None
    duplicates: DuplicatePolicy | None


#: The names of a search's options (what ``MultiQueryRetriever`` holds to a call's rules, too).
SEARCH_OPTION_NAMES = SearchOptions.__optional_keys__
# The options in the order of their declaration, as a refused keyword's message lists them.
_LISTED_OPTIONS = ", ".join(SearchOptions.__annotations__)


class InstanceSettings(Protocol):
    """The settings of a ``MultiQueryRetriever`` that a call's left-out options take."""

    config: MultiQueryConfig
    expander: Expander
    top_k: int
    strategy: str | None
    variant_weights: list[float]
    retriever_weights: dict[str, float]
    branch_k: int | None
    reranker: Reranker | None
    rerank_window: int | None
    return_k: int | None
    min_score: float | None
    fusion: FusionOptions

    @property
    def retriever_names(self) -> list[str]: ...

    @property
    def metadata_keys(self) -> frozenset[str] | None: ...


@dataclass(slots=True)
class Plan:
    """One search call's settings, checked, with the instance's defaults filled in."""

    query: str
    top_k: int
    expansion: bool
    max_variants: int | None  # as given by the call: None means "the instance's"
    filter: Mapping[str, Any] | None
    variants: Sequence[str] | None
    history: History
    strategy: str | None
    variant_weights: list[float]
    retriever_weights: dict[str, float]
    branch_k: int
    reranker: Reranker | None
    rerank_window: int
    return_k: int
    min_score: float | None
    fusion: FusionOptions


def check_option_names(options: Mapping[str, Any], holder: str) -> None:
    """Refuses a name in `options` that is no search option, as Python refuses an unknown keyword;
    `holder` names the call or the argument that gave them (`search()`, `search_kwargs`)."""
    unknown = options.keys() - SEARCH_OPTION_NAMES
    if not unknown.isdisjoint(RENAMED_SEARCH_OPTIONS):
        old = min(unknown & RENAMED_SEARCH_OPTIONS.keys())
        raise TypeError(
            f"{holder} keyword {old} is renamed: use {RENAMED_SEARCH_OPTIONS[old]} (the RRF constant; "
            "how many hits come back is top_k)"
        )
    if unknown:
        raise TypeError(
            f"{holder} got an unexpected keyword argument {sorted(unknown)[0]!r} "
            f"(search options: {_LISTED_OPTIONS})"
        )


def check_search_kwargs(retriever: InstanceSettings, options: Mapping[str, Any]) -> None:
    """An adapter's `search_kwargs` checked as a search checks them (names, values, what it would not
    read) when given: not at the first search of a running chain."""
    check_option_names(options, "search_kwargs")
    make_plan(retriever, "query", options, "search_kwargs")


def check_query(query: object, name: str = "query") -> str:
    """A query as a search takes it: a str with a word in it that UTF-8 can carry; errors name `name`."""
    if not isinstance(query, str):
        raise TypeError(f"{name} must be a str (got {type(query).__name__})")
    if not query.strip():
        got = "only blank characters" if query else "an empty string"
        raise InvalidSetting(f"{name} must hold a word (got {got})")
    return check_unicode(name, query)


def make_plan(retriever: InstanceSettings, query: str, options: Mapping[str, Any], caller: str) -> Plan:
    """The call's options checked, the instance's settings where they are left out or None."""
    check_option_names(options, f"{caller}()")
    check_query(query)
    given = {name: value for name, value in options.items() if value is not None}
    expansion = given.get("expansion", retriever.config.expansion)
    if not isinstance(expansion, bool):
        raise TypeError(f"expansion must be a bool or None (got {type(expansion).__name__})")
    max_variants = given.get("max_variants")
    if max_variants is not None:
        check_max_variants(max_variants)
    variants = _checked_variants(given.get("variants"))
    top_k = check_int("top_k", given["top_k"]) if "top_k" in given else retriever.top_k
    window = optional_int("rerank_window", given.get("rerank_window")) or retriever.rerank_window
    branch_k = (
        optional_int("branch_k", given.get("branch_k"))
        or retriever.branch_k
        or derived_int("branch_k", max(2 * top_k, window or 0))
    )
    reranker = check_reranker(given["reranker"]) if "reranker" in given else retriever.reranker
    return_k = optional_int("return_k", given.get("return_k"))
    # Each value checked, then whether the search would read it.
    refuse_unread(
        given,
        variants_given="variants" in given,
        expansion=expansion,
        most_variants=retriever.config.max_variants if max_variants is None else max_variants,
        expander=retriever.expander,
        reranker=reranker,
    )
    variant_weights = (
        check_variant_weights(given["variant_weights"])
        if "variant_weights" in given
        else retriever.variant_weights
    )
    retriever_weights = weights_by_retriever(
        retriever.retriever_names, given.get("retriever_weights"), retriever.retriever_weights
    )
    fusion = _fusion(retriever.fusion, given, variant_weights, retriever_weights)
    if not fusion.takes_weights:
        # The call's method has no weighted form and the call gave no weights: the instance's weights
        # are for its own method, so every list weighs 1 (a weight 0 still leaves a list out).
        variant_weights = _unit(variant_weights)
        retriever_weights = dict(zip(retriever_weights, _unit(retriever_weights.values()), strict=True))
    return Plan(
        query=query,
        top_k=top_k,
        expansion=expansion,
        max_variants=max_variants,
        filter=_checked_filter(given.get("filter"), retriever),
        variants=variants,
        history=check_history(given.get("history")),
        strategy=given.get("strategy", retriever.strategy),
        variant_weights=variant_weights,
        retriever_weights=retriever_weights,
        branch_k=branch_k,
        reranker=reranker,
        rerank_window=window or branch_k,
        return_k=return_k or retriever.return_k or top_k,
        min_score=optional_float("min_score", given["min_score"])
        if "min_score" in given
        else retriever.min_score,
        fusion=fusion,
    )


def _fusion(
    base: FusionOptions,
    given: Mapping[str, Any],
    variant_weights: Sequence[float],
    retriever_weights: Mapping[str, float],
) -> FusionOptions:
    """The instance's fusion settings, or the call's changes to them checked by the core. Weights the
    call gives are checked with the method (some methods refuse weights other than 1); the
    instance's weights are not: a method without a weighted form fuses with unit weights instead."""
    changes = {name: given[name] for name in SEARCH_FUSION_OPTIONS if name in given}
    if not changes and "variant_weights" not in given and "retriever_weights" not in given:
        return base
    own_variant = variant_weights if "variant_weights" in given else ()
    own_retriever = [retriever_weights[name] for name in given.get("retriever_weights", ())]
    instance = {search_name(name): value for name, value in base.given().items()}
    return checked({**instance, **changes}, weights=[*own_variant, *own_retriever])


def _checked_filter(
    filter: Mapping[str, Any] | None, retriever: InstanceSettings
) -> Mapping[str, Any] | None:
    """``filter`` checked once for the whole search where the retrievers say their documents' keys
    (a key none has is refused here, not by every branch); else left to each retriever. The keys
    are asked for only by a filtered search: a dense retriever reads them from every document."""
    if filter is not None and (known := retriever.metadata_keys) is not None:
        check_known_keys(conditions(filter), known)
    return filter


def _unit(weights: Iterable[float]) -> list[float]:
    return [0.0 if w == 0.0 else 1.0 for w in weights]


class _Reads(NamedTuple):
    """What decides which of a search's expansion options it reads."""

    variants_given: bool
    expansion: bool
    most_variants: int


def refuse_unread(
    given: Mapping[str, Any],
    *,
    variants_given: bool,
    expansion: bool,
    most_variants: int,
    expander: Expander,
    reranker: Reranker | None,
) -> None:
    """InvalidSetting for the first of the options ``given`` that a search so set would not read.

    The one check of a call's options and of a ``MultiQueryRetriever``'s (every call's defaults,
    whose left-out settings the environment gives): the same rules and message for both, so an
    option that no search would read is refused where it is given."""
    if not _EXPANSION_OPTIONS.isdisjoint(given):  # most calls give none: no rule to read
        refuse_idle(_EXPANSION_RULES, given, _Reads(variants_given, expansion, most_variants))
    if "strategy" in given:
        check_strategy_read(given["strategy"], expander)
    check_reranked(given, reranker)


_OptionRule = GoesWith[_Reads]

# The expansion's options: the variants a call gives replace the expander, which with expansion off
# or a single variant is not asked either.
_EXPANSION_RULES: tuple[_OptionRule, ...] = (
    _OptionRule(
        ("expansion", "strategy"),
        "a search without variants= (the call's own variants replace the expander)",
        lambda reads: not reads.variants_given,
    ),
    _OptionRule(
        ("max_variants", "strategy"),
        "query expansion, which is off (expansion=False; left out, the retriever's setting or "
        "FANFUSE_QUERY_EXPANSION)",
        lambda reads: reads.variants_given or reads.expansion,
    ),
    _OptionRule(
        ("strategy",),
        "more than one variant (max_variants above 1; left out, the retriever's setting or "
        "FANFUSE_MAX_QUERY_VARIANTS): the question goes alone",
        lambda reads: reads.most_variants != 1,
    ),
)

_EXPANSION_OPTIONS = frozenset(name for rule in _EXPANSION_RULES for name in rule.names)

# What a reranker reads: nothing else does.
_RERANK_RULES: tuple[GoesWith[Reranker | None], ...] = tuple(
    GoesWith((name,), f"a reranker ({what})", lambda reranker: reranker is not None)
    for name, what in (
        ("rerank_window", "how many fused hits it reranks"),
        ("return_k", "how many reranked hits come back; without one, top_k sets how many hits come back"),
    )
)

_RERANK_OPTIONS = frozenset(name for rule in _RERANK_RULES for name in rule.names)


def check_reranked(given: Collection[str], reranker: Reranker | None) -> None:
    """``rerank_window`` and ``return_k`` are the reranker's: without one, they would do nothing."""
    if reranker is None and not _RERANK_OPTIONS.isdisjoint(given):
        refuse_idle(_RERANK_RULES, given, reranker)


def check_strategy_read(strategy: str, expander: Expander) -> None:
    """A strategy for an expander that reads none is refused (as an option the search would not read);
    one that reads some checks the name itself."""
    needs = f"an expander that reads one (LLMExpander; this one, {expander.name}, reads none)"
    refuse_idle(
        (GoesWith(("strategy",), needs, lambda read: read != ()),), ("strategy",), expander.strategies
    )


def weights_by_retriever(
    names: Sequence[str], weights: Mapping[str, float] | None, base: Mapping[str, float] | None = None
) -> dict[str, float]:
    """Each retriever's weight: as ``weights`` names it, else as in ``base``, else 1."""
    out = dict(base) if base is not None else dict.fromkeys(names, 1.0)
    if weights is None:
        return out
    if not isinstance(weights, Mapping):
        raise TypeError(f"retriever_weights must be a dict name -> weight (got {type(weights).__name__})")
    for name, weight in weights.items():
        if name not in out:
            raise InvalidSetting(
                f"retriever_weights names {name!r}, which is not a retriever; "
                f"the retrievers are {', '.join(map(repr, out))}"
            )
        out[name] = check_float("weight", weight, f"retriever_weights[{name!r}]")
    return out


def _checked_variants(variants: object) -> Sequence[str] | None:
    if variants is None:
        return None
    if isinstance(variants, str) or not isinstance(variants, Sequence):
        raise TypeError(f"variants must be a list of str or None (got {type(variants).__name__})")
    for i, text in enumerate(variants):
        if not isinstance(text, str):
            raise TypeError(f"variants[{i}] must be a str (got {type(text).__name__})")
        check_unicode(f"variants[{i}]", text)
    return variants


def list_weights(
    chosen: Sequence[Variant],
    by_variant: list[float],
    reads_plain: bool,
    skipped: frozenset[str],
    weighted: bool,
) -> list[float]:
    """One retriever's weight for each variant's list, before its retriever weight.

    A plain-text-only variant's list on a retriever that reads query syntax weighs 0, as does a
    variant whose source the retriever skips: neither is searched. A skipped variant's weight goes
    to the question's list of that retriever (when the search weighs its lists at all): what such a
    retriever would find for a word list is mostly what it finds for the question, so its share of
    the fusion stays what it would be were it searched."""
    weights = list(by_variant)
    for i, v in enumerate(chosen):
        if i == 0:
            continue
        if v.plain_only and not reads_plain:
            weights[i] = 0.0
        elif v.source in skipped:
            if weighted:
                weights[0] += weights[i]
            weights[i] = 0.0
    return weights
