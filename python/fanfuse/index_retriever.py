"""`fanfuse.open_index(path)`: the multi-query retriever `fanfuse search --index PATH` searches with.

One place decides the default, so a program gets exactly what the command gives:

- retrievers: what the index holds. `bm25` (the Tantivy index) always; `dense` when the index holds
  neural vectors (`fanfuse index --dense`), searched with the encoder that made them, and beside it
  `dense-feedback`, the same vectors with the query moved toward its top documents (`DenseFeedback`).
- expander: given the conversation (`history`), `HistoryExpander` first (the question with the topic
  words of the earlier user turns; the previous user turn and the question joined); then
  `FeedbackExpander` and `HeuristicExpander` on the BM25 index (RM3 feedback terms, content words);
  expansion on and up to 4 variants unless `FANFUSE_QUERY_EXPANSION` / `FANFUSE_MAX_QUERY_VARIANTS`
  say otherwise (with history and 4 variants, the content words are left out).
- fusion: RRF, k = 60; the original query's lists weigh 3, the variants' 1 (`variant_weights=[3, 1]`),
  each history variant's half the original's; every retriever 1 but `dense-feedback`, 0.25. With a
  `method` that has no weighted form (isr, combmax...), every list weighs 1.
  Measured on MT-RAG (docs/mtrag-retrieval.md).
- routing: BM25 searches every variant; the dense retrievers search the question and the variants
  written as sentences (the conversation's, a model's, the caller's), not the word-level ones
  (`DENSE_SKIPPED_SOURCES`: the content words and the RM3 terms), whose weight goes to the dense
  question's list instead. A word list embedded by a sentence encoder is mostly the question's own
  vector again: the word-level variants gain on BM25 and nothing measurable on the dense side, and
  each would cost an encoder input (docs/mtrag-retrieval.md). Both readings of the conversation are
  searched, the topic words too: they are what an elliptical question lacks, so they move its
  vector (left to BM25, cloud lost 0.026 nDCG@10 given the history). `dense-feedback` reads the
  same texts as `dense`, so a search's query vectors are embedded once, in one encoder call.
- the dense retrievers get each variant as plain text (`PlainTextQueries`): the variants are written
  in Tantivy's syntax (`term^0.25`, quoted phrases), which an encoder would read as words.

`dense=True` asks for the dense half even where no vectors are stored: the neural one embedded now
and stored (needs `fanfuse[embed]`), else TF-IDF + SVD fitted on the documents and kept beside them
(needs `fanfuse[dense]`). `dense=False` searches BM25 only.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from typing import Any

from fanfuse.errors import InvalidSetting, MissingExtra
from fanfuse.multiquery import (
    CombinedExpander,
    Expander,
    FeedbackExpander,
    HeuristicExpander,
    MultiQueryRetriever,
)
from fanfuse.multiquery.config import MAX_VARIANTS_LIMIT
from fanfuse.multiquery.expand.history import HistoryExpander
from fanfuse.multiquery.expand.llm import LLMExpander, with_index_fallback
from fanfuse.multiquery.fusion import takes_weights
from fanfuse.multiquery.mmr import RerankName, named_reranker
from fanfuse.multiquery.plain_text import PlainTextQueries
from fanfuse.retrievers.dense import DenseRetriever
from fanfuse.retrievers.dense_feedback import DenseFeedback
from fanfuse.retrievers.dense_index import PassageEncoder, has_dense_index
from fanfuse.retrievers.tantivy_index import TantivyRetriever

__all__ = [
    "DEFAULT_RETRIEVER_WEIGHTS",
    "DEFAULT_VARIANT_WEIGHTS",
    "DENSE_SKIPPED_SOURCES",
    "default_expander",
    "default_retrievers",
    "open_index",
]

EMBED_HINT = "pip install 'fanfuse[embed]'"
# The fusion weight of the original query's lists, then of every variant's.
DEFAULT_VARIANT_WEIGHTS = (3.0, 1.0)
# The retrievers' fusion weights other than 1: vector feedback adds to the dense lists, not replaces them.
DEFAULT_RETRIEVER_WEIGHTS = {"dense-feedback": 0.25}
# The variant sources the dense retrievers do not search (`Variant.source`): word lists, for BM25.
# The history's topic words (`TOPIC_SOURCE`) are searched: they bring the conversation's topic to
# the question's vector, worth +0.02 nDCG@10 given the history on cloud (docs/mtrag-retrieval.md).
DENSE_SKIPPED_SOURCES = ("heuristic", "feedback")


def open_index(
    index: str | os.PathLike[str] | TantivyRetriever,
    *,
    dense: bool | None = None,
    encoder: PassageEncoder | None = None,
    progress: Callable[[int], None] | None = None,
    rerank: RerankName | None = None,
    mmr_lambda: float | None = None,
    **overrides: Any,
) -> MultiQueryRetriever:
    """The default multi-query retriever over an index built by `fanfuse index` (or
    `TantivyRetriever.build`); `index` is its directory, or the opened index. An index opened here
    from its directory is closed with the retriever (`close()`, the end of its `with` block), which
    lets its files go; one passed in stays the caller's to close.

    Args:
        dense: None (the default): the dense half when the index holds neural vectors; True: always
            (embedding the documents now if need be, see the module's docs); False: BM25 only.
        encoder: embeds the queries (and the documents, when embedding now); default: the encoder
            recorded with the stored vectors, else the built-in model.
        progress: called with the number of documents embedded so far, when embedding now.
        rerank: "mmr": the fused window reordered by maximal marginal relevance over the stored
            vectors (`fanfuse.multiquery.mmr`; needs the dense half), `mmr_lambda` its relevance weight
            (default 0.9; 1 keeps the fused order). None: no reranker.
        overrides: `MultiQueryRetriever`'s keyword arguments (`expander`, `top_k`, `method`,
            `retriever_weights`...), replacing the defaults; `retriever_weights` replaces the weights
            of the retrievers it names.
    """
    if isinstance(index, TantivyRetriever):  # the caller's: it stays open for them to close
        return _over(index, dense, encoder, progress, rerank, mmr_lambda, overrides)
    bm25 = TantivyRetriever(index)
    try:
        retriever = _over(bm25, dense, encoder, progress, rerank, mmr_lambda, overrides)
    except BaseException:
        bm25.close()
        raise
    retriever._owned.append(bm25)  # opened here: closed with the retriever (its with block)
    return retriever


def _over(
    bm25: TantivyRetriever,
    dense: bool | None,
    encoder: PassageEncoder | None,
    progress: Callable[[int], None] | None,
    rerank: RerankName | None,
    mmr_lambda: float | None,
    overrides: dict[str, Any],
) -> MultiQueryRetriever:
    retrievers = default_retrievers(bm25, dense, encoder, progress)
    # The default weights are for the weighted methods: with one that has none (isr, combmax...),
    # every list weighs 1; weights the caller gives are refused with such a method, as everywhere.
    weighted = takes_weights(overrides.get("method", "rrf"))
    settings: dict[str, Any] = {"expander": default_expander(bm25)}
    if weighted:
        settings["variant_weights"] = list(DEFAULT_VARIANT_WEIGHTS)
    reranker = named_reranker(rerank, retrievers, mmr_lambda)
    if reranker is not None:
        if overrides.get("reranker") is not None:
            raise InvalidSetting("rerank names a built-in reranker and reranker gives one: give one of them")
        settings["reranker"] = reranker
    settings.update(overrides)
    if isinstance(settings["expander"], LLMExpander):  # a failed call falls back to this index's search
        settings["expander"] = with_index_fallback(settings["expander"], default_expander(bm25))
    weights = {name: w for name, w in DEFAULT_RETRIEVER_WEIGHTS.items() if name in retrievers and weighted}
    given = settings.get("retriever_weights")
    if weights and (given is None or isinstance(given, Mapping)):  # else MultiQueryRetriever says why
        settings["retriever_weights"] = {**weights, **(given or {})}
    retriever = MultiQueryRetriever(retrievers, **settings)
    if "dense" in retrievers:  # made here: its vectors (mapped from the index) go with the retriever
        retriever._owned.append(retrievers["dense"].retriever)
    return retriever


def default_expander(bm25: TantivyRetriever) -> Expander:
    """Given the conversation, the history variants; then the feedback variant from `bm25`'s top
    documents and the content-word variant (the one a budget of 4 leaves out after two history
    variants: it adds the least, docs/mtrag-retrieval.md)."""
    return CombinedExpander(
        [HistoryExpander(bm25), FeedbackExpander(bm25), HeuristicExpander(max_variants=MAX_VARIANTS_LIMIT)]
    )


def default_retrievers(
    bm25: TantivyRetriever,
    dense: bool | None = None,
    encoder: PassageEncoder | None = None,
    progress: Callable[[int], None] | None = None,
) -> dict[str, Any]:
    """`{"bm25": ..., "dense": ..., "dense-feedback": ...}` as `open_index` chooses them (the dense
    ones reading plain text, the word-level variants left to BM25)."""
    if dense is not None and not isinstance(dense, bool):
        raise TypeError(f"dense must be a bool or None (got {type(dense).__name__})")
    retrievers: dict[str, Any] = {"bm25": bm25}
    stored = has_dense_index(bm25.data_directory)
    if dense is False or (dense is None and not stored):
        return retrievers
    vectors = _dense(bm25, stored, encoder, progress)
    retrievers["dense"] = PlainTextQueries(vectors, skipped_sources=DENSE_SKIPPED_SOURCES)
    retrievers["dense-feedback"] = PlainTextQueries(
        DenseFeedback(vectors), skipped_sources=DENSE_SKIPPED_SOURCES
    )
    return retrievers


def _dense(
    bm25: TantivyRetriever,
    stored: bool,
    encoder: PassageEncoder | None,
    progress: Callable[[int], None] | None,
) -> DenseRetriever:
    from fanfuse.retrievers.default_encoder import embed_extra_installed

    if encoder is not None or embed_extra_installed():
        from fanfuse.retrievers.dense_cache import neural_dense_for_index

        return neural_dense_for_index(bm25, encoder=encoder, progress=progress)[0]
    if stored:
        raise MissingExtra(
            f"{str(bm25.directory)!r} holds neural vectors, which need fanfuse[embed] to search: "
            f"{EMBED_HINT}, or search BM25 only (dense=False, `fanfuse search --no-dense`)",
            extra="embed",
        )
    from fanfuse.retrievers.dense_cache import dense_for_index

    try:
        return dense_for_index(bm25)[0]
    except ImportError:
        raise MissingExtra(
            "dense retrieval needs fanfuse[embed] (neural vectors) or fanfuse[dense] (TF-IDF+SVD, "
            f"the fallback); neither is installed: {EMBED_HINT}",
            extra="embed",
        ) from None
