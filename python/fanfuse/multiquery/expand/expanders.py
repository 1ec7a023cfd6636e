"""Query expanders: one question in, a few query variants out, the original always first.

An expander has ``expand`` (sync) and ``aexpand`` (async); both return an ``Expansion``. The ones here
need no network: ``HeuristicExpander`` rewrites the words, ``StaticExpander`` looks variants up,
``CallableExpander`` wraps a user function, ``CombinedExpander`` chains expanders.
``FeedbackExpander`` (in ``feedback.py``) searches an index first; ``LLMExpander`` (in ``llm.py``)
asks a chat model.
"""

from __future__ import annotations

import asyncio
import inspect
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable, Hashable, Iterable, Mapping, Sequence
from typing import Any, Literal, get_args

from fanfuse._panics import is_failure
from fanfuse.limits import check_choice
from fanfuse.multiquery.config import DEFAULT_MAX_VARIANTS, check_max_variants, check_words
from fanfuse.multiquery.conversation import ROLES, History
from fanfuse.multiquery.expand.calls import (
    EXPANDER_THREADS,
    budget_checked,
    calling_expand,
    given_to,
    in_context,
    takes_keyword,
)
from fanfuse.multiquery.expand.expansion import (
    Expansion,
    Variant,
    assemble_variants,
    dedupe_key,
    original_only,
    wrong_answer,
)
from fanfuse.multiquery.expand.words import STOPWORDS, content_words, query_term

__all__ = [
    "CallableExpander",
    "CombinedExpander",
    "DefaultOperator",
    "Expander",
    "Expansion",
    "HeuristicExpander",
    "StaticExpander",
    "Variant",
    "assemble_variants",
    "original_only",
]


class Expander(ABC):
    """The expander protocol. Subclasses implement ``expand``; ``aexpand`` defaults to calling it
    directly, which is right for expanders that never block (override it for ones that do I/O).

    Every subclass's ``expand`` and ``aexpand`` check ``max_variants`` (1..5) before they run, and that
    they return an ``Expansion`` of ``Variant`` s (else a ``TypeError`` naming the subclass): the checks
    are wrapped around them when the subclass is defined, so no expander, built in or not, can be asked
    for more variants than a search may use, or hand a search what it cannot read.

    ``history`` is the conversation before the query (``conversation.py``: checked, oldest first), the
    most recent turns of the roles in ``history_roles`` within the conversation's budget. An expander
    whose ``expand`` / ``aexpand`` takes no ``history`` parameter is still called, without it: it
    expands the query alone. So with ``filter``, the search's metadata filter: an expander that searches
    (pseudo-relevance feedback) takes it, so that its variants come from the documents the search may
    return; one written without it is called without it (``reads_filter`` says which). So with
    ``strategy``: one written without it is called without it, and a search that names a strategy
    for it is refused (``strategies``).
    """

    #: Short name shown in diagnostics.
    name: str = "expander"
    #: The roles of the conversation's turns the expander reads: only those are given to it, and only
    #: those count against the conversation's budget. Every role unless a subclass says otherwise;
    #: none for one whose methods take no ``history``.
    history_roles: tuple[str, ...] = ROLES
    #: Whether ``expand`` works (a sync search without an event loop calls it in the caller's thread).
    sync_capable: bool = True
    #: The ``strategy`` names ``expand`` reads: a search refuses a strategy for an expander that reads
    #: none (``()``, as for one whose methods take no ``strategy``, which are called without it). None
    #: (a subclass that takes it and does not say which) passes any on.
    strategies: tuple[str, ...] | None = None
    #: Whether ``expand`` reads the search's ``filter`` (its variants then depend on it): true where a
    #: subclass's methods take it.
    reads_filter: bool = False
    #: Whether the expander may block for as long as what it calls takes (a model, a service): true for
    #: an expander of one's own. Then a sync ``expand`` runs in a worker thread under ``asearch``,
    #: never on the event loop, and a search waits for the expansion at most its ``branch_timeout``,
    #: then goes on with the original query (``fallback_reason`` says it timed out). The built-in
    #: expanders return promptly (rules; one search of the feedback index) or keep a deadline of
    #: their own (``LLMExpander``'s ``timeout``), and run inline.
    blocking: bool = True

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        written = [cls.__dict__[m] for m in ("expand", "aexpand") if m in cls.__dict__]
        reads = any(takes_keyword(method, "history") for method in written)
        if "history_roles" not in cls.__dict__ and written and not reads:
            cls.history_roles = ()
        if "reads_filter" not in cls.__dict__ and written:
            cls.reads_filter = any(takes_keyword(method, "filter") for method in written)
        takes_strategy = any(takes_keyword(method, "strategy") for method in written)
        if "strategies" not in cls.__dict__ and written and not takes_strategy:
            cls.strategies = ()  # a search's strategy is refused for it, not dropped unread
        if "expand" in cls.__dict__ and "aexpand" not in cls.__dict__ and cls.reads_filter:
            # The inherited aexpand calls expand directly: this one passes the filter on too.
            cls.aexpand = calling_expand  # type: ignore[method-assign]
        for method in ("expand", "aexpand"):
            if method in cls.__dict__:
                setattr(cls, method, budget_checked(cls.__dict__[method], method, wrong_answer))

    @abstractmethod
    def expand(
        self, query: str, *, max_variants: int, strategy: str | None = None, history: History = ()
    ) -> Expansion:
        """Variants of ``query``, at most ``max_variants`` including the original (first)."""

    async def aexpand(
        self, query: str, *, max_variants: int, strategy: str | None = None, history: History = ()
    ) -> Expansion:
        asked = {"max_variants": max_variants, "strategy": strategy, "history": history}
        expansion: Expansion = await calling_expand(self, query, **asked)
        return expansion

    def cache_key(self) -> Hashable | None:
        """The settings that determine this expander's output (part of the variant cache key), or
        None when its output must not be cached."""
        return None


