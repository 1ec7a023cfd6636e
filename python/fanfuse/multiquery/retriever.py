"""``MultiQueryRetriever``: expand a question, search every variant with every retriever at once,
fuse the lists in one Rust call, optionally rerank, and explain the result.

Construction checks every setting (arguments first, then ``FANFUSE_*`` environment variables); each
``search``/``asearch`` call may override them. With expansion off a search is one branch per
retriever and nothing else: no expander call, no extra lists.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Hashable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from fanfuse._core import FusionError
from fanfuse.multiquery._portal import run_sync
from fanfuse.multiquery.cache import VariantCache
from fanfuse.multiquery.config import (
    MAX_VARIANTS_LIMIT,
    MultiQueryConfig,
    check_max_variants,
    check_min_score,
    check_optional_positive_int,
    check_positive_float,
    check_positive_int,
    check_variant_weights,
    check_weight,
    variant_weight,
)
from fanfuse.multiquery.diagnostics import (
    AllBranchesFailed,
    Diagnostics,
    ExpansionReport,
    FusedHit,
    SearchResult,
    VariantReport,
)
from fanfuse.multiquery.expanders import Expander, Expansion, HeuristicExpander, Variant, assemble_variants
from fanfuse.multiquery.fanout import Branch, BranchOutcome, fan_out, fan_out_sync
from fanfuse.multiquery.fusion import fuse_outcomes
from fanfuse.multiquery.llm import LLMExpander, check_strategy
from fanfuse.multiquery.named import named_retrievers
from fanfuse.multiquery.rerank import Reranker, check_reranker, is_async_reranker, rerank, rerank_sync
from fanfuse.retrievers.base import AsyncRetriever, Retriever

__all__ = ["MultiQueryRetriever"]

AnyRetriever = Retriever | AsyncRetriever

logger = logging.getLogger("fanfuse.multiquery")


@dataclass(slots=True)
class _Plan:
    """One search call's settings, checked, with the instance's defaults filled in."""

    query: str
    top_k: int
    expansion: bool
    max_variants: int | None
    filter: Mapping[str, Any] | None
    variants: Sequence[str] | None
    strategy: str | None
    variant_weights: list[float]
    retriever_weights: dict[str, float]
    branch_k: int
    reranker: Reranker | None
    rerank_window: int
    return_k: int
    min_score: float | None


class MultiQueryRetriever:
    """Multi-query retrieval over one or more retrievers (``fanfuse.retrievers.base`` protocol).

    Args:
        retrievers: a retriever, a list of them (named by their ``name`` attribute or class name), or a
            dict name -> retriever. Each has ``search(query, k, filter=None)``, sync or ``async def``.
        expander: where variants come from (default: ``HeuristicExpander``).
        k: the RRF constant (60 as Elasticsearch and ranx).
        top_k: hits returned per search.
        expansion, max_variants: override ``FANFUSE_QUERY_EXPANSION`` / ``FANFUSE_MAX_QUERY_VARIANTS``.
        strategy: the expander strategy (``LLMExpander``: paraphrase, entity, stepback, decompose).
        variant_weights: fusion weight of variant i is ``variant_weights[i]``, the last entry repeating
            (``[2.0, 1.0]``: the original counts double). Default: all 1.
        retriever_weights: name -> weight (default 1). A list's weight = variant weight x retriever weight.
        branch_k: hits asked of each branch (default 2 x top_k, or the rerank window if larger).
        reranker: ``reranker(query, hits) -> scores`` over the first ``rerank_window`` fused hits
            (default branch_k); the first ``return_k`` (default top_k) come back.
        min_score: drop hits scoring below it (the rerank score when reranked, else the fused score).
        max_concurrency: branches of one search running at once. branch_timeout: seconds per branch
            (None: no limit). max_workers: threads for sync retrievers and rerankers.
        cache: a ``VariantCache`` for expansions (e.g. of an ``LLMExpander``); None: no caching.
        environ: read settings from this mapping instead of ``os.environ`` (tests, embedding).
    """

    def __init__(
        self,
        retrievers: AnyRetriever | Sequence[AnyRetriever] | Mapping[str, AnyRetriever],
        *,
        expander: Expander | None = None,
        k: float = 60.0,
        top_k: int = 10,
        expansion: bool | None = None,
        max_variants: int | None = None,
        strategy: str | None = None,
        variant_weights: Sequence[float] | None = None,
        retriever_weights: Mapping[str, float] | None = None,
        branch_k: int | None = None,
        reranker: Reranker | None = None,
        rerank_window: int | None = None,
        return_k: int | None = None,
        min_score: float | None = None,
        max_concurrency: int = 16,
        branch_timeout: float | None = 10.0,
        max_workers: int = 32,
        cache: VariantCache | None = None,
        environ: Mapping[str, str] | None = None,
    ):
        self._retrievers = named_retrievers(retrievers)
        if max_variants is not None:
            check_max_variants(max_variants)
        if expansion is not None and not isinstance(expansion, bool):
            raise TypeError(f"expansion must be a bool or None (got {type(expansion).__name__})")
        self.config = MultiQueryConfig.from_env(environ, expansion=expansion, max_variants=max_variants)
        if expander is not None and not isinstance(expander, Expander):
            raise TypeError(
                f"expander must be an Expander (got {type(expander).__name__}); "
                "wrap a function in CallableExpander"
            )
        self.expander: Expander = expander or HeuristicExpander(max_variants=MAX_VARIANTS_LIMIT)
        self.k = check_positive_float(k, "k")
        self.top_k = check_positive_int(top_k, "top_k")
        if strategy is not None and isinstance(self.expander, LLMExpander):
            check_strategy(strategy)
        self.strategy = strategy
        self.variant_weights = check_variant_weights(variant_weights)
        self.retriever_weights = self._retriever_weights(retriever_weights)
        self.branch_k = check_optional_positive_int(branch_k, "branch_k")
        self.reranker = check_reranker(reranker)
        self.rerank_window = check_optional_positive_int(rerank_window, "rerank_window")
        self.return_k = check_optional_positive_int(return_k, "return_k")
        self.min_score = check_min_score(min_score)
        self.max_concurrency = check_positive_int(max_concurrency, "max_concurrency")
        self.branch_timeout = (
            None if branch_timeout is None else check_positive_float(branch_timeout, "branch_timeout")
        )
        if cache is not None and not isinstance(cache, VariantCache):
            raise TypeError(f"cache must be a VariantCache or None (got {type(cache).__name__})")
        self.cache = cache
        self._executor = ThreadPoolExecutor(
            max_workers=check_positive_int(max_workers, "max_workers"), thread_name_prefix="fanfuse-branch"
        )

    @property
    def retriever_names(self) -> list[str]:
        return [r.name for r in self._retrievers]

    def close(self) -> None:
        """Stop the thread pool (threads still running a timed-out branch finish on their own)."""
        self._executor.shutdown(wait=False)

    def __enter__(self) -> MultiQueryRetriever:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def search(
        self,
        query: str,
        *,
        top_k: int | None = None,
        expansion: bool | None = None,
        max_variants: int | None = None,
        filter: Mapping[str, Any] | None = None,
        variants: Sequence[str] | None = None,
        strategy: str | None = None,
        variant_weights: Sequence[float] | None = None,
        retriever_weights: Mapping[str, float] | None = None,
        branch_k: int | None = None,
        reranker: Reranker | None = None,
        rerank_window: int | None = None,
        return_k: int | None = None,
        min_score: float | None = None,
    ) -> SearchResult:
        """Synchronous ``asearch``: safe from any thread, including one running an event loop.

        With expansion off and only sync retrievers (and reranker), no event loop is involved: the
        branches run in the thread pool, or, for a single branch without ``branch_timeout``, right in
        the calling thread. Otherwise the search runs on a shared background event loop.
        """
        started = time.perf_counter()
        plan = self._plan(
            query, top_k, expansion, max_variants, filter, variants, strategy, variant_weights,
            retriever_weights, branch_k, reranker, rerank_window, return_k, min_score,
        )  # fmt: skip
        if not self._loop_free(plan):
            return run_sync(self._asearch(plan, started))
        chosen, report = self._fixed_variants(plan) or self._expand_sync(plan)
        branches = self._branches(plan, chosen)
        if len(branches) > self.max_concurrency:  # the pool alone would not bound this search
            return run_sync(self._asearch_variants(plan, started, chosen, report))
        outcomes = fan_out_sync(
            branches,
            k=plan.branch_k,
            filter=plan.filter,
            timeout=self.branch_timeout,
            executor=self._executor,
            started=started,
        )
        hits, fusion_ms = self._fuse(plan, outcomes)
        rerank_start = time.perf_counter()
        rerank_error = None
        if plan.reranker is not None:
            hits, rerank_error = rerank_sync(plan.reranker, plan.query, hits)
        rerank_ms = (time.perf_counter() - rerank_start) * 1e3
        return self._result(plan, started, chosen, report, outcomes, hits, fusion_ms, rerank_ms, rerank_error)

    async def asearch(
        self,
        query: str,
        *,
        top_k: int | None = None,
        expansion: bool | None = None,
        max_variants: int | None = None,
        filter: Mapping[str, Any] | None = None,
        variants: Sequence[str] | None = None,
        strategy: str | None = None,
        variant_weights: Sequence[float] | None = None,
        retriever_weights: Mapping[str, float] | None = None,
        branch_k: int | None = None,
        reranker: Reranker | None = None,
        rerank_window: int | None = None,
        return_k: int | None = None,
        min_score: float | None = None,
    ) -> SearchResult:
        """Search ``query``: every argument left None follows the instance's setting.

        ``variants`` gives this call's variants explicitly (the original query first, then these; the
        expander is skipped; ``max_variants`` cuts them only when passed). Raises ``AllBranchesFailed``
        (a ``FusionError``) only when every branch failed; otherwise failed branches are reported in
        ``result.diagnostics.branches`` and the others are fused.
        """
        started = time.perf_counter()
        plan = self._plan(
            query, top_k, expansion, max_variants, filter, variants, strategy, variant_weights,
            retriever_weights, branch_k, reranker, rerank_window, return_k, min_score,
        )  # fmt: skip
        return await self._asearch(plan, started)

    async def _asearch(self, plan: _Plan, started: float) -> SearchResult:
        chosen, report = self._fixed_variants(plan) or await self._expand(plan)
        return await self._asearch_variants(plan, started, chosen, report)

    async def _asearch_variants(
        self, plan: _Plan, started: float, chosen: tuple[Variant, ...], report: ExpansionReport
    ) -> SearchResult:
        outcomes = await fan_out(
            self._branches(plan, chosen),
            k=plan.branch_k,
            filter=plan.filter,
            timeout=self.branch_timeout,
            limit=self.max_concurrency,
            executor=self._executor,
            started=started,
        )
        hits, fusion_ms = self._fuse(plan, outcomes)
        rerank_start = time.perf_counter()
        rerank_error = None
        if plan.reranker is not None:
            hits, rerank_error = await rerank(plan.reranker, plan.query, hits, self._executor)
        rerank_ms = (time.perf_counter() - rerank_start) * 1e3
        return self._result(plan, started, chosen, report, outcomes, hits, fusion_ms, rerank_ms, rerank_error)

    def _plan(
        self,
        query: str,
        top_k: int | None,
        expansion: bool | None,
        max_variants: int | None,
        filter: Mapping[str, Any] | None,
        variants: Sequence[str] | None,
        strategy: str | None,
        variant_weights: Sequence[float] | None,
        retriever_weights: Mapping[str, float] | None,
        branch_k: int | None,
        reranker: Reranker | None,
        rerank_window: int | None,
        return_k: int | None,
        min_score: float | None,
    ) -> _Plan:
        """One call's settings: the call's arguments checked, the instance's where they are None."""
        if not isinstance(query, str):
            raise TypeError(f"query must be a str (got {type(query).__name__})")
        if not query.strip():
            raise FusionError("query must be a non-empty string")
        if expansion is not None and not isinstance(expansion, bool):
            raise TypeError(f"expansion must be a bool or None (got {type(expansion).__name__})")
        if max_variants is not None:
            check_max_variants(max_variants)
        if variants is not None:
            if isinstance(variants, str) or not isinstance(variants, Sequence):
                raise TypeError(f"variants must be a list of str or None (got {type(variants).__name__})")
            for i, text in enumerate(variants):
                if not isinstance(text, str):
                    raise TypeError(f"variants[{i}] must be a str (got {type(text).__name__})")
        top_k = self.top_k if top_k is None else check_positive_int(top_k, "top_k")
        window = check_optional_positive_int(rerank_window, "rerank_window") or self.rerank_window
        branch_k = (
            check_optional_positive_int(branch_k, "branch_k") or self.branch_k or max(2 * top_k, window or 0)
        )
        return _Plan(
            query=query,
            top_k=top_k,
            expansion=self.config.expansion if expansion is None else expansion,
            max_variants=max_variants,
            filter=filter,
            variants=variants,
            strategy=self.strategy if strategy is None else strategy,
            variant_weights=self.variant_weights
            if variant_weights is None
            else check_variant_weights(variant_weights),
            retriever_weights=(
                self.retriever_weights
                if retriever_weights is None
                else self._retriever_weights(retriever_weights)
            ),
            branch_k=branch_k,
            reranker=self.reranker if reranker is None else check_reranker(reranker),
            rerank_window=window or branch_k,
            return_k=check_optional_positive_int(return_k, "return_k") or self.return_k or top_k,
            min_score=self.min_score if min_score is None else check_min_score(min_score),
        )

    def _fixed_variants(self, plan: _Plan) -> tuple[tuple[Variant, ...], ExpansionReport] | None:
        """The variants when no expander is needed (given explicitly, or expansion off); else None."""
        if plan.variants is not None:
            limit = plan.max_variants if plan.max_variants is not None else len(plan.variants) + 1
            return assemble_variants(plan.query, plan.variants, limit, "explicit"), ExpansionReport(
                "explicit"
            )
        limit = self.config.max_variants if plan.max_variants is None else plan.max_variants
        if not plan.expansion or limit == 1:
            return (Variant(plan.query, "original"),), ExpansionReport("none")
        return None

    def _loop_free(self, plan: _Plan) -> bool:
        """Whether a sync search can skip the event loop: sync retrievers, reranker and expander."""
        return (
            not any(r.is_async for r in self._retrievers)
            and (plan.reranker is None or not is_async_reranker(plan.reranker))
            and (self.expander.sync_capable or self._fixed_variants(plan) is not None)
        )

    async def _expand(self, plan: _Plan) -> tuple[tuple[Variant, ...], ExpansionReport]:
        begin = time.perf_counter()
        limit, cache_key, cached = self._cached(plan)
        result = cached or await self.expander.aexpand(plan.query, max_variants=limit, strategy=plan.strategy)
        return self._expanded(limit, cache_key, cached, result, begin)

    def _expand_sync(self, plan: _Plan) -> tuple[tuple[Variant, ...], ExpansionReport]:
        begin = time.perf_counter()
        limit, cache_key, cached = self._cached(plan)
        result = cached or self.expander.expand(plan.query, max_variants=limit, strategy=plan.strategy)
        return self._expanded(limit, cache_key, cached, result, begin)

    def _cached(self, plan: _Plan) -> tuple[int, Hashable | None, Expansion | None]:
        """The variant budget, the cache key (None: not cached) and the cached expansion if any."""
        limit = self.config.max_variants if plan.max_variants is None else plan.max_variants
        if self.cache is None:
            return limit, None, None
        expander_key = self.expander.cache_key()
        if expander_key is None:
            return limit, None, None
        key = VariantCache.key(expander_key, plan.strategy, limit, plan.query)
        return limit, key, self.cache.get(key)

    def _expanded(
        self, limit: int, key: Hashable | None, cached: Expansion | None, result: Expansion, begin: float
    ) -> tuple[tuple[Variant, ...], ExpansionReport]:
        if key is not None and cached is None and self.cache is not None:
            self.cache.put(key, result)
        report = ExpansionReport(
            expander=self.expander.name,
            cached=cached is not None,
            fallback_reason=result.fallback_reason,
            note=result.note,
            elapsed_ms=(time.perf_counter() - begin) * 1e3,
        )
        return result.variants[:limit], report

    def _branches(self, plan: _Plan, chosen: Sequence[Variant]) -> list[Branch]:
        v_weights, r_weights = plan.variant_weights, plan.retriever_weights
        return [
            Branch(
                i, v.text, r.name, r.retriever, r.is_async, variant_weight(v_weights, i) * r_weights[r.name]
            )
            for i, v in enumerate(chosen)
            for r in self._retrievers
        ]

    def _fuse(self, plan: _Plan, outcomes: list[BranchOutcome]) -> tuple[list[FusedHit], float]:
        if all(o.hits is None for o in outcomes):
            reports = [o.report for o in outcomes]
            errors = "; ".join(f"{b.retriever}[{b.variant_index}]: {b.error}" for b in reports)
            raise AllBranchesFailed(f"all {len(outcomes)} branches failed: {errors}", reports)
        start = time.perf_counter()
        hits = fuse_outcomes(outcomes, k=self.k, top_k=plan.rerank_window if plan.reranker else plan.top_k)
        return hits, (time.perf_counter() - start) * 1e3

    def _result(
        self,
        plan: _Plan,
        started: float,
        chosen: Sequence[Variant],
        report: ExpansionReport,
        outcomes: list[BranchOutcome],
        hits: list[FusedHit],
        fusion_ms: float,
        rerank_ms: float,
        rerank_error: str | None,
    ) -> SearchResult:
        if plan.reranker is not None:
            hits = hits[: plan.return_k]
        if plan.min_score is not None:
            floor = plan.min_score
            hits = [h for h in hits if (h.score if h.rerank_score is None else h.rerank_score) >= floor]
        weights = plan.variant_weights
        diagnostics = Diagnostics(
            variants=[
                VariantReport(v.text, v.source, variant_weight(weights, i)) for i, v in enumerate(chosen)
            ],
            expansion=report,
            branches=[o.report for o in outcomes],
            fusion_ms=fusion_ms,
            rerank_ms=rerank_ms,
            total_ms=(time.perf_counter() - started) * 1e3,
            rerank_error=rerank_error,
        )
        if logger.isEnabledFor(logging.INFO):
            logger.info("multi-query search: %s", diagnostics.summary())
        return SearchResult(query=plan.query, hits=hits, diagnostics=diagnostics)

    def _retriever_weights(self, weights: Mapping[str, float] | None) -> dict[str, float]:
        out = dict.fromkeys(self.retriever_names, 1.0)
        if weights is None:
            return out
        if not isinstance(weights, Mapping):
            raise TypeError(f"retriever_weights must be a dict name -> weight (got {type(weights).__name__})")
        for name, weight in weights.items():
            if name not in out:
                raise FusionError(
                    f"retriever_weights names {name!r}, which is not a retriever; "
                    f"the retrievers are {', '.join(map(repr, out))}"
                )
            out[name] = check_weight(weight, f"retriever_weights[{name!r}]")
        return out

    def __repr__(self) -> str:
        return (
            f"MultiQueryRetriever(retrievers={self.retriever_names}, expander={self.expander!r}, "
            f"expansion={self.config.expansion}, max_variants={self.config.max_variants}, k={self.k:g})"
        )
