"""What a request to `POST /search` that leaves a field out gets from the server: the one table that
`GET /options` lists and the search applies.

Most defaults are the server's retriever's own settings, which the retriever applies to an option the
request does not pass (so the service passes only the fields a request gives). The mmr reranker's
weight is the service's to apply, since it builds the reranker a request names: it passes the value
listed here. The request schema states no default of its own: a server made over another retriever
(`create_app`) has other defaults than `fanfuse serve`.
"""

from __future__ import annotations

from typing import Any

from fanfuse.multiquery import LLMExpander, MultiQueryRetriever
from fanfuse.multiquery.fusion import search_settings
from fanfuse.multiquery.mmr import DEFAULT_MMR_LAMBDA, MaximalMarginalRelevance
from fanfuse.service.schema import SearchRequest

__all__ = ["server_accepts", "server_defaults"]


def server_defaults(
    retriever: MultiQueryRetriever, expander: str, hybrid: bool, option_of_field: dict[str, str] | None = None
) -> dict[str, Any]:
    """Each request field (by name) and what a request leaving it out gets on a server over
    `retriever`, whose expander is `expander` and whose index is `hybrid` or not; None where leaving
    it out picks no value of the field (no filter, the method's own norm). `option_of_field` maps a
    field to the retriever's name for it where they differ."""
    reranker = retriever.reranker
    mmr = reranker if isinstance(reranker, MaximalMarginalRelevance) else None
    strategy = retriever.strategy
    if strategy is None and isinstance(retriever.expander, LLMExpander):
        strategy = retriever.expander.strategy  # what the model is asked for where the search names none
    settings: dict[str, Any] = {
        **search_settings(retriever.fusion),
        "top_k": retriever.top_k,
        "max_variants": retriever.config.max_variants,
        "strategy": strategy,
        "expander": expander if retriever.config.expansion else "none",
        "dense": hybrid,
        "rerank": None if mmr is None else "mmr",
        # What `rerank: mmr` weighs relevance by where the request gives no mmr_lambda.
        "mmr_lambda": DEFAULT_MMR_LAMBDA if mmr is None else mmr.mmr_lambda,
    }
    renamed = option_of_field or {}
    return {field: settings.get(renamed.get(field, field)) for field in SearchRequest.model_fields}


def server_accepts(expander: str) -> dict[str, tuple[str, ...]]:
    """The values of a request's choice fields that a server whose expander is `expander` takes,
    where it takes fewer than the schema lists: the one table that the search checks a request
    against and that `GET /options` offers (so the page never offers a value the server refuses)."""
    return {"expander": (expander, "none")}
