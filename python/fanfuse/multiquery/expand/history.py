"""History-aware variants without a model: the question read in the conversation it comes from.

A chat's last message is often elliptical ("What does it eat?"); what it refers to is in the user's
earlier turns. ``HistoryExpander`` writes two readings of it, each its own variant:

- **topic**: the question followed by the topic words of the earlier user turns, as historical query
  expansion does: a content word of an earlier turn is a topic word when it is specific in the
  index, its BM25 idf at least ``min_idf`` (2.5: in at most about 8% of the documents); the previous
  user turn's weigh ``previous_weight`` (1, as much as a word of the question), older turns'
  ``older_weight`` (0.5). BM25 reads ``word^1.0``; a dense retriever the question and the words.
  Its source is ``history-topic`` (``TOPIC_SOURCE``), so a router can tell it from the joined
  reading; the default search sends both to BM25 and the dense side (docs/mtrag-retrieval.md).
- **joined**: the previous user turn and the question together, as one text: what a dense retriever
  embeds best (an encoder reads "tell me about barn owls what does it eat?" as one topic). Its
  source is ``history``.

Each variant's lists weigh ``weight`` (0.5) times the original question's (``Variant.weight``): two
readings at half weight together weigh as much as the question. How much of that weight a question
gets is read per question, from the question alone, when it arrives:

- a question that **depends** on its history, one with a referring word ("it", "that", "then",
  ``REFERRING_WORDS``) or at most ``max_own_words`` (1) content word of its own ("and the price?"),
  gets the readings at full weight;
- any other question carries its own topic ("How do I cancel a Kubernetes cluster subscription?"):
  its readings weigh ``independent_weight`` (0.5) of the full weight; at 0 it gets none, and such a
  follow-up then costs nothing. The rule is read from words only, so a short question on a new topic
  ("What are ETFs?": one content word) still counts as depending on its history.

Without earlier user turns there are no variants.
Assistant and system turns are not read: an answer's words are the documents' own, and a long
answer would drown the user's few.

The settings were chosen on each of MT-RAG's clapnq and cloud conversations and scored on the
other (docs/mtrag-retrieval.md, "Held out"); the cosine of the question's vector to the earlier
turns', the specificity of its words in the index and the agreement of first-pass lists were
measured there too and did not carry to the held-out domain. Without an ``index`` (no idf to judge
words by) only the joined variant is written.
"""

from __future__ import annotations

import math
import re
from collections.abc import Hashable, Iterable, Sequence
from typing import Protocol

from fanfuse.limits import check_float, check_int, check_sequence
from fanfuse.multiquery.config import MAX_VARIANTS_LIMIT, check_words
from fanfuse.multiquery.conversation import History, user_turns
from fanfuse.multiquery.expand.expanders import (
    CombinedExpander,
    Expander,
    Expansion,
    HeuristicExpander,
    Variant,
    assemble_variants,
)
from fanfuse.multiquery.expand.words import STOPWORDS, content_words, query_words

__all__ = ["REFERRING_WORDS", "TOPIC_SOURCE", "HistoryExpander", "TopicIndex"]

DEFAULT_MIN_IDF = 2.5
DEFAULT_PREVIOUS_WEIGHT = 1.0
DEFAULT_OLDER_WEIGHT = 0.5
DEFAULT_HISTORY_WEIGHT = 0.5
# The per-question reading: a question with at most this many content words of its own depends on
# its history, and a question that does not depend on it gets this share of the full weight.
DEFAULT_MAX_OWN_WORDS = 1
DEFAULT_INDEPENDENT_WEIGHT = 0.5
#: The source of the topic-word reading (``Variant.source``); the joined reading's is ``history``.
TOPIC_SOURCE = "history-topic"

#: Words that point back into the conversation: pronouns, demonstratives, "then", "same", "else".
_REFERRING_TEXT = """
    it its itself that this those these they them their theirs then there he she his her him
    one ones same also else other another such"""
REFERRING_WORDS = frozenset(_REFERRING_TEXT.split())
_WORD = re.compile(r"\w+")


class TopicIndex(Protocol):
    """What choosing topic words needs of an index (``TantivyRetriever`` has it): its analyzer as
    (word, term) pairs, how many documents hold a term, and how many documents there are."""

    def analyze(self, text: str) -> list[tuple[str, str]]: ...

    def document_frequency(self, term: str) -> int: ...

    def __len__(self) -> int: ...


