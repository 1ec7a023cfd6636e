"""Pseudo-relevance feedback: a query variant built from the top documents of a first search, no model.

``FeedbackExpander(index)`` searches the question, reads the top ``feedback_docs`` documents, and
writes one weighted query in the index's syntax (``term^weight ...``) from the RM3 relevance model:

    P(w|R) = sum over the top documents d of P(w|d) * score(d) / sum of scores,  P(w|d) = tf(w, d) / |d|

The ``feedback_terms`` most probable terms (stopwords, one-letter terms and numbers left out) share
``1 - original_weight``; the question's content words share ``original_weight``. Terms are the index's
own (its analyzer stems them), written as a word the query parser stems back to the same term.
The defaults (10 documents, 20 terms, original weight 0.8) were chosen on MT-RAG
(docs/mtrag-retrieval.md). Each document's term counts are computed once (Tantivy's analyzer over its
title and text) and kept for the next search that finds it (`DOCUMENT_TERMS_KEPT` documents, the
least recently used out): a search then weighs counts instead of re-reading its documents' text. The
counts are keyed by the document's id and a hash of its title and text, so a document whose text
changes is analyzed again.
"""

from __future__ import annotations

import asyncio
import threading
from collections import Counter, OrderedDict, defaultdict
from collections.abc import Hashable, Iterable, Mapping, Sequence
from typing import Any, Protocol

from fanfuse._panics import is_failure
from fanfuse.limits import check_float, check_int
from fanfuse.multiquery.config import check_words
from fanfuse.multiquery.conversation import History
from fanfuse.multiquery.expand.expanders import Expander, Expansion, Variant, assemble_variants
from fanfuse.multiquery.expand.words import STOPWORDS, content_words, query_term
from fanfuse.retrievers.base import Hit

__all__ = ["FeedbackExpander", "FeedbackIndex"]

DEFAULT_FEEDBACK_DOCS = 10
DEFAULT_FEEDBACK_TERMS = 20
DEFAULT_ORIGINAL_WEIGHT = 0.8
# Weights are written with four decimals; a smaller one would read as 0.
_SMALLEST_WEIGHT = 1e-4
#: Documents whose term counts a FeedbackExpander keeps (a few kB each).
DOCUMENT_TERMS_KEPT = 4096

# A document's (word, term) pairs with their counts, in first-seen order, and its length in terms.
_Counts = tuple[tuple[tuple[str, str], ...], tuple[int, ...], int]


class FeedbackIndex(Protocol):
    """What feedback needs of an index (``TantivyRetriever`` has both): a search whose hits carry the
    stored ``title`` and ``text`` in their payload, and the index's analyzer as (word, term) pairs."""

    def search(self, query: str, k: int, filter: Mapping[str, Any] | None = None) -> Sequence[Hit]: ...

    def analyze(self, text: str) -> list[tuple[str, str]]: ...


