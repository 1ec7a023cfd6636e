"""Which variants a search uses: given by the call, none (expansion off), or the expander's, cached.

The cache key is the expander's ``cache_key()`` (its settings, its default strategy included), the
call's strategy, the variant budget, the query, the conversation the expander is given (the recent
turns of the roles it reads, ``conversation.recent``: how many the budget dropped is reported) and the
search's filter where the expander reads it (``Expander.reads_filter``); an expander whose key is None
is not cached, and a fallback is never stored.

A variant whose expander gave it a weight (``Variant.weight``, a share of the original query's) sets
its own list weight in the search's plan; the others keep ``variant_weights``' by position. With a
fusion method that takes no weights, the expander's weights are left out.

An expander that fails (raises, panics in compiled code, or returns something that is not an
``Expansion``), built in or the caller's own, leaves the search the original query alone and the
reason in its report, as the built-in ones do for a model or an index that fails: a broken expander
costs the variants, not the search. The search's own options are checked before it is called, so what
the call raises is always the expander's failure.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Hashable
from concurrent.futures import wait
from dataclasses import dataclass
from typing import Any

from fanfuse._panics import is_failure
from fanfuse.limits import check_choice
from fanfuse.multiquery.config import MultiQueryConfig, variant_weight
from fanfuse.multiquery.conversation import History, recent
from fanfuse.multiquery.diagnostics import ExpansionReport
from fanfuse.multiquery.expand.cache import VariantCache
from fanfuse.multiquery.expand.calls import EXPANDER_THREADS, given_to, in_context
from fanfuse.multiquery.expand.expanders import Expander, Expansion, Variant, assemble_variants, original_only
from fanfuse.multiquery.planning import Plan
from fanfuse.multiquery.workers import MissedDeadline, timeout_reason, within
from fanfuse.retrievers.filters import filter_key

__all__ = ["VariantSource"]

Chosen = tuple[tuple[Variant, ...], ExpansionReport]


@dataclass(slots=True)
class VariantSource:
    expander: Expander
    config: MultiQueryConfig
    cache: VariantCache | None
    #: The longest a search waits for a blocking expander (``Expander.blocking``); None: no limit.
    timeout: float | None

    def fixed(self, plan: Plan) -> Chosen | None:
        """The variants when no expander is needed (given explicitly, or expansion off); else None."""
        if plan.variants is not None:
            limit = plan.max_variants if plan.max_variants is not None else len(plan.variants) + 1
            return assemble_variants(plan.query, plan.variants, limit, "explicit"), ExpansionReport(
                "explicit"
            )
        if not plan.expansion or self._limit(plan) == 1:
            return (Variant(plan.query, "original"),), ExpansionReport("none")
        return None

    def expand_sync(self, plan: Plan) -> Chosen:
        begin = time.perf_counter()
        history, dropped = recent(plan.history, self.expander.history_roles)
        limit, key, cached = self._cached(plan, history)
        result = cached
        if result is None:
            try:
                result = self._expand_within(plan.query, self._asked(plan, limit, history))
            except BaseException as exc:
                if not is_failure(exc):  # a signal, an exit or a cancellation goes on up
                    raise
                result = original_only(plan.query, exc)
        return self._expanded(plan, limit, key, cached, result, begin, dropped)

    async def expand(self, plan: Plan) -> Chosen:
        begin = time.perf_counter()
        history, dropped = recent(plan.history, self.expander.history_roles)
        limit, key, cached = self._cached(plan, history)
        result = cached
        if result is None:
            try:
                expanding = self.expander.aexpand(plan.query, **self._asked(plan, limit, history))
                if self.expander.blocking and self.timeout is not None:
                    result = await _awaited_within(plan.query, expanding, self.timeout)
                else:
                    result = await expanding
            except BaseException as exc:
                if not is_failure(exc):  # a signal, an exit or a cancellation goes on up
                    raise
                result = original_only(plan.query, exc)
        return self._expanded(plan, limit, key, cached, result, begin, dropped)

    def _expand_within(self, query: str, asked: dict[str, Any]) -> Expansion:
        """A sync expansion: in the caller's thread, or for a blocking expander with a deadline in
        the expanders' threads, waited for at most the deadline."""
        if not self.expander.blocking or self.timeout is None:
            return self.expander.expand(query, **asked)
        future = EXPANDER_THREADS.submit(in_context(self.expander.expand, query, **asked))
        if not wait([future], self.timeout).done:
            return _timed_out(query, self.timeout, EXPANDER_THREADS.timed_out(future))
        return future.result()

    def _asked(self, plan: Plan, limit: int, history: History) -> dict[str, Any]:
        """What the expander is given besides the question (the search's filter where it reads one)."""
        asked = {"max_variants": limit, "strategy": plan.strategy, "history": history}
        return asked | given_to(self.expander, plan.filter or None)

    def _limit(self, plan: Plan) -> int:
        return self.config.max_variants if plan.max_variants is None else plan.max_variants

    def _cached(self, plan: Plan, history: History) -> tuple[int, Hashable | None, Expansion | None]:
        """The variant budget, the cache key (None: not cached) and the cached expansion if any.
        The search's strategy is checked here, before the expander runs: what its call raises is
        then the expander failing, never the search's own option refused."""
        if plan.strategy is not None and self.expander.strategies:
            check_choice("strategy", plan.strategy, self.expander.strategies)
        limit = self._limit(plan)
        expander_key = None if self.cache is None else self.expander.cache_key()
        if self.cache is None or expander_key is None:
            return limit, None, None
        if plan.filter and self.expander.reads_filter:
            expander_key = (expander_key, filter_key(plan.filter))
        key = VariantCache.key(expander_key, plan.strategy, limit, plan.query, history)
        return limit, key, self.cache.get(key)

    def _expanded(
        self,
        plan: Plan,
        limit: int,
        key: Hashable | None,
        cached: Expansion | None,
        result: Expansion,
        begin: float,
        dropped_turns: int,
    ) -> Chosen:
        note = result.note
        if key is not None and cached is None and self.cache is not None:
            self.cache.put(key, result)
        elif key is None and self.cache is not None:
            # A cache that never holds this expander's variants says so, rather than stay empty unseen.
            uncached = f"not cached: the {self.expander.name} expander gives no cache_key()"
            note = f"{note}; {uncached}" if note else uncached
        report = ExpansionReport(
            expander=self.expander.name,
            cached=cached is not None,
            fallback_reason=result.fallback_reason,
            note=note,
            elapsed_ms=(time.perf_counter() - begin) * 1e3,
            dropped_turns=dropped_turns,
        )
        chosen = result.variants[:limit]
        _weigh(plan, chosen)
        return chosen, report


async def _awaited_within(query: str, expanding: Awaitable[Expansion], timeout: float) -> Expansion:
    try:
        return await within(expanding, timeout)
    except MissedDeadline as missed:
        return _timed_out(query, timeout, missed)


def _timed_out(query: str, timeout: float, missed: MissedDeadline) -> Expansion:
    """The expansion of a blocking expander the search stopped waiting for: the original alone."""
    reason = f"the expander {timeout_reason(timeout, missed)} (branch_timeout)"
    return Expansion((Variant(query, "original"),), fallback_reason=reason)


def _weigh(plan: Plan, chosen: tuple[Variant, ...]) -> None:
    """The plan's variant weights with each expander-weighted variant's own: a share of the original's."""
    if all(v.weight is None for v in chosen) or not plan.fusion.takes_weights:
        return  # nothing to weigh, or a method without a weighted form: every list weighs 1
    weights = plan.variant_weights
    original = variant_weight(weights, 0)
    plan.variant_weights = [
        variant_weight(weights, i) if v.weight is None else original * v.weight for i, v in enumerate(chosen)
    ]