#: How a backend combines the words of a plain query (``HeuristicExpander``'s ``default_operator``).
DefaultOperator = Literal["or", "and"]
DEFAULT_OPERATORS: tuple[DefaultOperator, ...] = get_args(DefaultOperator)


class HeuristicExpander(Expander):
    """Rewrites without a model, in microseconds; every variant must find a list of its own.

    The variant is the question's content words (see ``content_words``), emitted only when that
    changes the query: BM25 scores stopwords too, so their removal reorders the list. Code symbols and
    quoted spans become quoted phrases, and a name that starts with a stopword ("the with
    statement") is added as a phrase too. ``default_operator`` says how the backend combines the words
    of a plain query: ``"or"`` (BM25 engines such as Tantivy and Elasticsearch, dense retrievers)
    or ``"and"`` (engines that require every word, such as SQLite FTS5); only with ``"and"`` is the
    content words joined by ``OR`` a variant of its own, since on an OR backend it returns the
    content-word list again. ``max_variants`` counts the original.
    """

    name = "heuristic"
    strategies = ()
    history_roles = ()
    blocking = False

    def __init__(
        self,
        max_variants: int = DEFAULT_MAX_VARIANTS,
        *,
        stopwords: Iterable[str] | None = None,
        default_operator: DefaultOperator = "or",
    ):
        self.max_variants = check_max_variants(max_variants)
        self.stopwords = STOPWORDS if stopwords is None else check_words(stopwords, "stopwords")
        self.default_operator = check_choice("default_operator", default_operator, DEFAULT_OPERATORS)

    def expand(
        self,
        query: str,
        *,
        max_variants: int | None = None,
        strategy: str | None = None,
        history: History = (),
    ) -> Expansion:
        limit = self.max_variants if max_variants is None else min(max_variants, self.max_variants)
        return Expansion(assemble_variants(query, self.candidates(query), limit, "heuristic"))

    def candidates(self, query: str) -> list[str]:
        found = content_words(query, self.stopwords)
        terms = [query_term(w) for w in found.words]
        out = []
        if terms and len(terms) < found.total:  # only when dropping stopwords changes the query
            # A name such as "with statement" also as a phrase: its words alone are too common.
            out.append(" ".join(terms + [query_term(f'"{name}"') for name in found.names]))
        if self.default_operator == "and":
            # A term repeated in the question ("file path ... file name") adds nothing to an OR query.
            first_spelling: dict[str, str] = {}
            for term in terms:
                first_spelling.setdefault(term.casefold(), term)
            if len(first_spelling) >= 2:
                out.append(" OR ".join(first_spelling.values()))
        return out

    def cache_key(self) -> Hashable:
        return ("heuristic", self.max_variants, self.stopwords, self.default_operator)

    def __repr__(self) -> str:
        return (
            f"HeuristicExpander(max_variants={self.max_variants}, default_operator={self.default_operator!r})"
        )