class FeedbackExpander(Expander):
    """The original query and one feedback variant (RM3) computed through ``index``.

    The first pass runs inside ``expand``: one extra search of the question on ``index``, with the
    search's ``filter``, so that the terms come from documents the search may return (none from a
    document the filter leaves out). When it finds nothing, fails, or its documents
    have no text, the expansion is the original alone and ``fallback_reason`` says why.
    ``feedback_query(query, hits)`` builds the variant from hits already at hand instead.

    The variant uses boosts (``term^0.25``) and phrases, which Tantivy and other Lucene-style parsers
    read; ``weighted=False`` writes the question followed by the feedback terms as plain text
    instead, for backends without query syntax.
    """

    name = "feedback"
    blocking = False
    strategies = ()
    history_roles = ()

    def __init__(
        self,
        index: FeedbackIndex,
        *,
        feedback_docs: int = DEFAULT_FEEDBACK_DOCS,
        feedback_terms: int = DEFAULT_FEEDBACK_TERMS,
        original_weight: float = DEFAULT_ORIGINAL_WEIGHT,
        weighted: bool = True,
        stopwords: Iterable[str] | None = None,
    ):
        if not callable(getattr(index, "search", None)) or not callable(getattr(index, "analyze", None)):
            raise TypeError(
                f"index must have search(query, k, filter=None) and analyze(text), as TantivyRetriever does "
                f"(got {type(index).__name__})"
            )
        if not isinstance(weighted, bool):
            raise TypeError(f"weighted must be a bool (got {type(weighted).__name__})")
        self.index = index
        self.feedback_docs = check_int("feedback_docs", feedback_docs)
        self.feedback_terms = check_int("feedback_terms", feedback_terms)
        self.original_weight = check_float("original_weight", original_weight)
        self.weighted = weighted
        self.stopwords = STOPWORDS if stopwords is None else check_words(stopwords, "stopwords")
        self._stop_terms = frozenset(term for w in self.stopwords for _, term in index.analyze(w))
        self._counts: OrderedDict[tuple[str, int], _Counts] = OrderedDict()
        self._counts_lock = threading.Lock()

    def expand(
        self,
        query: str,
        *,
        max_variants: int,
        strategy: str | None = None,
        history: History = (),
        filter: Mapping[str, Any] | None = None,
    ) -> Expansion:
        if max_variants < 2:
            return Expansion((Variant(query, "original"),))
        try:
            hits = (
                self.index.search(query, self.feedback_docs, filter)
                if filter
                else self.index.search(query, self.feedback_docs)
            )
            written, reason = self._written(query, hits)
        except BaseException as exc:  # the search goes on with the original query, as for a failed model
            if not is_failure(exc):  # a Rust panic is the index failing; a signal goes on up
                raise
            failure = f"no feedback variant: {type(exc).__name__}: {exc}"
            return Expansion((Variant(query, "original"),), fallback_reason=failure)
        if written is None:
            # Nothing failed: a question the index has nothing for (or a tight filter) has no
            # feedback to take, and a search that finds nothing is no degraded one.
            return Expansion((Variant(query, "original"),), note=reason)
        text, plain = written if self.weighted else (written[1], None)
        # A dense retriever reads the question and the terms as text; the weights mean nothing to it.
        variants = assemble_variants(query, [text], max_variants, "feedback")
        return Expansion(
            tuple(Variant(v.text, v.source, plain if v.source == "feedback" else None) for v in variants)
        )

    async def aexpand(
        self,
        query: str,
        *,
        max_variants: int,
        strategy: str | None = None,
        history: History = (),
        filter: Mapping[str, Any] | None = None,
    ) -> Expansion:
        # The first pass is a blocking search: keep it off the event loop.
        return await asyncio.to_thread(
            self.expand, query, max_variants=max_variants, strategy=strategy, filter=filter
        )

    def feedback_query(self, query: str, hits: Sequence[Hit]) -> tuple[str | None, str | None]:
        """The feedback variant of ``query`` given the first pass's ``hits`` (best first; only the
        first ``feedback_docs`` are read), or None and the reason there is none."""
        written, reason = self._written(query, hits)
        if written is None:
            return None, reason
        return written[0] if self.weighted else written[1], None

    def _written(self, query: str, hits: Sequence[Hit]) -> tuple[tuple[str, str] | None, str | None]:
        """The variant with weights (``term^0.25 ...``) and as plain text (the question, then the
        feedback terms), or None and the reason there is none."""
        if not hits:
            return None, "no feedback variant: the first-pass search found no documents"
        relevance, spelled = self._relevance_model(hits[: self.feedback_docs])
        expansion = self._expansion_terms(relevance)
        if not expansion:
            return None, "no feedback variant: the first-pass documents have no text to take terms from"
        found = content_words(query, self.stopwords)
        words = [pair for w in found.words for pair in self.index.analyze(w)]
        question = words or self.index.analyze(query)  # a question of stopwords only: all its words
        share = self.original_weight if question else 0.0
        model: defaultdict[str, float] = defaultdict(float)
        for _, term in question:
            model[term] += share / len(question)
        total = sum(expansion.values())
        for term, p in expansion.items():
            model[term] += (1.0 - share) * p / total
        ranked = sorted(model.items(), key=lambda item: (-item[1], item[0]))
        question_terms = {term for _, term in question}
        spelled.update({term: word for word, term in reversed(question)})  # the question's own first
        plain = " ".join([query, *(spelled[t] for t, _ in ranked if t not in question_terms)])
        parts = [f"{spelled[t]}^{w:.4f}" for t, w in ranked if w >= _SMALLEST_WEIGHT]
        # A name such as "with statement" is also searched as a phrase, as HeuristicExpander does: its
        # words alone are too common. It weighs as one of the question's words.
        phrases = [query_term(f'"{name}"') for name in found.names]
        parts += [f"{phrase}^{share / len(question):.4f}" for phrase in phrases]
        return (" ".join(parts), plain), None

    def _relevance_model(self, hits: Sequence[Hit]) -> tuple[dict[str, float], dict[str, str]]:
        """P(w|R) over the documents, each weighted by its share of the first-pass score, and the
        first word seen for each term (any word of a term finds it: the query parser stems it)."""
        scores = [max(float(hit.score), 0.0) for hit in hits]
        total = sum(scores)
        weights = [s / total for s in scores] if total > 0 else [1.0 / len(hits)] * len(hits)
        relevance: defaultdict[str, float] = defaultdict(float)
        spelled: dict[str, str] = {}
        for hit, weight in zip(hits, weights, strict=True):
            payload = hit.payload or {}
            pairs, counts, length = self._document_counts(
                hit.id, f"{payload.get('title') or ''}\n{payload.get('text') or ''}"
            )
            share = weight / length if length else 0.0
            for (word, term), count in zip(pairs, counts, strict=True):
                relevance[term] += share * count
                spelled.setdefault(term, word)
        return relevance, spelled

    def _document_counts(self, doc_id: str, text: str) -> _Counts:
        """The document's (word, term) pairs counted (first-seen order) and its length in terms:
        kept from an earlier search, else analyzed now."""
        key = (doc_id, hash(text))
        with self._counts_lock:
            kept = self._counts.get(key)
            if kept is not None:
                self._counts.move_to_end(key)
                return kept
        pairs = self.index.analyze(text)
        counted = Counter(pairs)  # counted in C, in first-seen order
        found: _Counts = (tuple(counted), tuple(counted.values()), len(pairs))
        with self._counts_lock:
            self._counts[key] = found
            while len(self._counts) > DOCUMENT_TERMS_KEPT:
                self._counts.popitem(last=False)
        return found

    def _expansion_terms(self, relevance: dict[str, float]) -> dict[str, float]:
        usable = [
            (term, p)
            for term, p in relevance.items()
            if term not in self._stop_terms and len(term) > 1 and not term.isdigit()
        ]
        usable.sort(key=lambda item: (-item[1], item[0]))
        return dict(usable[: self.feedback_terms])

    def cache_key(self) -> Hashable | None:
        # The variant depends on the index's contents as much as on the settings: it is cached only
        # for an index that names the version of its contents (a rebuilt TantivyRetriever index is
        # a new version), never for one whose contents could change unseen.
        version = getattr(self.index, "version", None)
        if not isinstance(version, str):
            return None
        settings = (self.feedback_docs, self.feedback_terms, self.original_weight, self.weighted)
        return ("feedback", version, settings, self.stopwords)

    def __repr__(self) -> str:
        return (
            f"FeedbackExpander(feedback_docs={self.feedback_docs}, feedback_terms={self.feedback_terms}, "
            f"original_weight={self.original_weight:g})"
        )