class HistoryExpander(Expander):
    """The question's topic and joined readings given the earlier user turns (see the module)."""

    name = "history"
    blocking = False
    strategies = ()
    history_roles = ("user",)

    def __init__(
        self,
        index: TopicIndex | None = None,
        *,
        min_idf: float = DEFAULT_MIN_IDF,
        previous_weight: float = DEFAULT_PREVIOUS_WEIGHT,
        older_weight: float = DEFAULT_OLDER_WEIGHT,
        weight: float = DEFAULT_HISTORY_WEIGHT,
        max_own_words: int = DEFAULT_MAX_OWN_WORDS,
        independent_weight: float = DEFAULT_INDEPENDENT_WEIGHT,
        stopwords: Iterable[str] | None = None,
    ):
        if index is not None and not all(
            callable(getattr(index, name, None)) for name in ("analyze", "document_frequency", "__len__")
        ):
            raise TypeError(
                "index must have analyze(text), document_frequency(term) and len(), as TantivyRetriever "
                f"does (got {type(index).__name__})"
            )
        self.index = index
        self.min_idf = check_float("min_idf", min_idf)
        self.previous_weight = check_float("previous_weight", previous_weight)
        self.older_weight = check_float("older_weight", older_weight)
        self.weight = check_float("history_weight", weight)
        self.max_own_words = check_int("max_own_words", max_own_words)
        self.independent_weight = check_float("independent_weight", independent_weight)
        self.stopwords = STOPWORDS if stopwords is None else check_words(stopwords, "stopwords")

    def expand(
        self, query: str, *, max_variants: int, strategy: str | None = None, history: History = ()
    ) -> Expansion:
        earlier = user_turns(history)
        # The question's own words are read only where there is a conversation to weigh.
        share = self.share(query) if earlier and max_variants >= 2 else 0.0
        if share == 0:
            return Expansion((Variant(query, "original"),))
        weight = self.weight * share
        candidates = [self.topic_variant(query, earlier, weight), self.joined_variant(query, earlier, weight)]
        return Expansion(assemble_variants(query, [c for c in candidates if c], max_variants, "history"))

    def depends(self, query: str) -> bool:
        """Whether the question reads as part of its conversation: it has a referring word, or at
        most ``max_own_words`` content words of its own."""
        if not REFERRING_WORDS.isdisjoint(word.casefold() for word in _WORD.findall(query)):
            return True
        return len(content_words(query, self.stopwords).words) <= self.max_own_words

    def share(self, query: str) -> float:
        """The share of the full weight the history readings get for this question."""
        return 1.0 if self.depends(query) else self.independent_weight

    def topic_variant(
        self, query: str, earlier: Sequence[str], weight: float | None = None
    ) -> Variant | None:
        """The question and the topic words of the earlier user turns (oldest first), or None when
        they have none; its lists weigh ``weight`` (default: the expander's)."""
        weight = self.weight if weight is None else check_float("history_weight", weight)
        topic = self.topic_words(query, earlier)  # which checks `earlier`
        if not topic:
            return None
        words = " ".join(f"{word}^{term_weight:g}" for word, term_weight in topic)
        plain = " ".join([query, *(word for word, _ in topic)])
        return Variant(f"{query_words(query)} {words}", TOPIC_SOURCE, plain, weight=weight)

    def joined_variant(self, query: str, earlier: Sequence[str], weight: float | None = None) -> Variant:
        """The previous user turn and the question as one text; its lists weigh ``weight`` (default:
        the expander's)."""
        earlier = _checked_turns(earlier)
        if not earlier:
            raise ValueError("earlier is empty: the joined variant needs the previous user turn")
        joined = f"{earlier[-1]} {query}"
        # Each turn's words on their own: a quote left open in one turn must not pair with the next's.
        words = f"{query_words(earlier[-1])} {query_words(query)}"
        weight = self.weight if weight is None else check_float("history_weight", weight)
        return Variant(words, "history", joined, weight=weight)

    def topic_words(self, query: str, earlier: Sequence[str]) -> list[tuple[str, float]]:
        """The topic words of the earlier user turns (oldest first) and their weights, newest turn
        first; words the question already has, and repeats, are left out."""
        earlier = _checked_turns(earlier)
        if self.index is None:
            return []
        taken = {term for word in content_words(query, self.stopwords).words for _, term in self._terms(word)}
        documents = len(self.index)
        topic = []
        for age, turn in enumerate(reversed(earlier)):
            weight = self.previous_weight if age == 0 else self.older_weight
            if weight == 0:
                continue
            for word in content_words(turn, self.stopwords).words:
                for spelled, term in self._terms(word):
                    if term in taken or len(term) < 2 or term.isdigit():
                        continue
                    taken.add(term)
                    found = self.index.document_frequency(term)
                    # A word no document has finds nothing; a common one is not a topic.
                    if found and _idf(found, documents) >= self.min_idf:
                        topic.append((spelled, weight))
        return topic

    def _terms(self, word: str) -> list[tuple[str, str]]:
        assert self.index is not None
        return self.index.analyze(word)

    def cache_key(self) -> Hashable | None:
        # The topic words depend on the index's contents: cached only for a versioned index.
        version = None if self.index is None else getattr(self.index, "version", None)
        if self.index is not None and not isinstance(version, str):
            return None
        settings = (
            self.min_idf,
            self.previous_weight,
            self.older_weight,
            self.weight,
            self.max_own_words,
            self.independent_weight,
        )
        return ("history", version, settings, self.stopwords)

    def __repr__(self) -> str:
        return (
            f"HistoryExpander(min_idf={self.min_idf:g}, previous_weight={self.previous_weight:g}, "
            f"older_weight={self.older_weight:g}, weight={self.weight:g}, "
            f"max_own_words={self.max_own_words}, independent_weight={self.independent_weight:g})"
        )


def _idf(document_frequency: int, documents: int) -> float:
    """BM25's idf (Lucene's and Tantivy's): ln(1 + (N - n + 0.5) / (n + 0.5))."""
    return math.log(1.0 + (documents - document_frequency + 0.5) / (document_frequency + 0.5))


def _checked_turns(earlier: object) -> list[str]:
    """The earlier user turns, an ordered sequence of str (a bare str would be read as its letters)."""
    turns: list[str] = []
    for i, turn in enumerate(check_sequence(earlier, "earlier", "user turns (str)")):
        if not isinstance(turn, str):
            raise TypeError(f"earlier[{i}] must be a str, a user turn (got {type(turn).__name__})")
        turns.append(turn)
    return turns


def conversation_default() -> Expander:
    """The default search's expander without an index: the joined reading of a conversation, then
    the content words (`MultiQueryRetriever`'s default, and `LLMExpander.fallback_expander`'s)."""
    return CombinedExpander([HistoryExpander(), HeuristicExpander(max_variants=MAX_VARIANTS_LIMIT)])