class StaticExpander(Expander):
    """Variants already known, looked up by the exact query text (e.g. the rewrite of a conversational
    turn). A query not in the mapping gets only itself."""

    name = "static"
    blocking = False
    history_roles = ()
    strategies = ()

    def __init__(self, mapping: Mapping[str, str | Sequence[str]]):
        if not isinstance(mapping, Mapping):
            raise TypeError(
                f"mapping must be a Mapping of query -> variant(s) (got {type(mapping).__name__})"
            )
        self.mapping = {q: (v,) if isinstance(v, str) else tuple(v) for q, v in mapping.items()}

    def expand(
        self, query: str, *, max_variants: int, strategy: str | None = None, history: History = ()
    ) -> Expansion:
        return Expansion(assemble_variants(query, self.mapping.get(query, ()), max_variants, "static"))


class CombinedExpander(Expander):
    """Several expanders' variants in one expansion: the original, then each expander's variants in
    the order given (e.g. ``[HeuristicExpander(), FeedbackExpander(index)]``), duplicates dropped and
    cut to ``max_variants``. A part that fails (or raises) is skipped and its reason kept. ``expand``
    asks the parts in turn and stops once the budget is full (a later part's variants would be cut);
    ``aexpand`` asks them all at once."""

    name = "combined"

    def __init__(self, expanders: Sequence[Expander]):
        if isinstance(expanders, Expander) or not isinstance(expanders, Sequence) or not expanders:
            raise TypeError("expanders must be a non-empty list of Expander")
        for i, expander in enumerate(expanders):
            if not isinstance(expander, Expander):
                raise TypeError(f"expanders[{i}] must be an Expander (got {type(expander).__name__})")
        self.expanders = tuple(expanders)
        self.name = "+".join(e.name for e in self.expanders)
        # Each part is given the turns any part reads, within one budget.
        self.history_roles = tuple(r for r in ROLES if any(r in e.history_roles for e in self.expanders))
        self.sync_capable = all(e.sync_capable for e in self.expanders)
        # Any part's strategies; not said if a part does not say.
        reads = [e.strategies for e in self.expanders]
        self.strategies = None if None in reads else tuple(dict.fromkeys(n for r in reads for n in r or ()))
        self.reads_filter = any(e.reads_filter for e in self.expanders)
        self.blocking = any(e.blocking for e in self.expanders)

    def expand(
        self,
        query: str,
        *,
        max_variants: int,
        strategy: str | None = None,
        history: History = (),
        filter: Mapping[str, Any] | None = None,
    ) -> Expansion:
        parts: list[Expansion | BaseException] = []
        for expander in self.expanders:
            if parts and len(self._combine(query, parts, max_variants).variants) >= max_variants:
                break
            asked = {"strategy": strategy, "history": history, **given_to(expander, filter)}
            try:
                parts.append(expander.expand(query, max_variants=max_variants, **asked))
            except BaseException as exc:  # one part failing must not fail the others or the search
                if not is_failure(exc):
                    raise
                parts.append(exc)
        return self._combine(query, parts, max_variants)

    async def aexpand(
        self,
        query: str,
        *,
        max_variants: int,
        strategy: str | None = None,
        history: History = (),
        filter: Mapping[str, Any] | None = None,
    ) -> Expansion:
        asked = [{"strategy": strategy, "history": history, **given_to(e, filter)} for e in self.expanders]
        parts = await asyncio.gather(
            *(
                e.aexpand(query, max_variants=max_variants, **a)
                for e, a in zip(self.expanders, asked, strict=True)
            ),
            return_exceptions=True,
        )
        return self._combine(query, parts, max_variants)

    def _combine(
        self, query: str, parts: Sequence[Expansion | BaseException], max_variants: int
    ) -> Expansion:
        variants = [Variant(query, "original")]
        seen = {dedupe_key(query)}
        reasons, notes = [], []
        for expander, part in zip(self.expanders, parts, strict=False):  # parts: the ones asked
            if isinstance(part, BaseException):
                if not is_failure(part):  # cancellation and exits go on up
                    raise part
                reasons.append(f"{expander.name}: {type(part).__name__}: {part}")
                continue
            reasons += [part.fallback_reason] if part.fallback_reason else []
            notes += [part.note] if part.note else []
            for variant in (v for v in part.variants if v.source != "original"):
                key = dedupe_key(variant.text)
                if len(variants) < max_variants and key and key not in seen:
                    seen.add(key)
                    variants.append(variant)
        return Expansion(
            tuple(variants), fallback_reason="; ".join(reasons) or None, note="; ".join(notes) or None
        )

    def cache_key(self) -> Hashable | None:
        keys = tuple(e.cache_key() for e in self.expanders)
        return None if any(k is None for k in keys) else ("combined", keys)

    def __repr__(self) -> str:
        return f"CombinedExpander({list(self.expanders)!r})"


