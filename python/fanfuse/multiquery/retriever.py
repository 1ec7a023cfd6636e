"""``MultiQueryRetriever``: expand a question, search every variant with every retriever at once,
fuse the lists in one Rust call, optionally rerank, and explain the result.

Construction checks every setting (arguments first, then ``FANFUSE_*`` environment variables); each
``search``/``asearch`` call may override them (``planning.py``). With expansion off a search is one
branch per retriever and nothing else: no expander call, no extra lists. Both entry points end in the
same tail: fuse, rerank, cut, report.
"""

from __future__ import annotations

import functools
import logging
import time
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from fanfuse import _renamed
from fanfuse.choices import DuplicatePolicy, Method, Norm, TieBreak
from fanfuse.limits import check_int, optional_float, optional_int
from fanfuse.multiquery._portal import run_sync
from fanfuse.multiquery.config import (
    MultiQueryConfig,
    check_max_variants,
    check_variant_weights,
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
from fanfuse.multiquery.expand.cache import VariantCache
from fanfuse.multiquery.expand.expanders import Expander, Variant
from fanfuse.multiquery.expand.history import conversation_default
from fanfuse.multiquery.expand.llm import LLMExpander
from fanfuse.multiquery.expand.llm_prompts import check_strategy
from fanfuse.multiquery.fanout import Branch, BranchOutcome, batches_queries, fan_out, fan_out_sync
from fanfuse.multiquery.fusion import check_list_weights, checked, fuse_outcomes, is_weighted
from fanfuse.multiquery.plain_text import reads_plain_text, skipped_sources
from fanfuse.multiquery.planning import (
    SEARCH_OPTION_NAMES,
    Plan,
    SearchOptions,
    list_weights,
    make_plan,
    refuse_unread,
    weights_by_retriever,
)
from fanfuse.multiquery.rerank import (
    Reranked,
    Reranker,
    check_reranker,
    is_async_reranker,
    rerank,
    rerank_sync,
)
from fanfuse.multiquery.retriever_names import named_retrievers
from fanfuse.multiquery.variants import VariantSource
from fanfuse.multiquery.workers import Workers
from fanfuse.retrievers.base import AsyncRetriever, Retriever
from fanfuse.retrievers.filters import shared_metadata_keys

if TYPE_CHECKING:
    from typing_extensions import Unpack

__all__ = ["MultiQueryRetriever"]

AnyRetriever = Retriever | AsyncRetriever

logger = logging.getLogger("fanfuse.multiquery")


class MultiQueryRetriever:
    """Multi-query retrieval over one or more retrievers (``fanfuse.retrievers.base`` protocol).

    Args:
        retrievers: a retriever, a list of them (named by their ``name`` attribute or class name), or a
            dict name -> retriever. Each has ``search(query, k, filter=None)``, sync or ``async def``.
        expander: where variants come from (default: ``conversation_default()``, the joined reading
            of a conversation and the content words: ``HistoryExpander()`` then ``HeuristicExpander``).
        method: the fusion method, any of ``fanfuse.fuse``'s (default ``rrf``); score methods
            (``combsum``, ``dbsf``, ...) fuse the scores the retrievers return.
        rrf_k: the RRF constant (``fanfuse.fuse``'s ``k``; how many hits come back is ``top_k``). norm,
            phi, sigma, gamma: ``fanfuse.fuse``'s normalisation (score
            methods) and method parameters. Every fusion option left None takes the default of
            ``fanfuse.FusionOptions``; the checked value is ``self.fusion``.
        tie_break: order of equal fused scores, ``rank`` or ``id``. duplicates: what an id repeated
            within one branch's list means, ``first``, ``max`` or ``sum`` (chunks of one document).
        top_k: hits returned per search.
        expansion, max_variants: override ``FANFUSE_QUERY_EXPANSION`` / ``FANFUSE_MAX_QUERY_VARIANTS``.
        strategy: the expander strategy (``LLMExpander``: paraphrase, entity, stepback, decompose);
            refused for an expander that reads none (``Expander.strategies``).
        variant_weights: fusion weight of variant i is ``variant_weights[i]``, the last entry repeating
            (``[2.0, 1.0]``: the original counts double). Default: all 1.
        retriever_weights: name -> weight (default 1). A list's weight = variant weight x retriever
            weight; a list of weight 0 is not searched.
        branch_k: hits asked of each branch (default 2 x top_k, or the rerank window if larger; at
            most 10,000).
        reranker: ``reranker(query, hits) -> scores`` over the first ``rerank_window`` fused hits
            (default branch_k); the first ``return_k`` (default top_k; only with a reranker) come back.
        min_score: drop hits scoring below it (the rerank score when reranked, else the fused score).
        max_concurrency: branches of one search running at once. branch_timeout: seconds per branch
            and for the reranker (None: no limit). max_workers: threads per sync retriever (each has
            its own, so a hung backend cannot take another's) and for the reranker.
        cache: a ``VariantCache`` for expansions (e.g. of an ``LLMExpander``); None: no caching.
        environ: read settings from this mapping instead of ``os.environ`` (tests, embedding).

    An option that ``search`` takes too and that no search so set would read is refused as a call's
    is, ``InvalidSetting`` naming it (``max_variants`` with expansion off, ``strategy`` with one
    variant, ``return_k`` without a reranker): the environment stands for what is left out.
    """

    @_renamed.refusing_old_keywords
    def __init__(
        self,
        retrievers: AnyRetriever | Sequence[AnyRetriever] | Mapping[str, AnyRetriever],
        *,
        expander: Expander | None = None,
        method: Method | None = None,
        rrf_k: float | None = None,
        norm: Norm | None = None,
        phi: float | None = None,
        sigma: float | None = None,
        gamma: float | None = None,
        tie_break: TieBreak | None = None,
        duplicates: DuplicatePolicy | None = None,
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
        # The options a search call takes too, read from the signature itself so that a new one is
        # held to a call's rules without being listed (first, before any other name is bound).
        twins = {name: value for name, value in locals().items() if name in SEARCH_OPTION_NAMES}
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
        self.expander: Expander = expander or conversation_default()
        self.top_k = check_int("top_k", top_k)
        self.variant_weights = check_variant_weights(variant_weights)
        self.retriever_weights = weights_by_retriever(self.retriever_names, retriever_weights)
        self.branch_k = optional_int("branch_k", branch_k)
        self.reranker = check_reranker(reranker)
        self.rerank_window = optional_int("rerank_window", rerank_window)
        self.return_k = optional_int("return_k", return_k)
        # An option here is every call's default: one that no search so set would read is refused by
        # a call's own rules (after its value, as a call's), the environment standing for what is
        # left out.
        refuse_unread(
            {name: value for name, value in twins.items() if value is not None},
            variants_given=False,
            expansion=self.config.expansion,
            most_variants=self.config.max_variants,
            expander=self.expander,
            reranker=self.reranker,
        )
        if strategy is not None and isinstance(self.expander, LLMExpander):
            check_strategy(strategy)
        self.strategy = strategy
        self.min_score = optional_float("min_score", min_score)
        self.fusion = checked(
            {
                "method": method,
                "rrf_k": rrf_k,
                "norm": norm,
                "phi": phi,
                "sigma": sigma,
                "gamma": gamma,
                "tie_break": tie_break,
                "duplicates": duplicates,
            },
            weights=[*self.variant_weights, *self.retriever_weights.values()],
        )
        self.max_concurrency = check_int("max_concurrency", max_concurrency)
        self.branch_timeout = optional_float("branch_timeout", branch_timeout)
        if cache is not None and not isinstance(cache, VariantCache):
            raise TypeError(f"cache must be a VariantCache or None (got {type(cache).__name__})")
        self.cache = cache
        threads = check_int("max_workers", max_workers)
        self._workers = {r.name: Workers(r.name, threads) for r in self._retrievers}
        self._batched = {r.name: batches_queries(r.retriever) for r in self._retrievers}
        # What each retriever reads, looked up once: (plain text?, the variant sources it skips).
        self._reads = {
            r.name: (reads_plain_text(r.retriever), skipped_sources(r.retriever)) for r in self._retrievers
        }
        self._rerank_workers = Workers("reranker", threads)
        self._closed = False
        self._owned: list[Any] = []  # what open_index opened for this retriever: closed with it

    @property
    def retriever_names(self) -> list[str]:
        return [r.name for r in self._retrievers]

    @functools.cached_property
    def metadata_keys(self) -> frozenset[str] | None:
        """The keys a filter may name: those of every retriever's documents, where each says them
        (None where one does not: a filter's key is then left to the retrievers)."""
        return shared_metadata_keys(named.retriever for named in self._retrievers)

    @property
    def retrievers(self) -> dict[str, Any]:
        """The retrievers searched, by name, as given."""
        return {r.name: r.retriever for r in self._retrievers}

    def close(self) -> None:
        """Stop the threads (threads still running a timed-out call finish on their own); a later
        search raises RuntimeError, not a result of the async retrievers alone."""
        self._closed = True
        for workers in (*self._workers.values(), self._rerank_workers):
            workers.close()
        for resource in self._owned:
            resource.close()

    def _check_open(self) -> None:
        if self._closed:
            raise RuntimeError("this MultiQueryRetriever is closed (close() or the end of its with block)")

    def __enter__(self) -> MultiQueryRetriever:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def search(self, query: str, **options: Unpack[SearchOptions]) -> SearchResult:
        """Synchronous ``asearch``: safe from any thread, including one running an event loop.

        With only sync retrievers, reranker and expander, no event loop is involved: the branches
        run in the retrievers' threads, or, for a single branch without ``branch_timeout``, right in
        the calling thread. Otherwise the search runs on a shared background event loop.
        """
        started = time.perf_counter()
        self._check_open()
        plan = make_plan(self, query, options, "search")
        variants = self._variant_source()
        if not self._loop_free(plan, variants):
            return run_sync(self._asearch(plan, started))
        chosen, report = variants.fixed(plan) or variants.expand_sync(plan)
        branches = self._branches(plan, chosen)
        if len(branches) > self.max_concurrency:  # the threads alone would not bound this search
            return run_sync(self._asearch_variants(plan, started, chosen, report))
        outcomes = fan_out_sync(
            branches, k=plan.branch_k, filter=plan.filter, timeout=self.branch_timeout, started=started
        )
        hits, fusion_ms = self._fuse(plan, outcomes)
        reranked = rerank_sync(plan.reranker, plan.query, hits, self._rerank_workers, self.branch_timeout)
        return self._result(plan, started, chosen, report, outcomes, fusion_ms, reranked)

    async def asearch(self, query: str, **options: Unpack[SearchOptions]) -> SearchResult:
        """Search ``query``: every option left out or None follows the instance's setting.

        ``variants`` gives this call's variants explicitly (the original query first, then these; the
        expander is skipped; ``max_variants`` cuts them only when passed). Raises ``AllBranchesFailed``
        (a ``SearchFailed``) only when every branch that ran failed; otherwise failed branches are
        reported in ``result.diagnostics.branches`` and the others are fused.
        """
        started = time.perf_counter()
        self._check_open()
        return await self._asearch(make_plan(self, query, options, "asearch"), started)

    async def _asearch(self, plan: Plan, started: float) -> SearchResult:
        variants = self._variant_source()
        chosen, report = variants.fixed(plan) or await variants.expand(plan)
        return await self._asearch_variants(plan, started, chosen, report)

    async def _asearch_variants(
        self, plan: Plan, started: float, chosen: tuple[Variant, ...], report: ExpansionReport
    ) -> SearchResult:
        outcomes = await fan_out(
            self._branches(plan, chosen),
            k=plan.branch_k,
            filter=plan.filter,
            timeout=self.branch_timeout,
            limit=self.max_concurrency,
            started=started,
        )
        hits, fusion_ms = self._fuse(plan, outcomes)
        reranked = await rerank(plan.reranker, plan.query, hits, self._rerank_workers, self.branch_timeout)
        return self._result(plan, started, chosen, report, outcomes, fusion_ms, reranked)

    def _variant_source(self) -> VariantSource:
        return VariantSource(self.expander, self.config, self.cache, self.branch_timeout)

    def _loop_free(self, plan: Plan, variants: VariantSource) -> bool:
        """Whether a sync search can skip the event loop: sync retrievers, reranker and expander."""
        return (
            not any(r.is_async for r in self._retrievers)
            and (plan.reranker is None or not is_async_reranker(plan.reranker))
            and (self.expander.sync_capable or variants.fixed(plan) is not None)
        )

    def _branches(self, plan: Plan, chosen: Sequence[Variant]) -> list[Branch]:
        v_weights, r_weights, workers = plan.variant_weights, plan.retriever_weights, self._workers
        by_variant = [variant_weight(v_weights, i) for i in range(len(chosen))]
        weighted = is_weighted(v_weights, r_weights.values())
        branches = []
        for r in self._retrievers:
            reads_plain, skipped = self._reads[r.name]
            weights = list_weights(chosen, by_variant, reads_plain, skipped, weighted)
            name, retriever, is_async = r.name, r.retriever, r.is_async
            weight, threads, batched = r_weights[name], workers[name], self._batched[name]
            branches += [
                Branch(
                    i,
                    v.plain if v.plain is not None and reads_plain else v.text,
                    name,
                    retriever,
                    is_async,
                    weights[i] * weight,
                    threads,
                    batched,
                )
                for i, v in enumerate(chosen)
            ]
        check_list_weights(b.weight for b in branches)
        # Variant by variant, as the fan-out and the diagnostics list them.
        count = len(chosen)
        return [branches[j * count + i] for i in range(count) for j in range(len(self._retrievers))]

    def _fuse(self, plan: Plan, outcomes: list[BranchOutcome]) -> tuple[list[FusedHit], float]:
        ran = [o for o in outcomes if not o.report.skipped]
        if ran and all(o.hits is None for o in ran):
            reports = [o.report for o in ran]
            errors = "; ".join(f"{b.retriever}[{b.variant_index}]: {b.error}" for b in reports)
            raise AllBranchesFailed(f"all {len(ran)} branches failed: {errors}", reports)
        start = time.perf_counter()
        top_k = plan.rerank_window if plan.reranker else plan.top_k
        hits = fuse_outcomes(outcomes, plan.fusion, top_k=top_k)
        return hits, (time.perf_counter() - start) * 1e3

    def _result(
        self,
        plan: Plan,
        started: float,
        chosen: Sequence[Variant],
        report: ExpansionReport,
        outcomes: list[BranchOutcome],
        fusion_ms: float,
        reranked: Reranked,
    ) -> SearchResult:
        """The tail of every search: cut, filter, report."""
        hits = reranked.hits
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
            rerank_ms=reranked.elapsed_ms,
            total_ms=(time.perf_counter() - started) * 1e3,
            rerank_error=reranked.error,
        )
        failed = [f"{b.retriever}: {b.error}" for b in diagnostics.failed_branches]
        failed += [f"reranker: {reranked.error}"] if reranked.error else []
        if failed and logger.isEnabledFor(logging.WARNING):  # degraded: whoever runs it should hear why
            logger.warning(
                "multi-query search: %s; failed: %s", diagnostics.summary(), "; ".join(dict.fromkeys(failed))
            )
        elif logger.isEnabledFor(logging.INFO):
            logger.info("multi-query search: %s", diagnostics.summary())
        return SearchResult(query=plan.query, hits=hits, diagnostics=diagnostics)

    def __repr__(self) -> str:
        return (
            f"MultiQueryRetriever(retrievers={self.retriever_names}, expander={self.expander!r}, "
            f"expansion={self.config.expansion}, max_variants={self.config.max_variants}, "
            f"method={self.fusion.method!r}, rrf_k={self.fusion.k:g})"
        )