ExpandFunction = Callable[[str, int], Sequence[str] | Awaitable[Sequence[str]]]


class CallableExpander(Expander):
    """A user function ``fn(query, max_variants) -> list[str]`` (sync or ``async def``) as an expander.

    The function may or may not repeat the original; the result is normalized either way. If it raises,
    the search goes on with the original query alone and the diagnostics give the reason.
    A sync function runs on the calling thread in ``expand`` and in the expanders' threads in
    ``aexpand``, with the caller's context variables. A search with a ``branch_timeout`` calls it in
    those threads either way (``Expander.blocking``): a resource bound to one thread (a SQLite
    connection) is then opened in the function, or the search sets no ``branch_timeout``.
    """

    name = "callable"
    history_roles = ()
    strategies = ()

    def __init__(self, fn: ExpandFunction):
        if not callable(fn):
            raise TypeError(f"fn must be callable as fn(query, max_variants) (got {type(fn).__name__})")
        self.fn = fn
        self._is_async = inspect.iscoroutinefunction(fn)
        self.sync_capable = not self._is_async

    def expand(
        self, query: str, *, max_variants: int, strategy: str | None = None, history: History = ()
    ) -> Expansion:
        if self._is_async:
            raise TypeError("CallableExpander wraps an async function: use aexpand (or MultiQueryRetriever)")
        try:
            result = self.fn(query, max_variants)
        except BaseException as exc:  # a user function failing must not fail the search
            if not is_failure(exc):
                raise
            return original_only(query, exc)
        return self._finish(query, result, max_variants)

    async def aexpand(
        self, query: str, *, max_variants: int, strategy: str | None = None, history: History = ()
    ) -> Expansion:
        try:
            if self._is_async:
                result = await self.fn(query, max_variants)  # type: ignore[misc]
            else:
                result = await EXPANDER_THREADS.call(in_context(self.fn, query, max_variants), None)
        except BaseException as exc:
            if not is_failure(exc):
                raise
            return original_only(query, exc)
        return self._finish(query, result, max_variants)

    def cache_key(self) -> Hashable | None:
        """The function itself: a cache given to the search holds what it returned for a query (an
        unhashable callable object is not cached)."""
        try:
            hash(self.fn)
        except TypeError:
            return None
        return ("callable", self.fn)

    def _finish(self, query: str, result: object, max_variants: int) -> Expansion:
        if isinstance(result, str) or not isinstance(result, Sequence):
            reason = f"expander function returned {type(result).__name__}, expected a list of str"
            return Expansion((Variant(query, "original"),), fallback_reason=reason)
        texts = [t for t in result if isinstance(t, str)]
        others = sorted({type(t).__name__ for t in result if not isinstance(t, str)})
        if others and not texts:
            reason = f"expander function returned a list of {', '.join(others)}, expected a list of str"
            return Expansion((Variant(query, "original"),), fallback_reason=reason)
        dropped = len(result) - len(texts)
        note = f"dropped {dropped} item(s) that were not str ({', '.join(others)})" if dropped else None
        return Expansion(assemble_variants(query, texts, max_variants, "callable"), note=note)
