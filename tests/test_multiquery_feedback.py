"""Pseudo-relevance feedback on a real Tantivy index built from a generated corpus.

The corpus has one topic whose documents share terms the question does not use ("magma", "lava"):
the first pass finds the documents that match the question, and feedback must carry their shared
terms into a variant that finds the topic's document the question alone misses.
"""

from __future__ import annotations

import asyncio
import random
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest
from fanfuse import OutOfRange
from fanfuse.multiquery import (
    CombinedExpander,
    Expander,
    Expansion,
    FeedbackExpander,
    HeuristicExpander,
    MultiQueryRetriever,
    StaticExpander,
    VariantCache,
)
from fanfuse.retrievers import Hit
from fanfuse.retrievers.tantivy_index import TantivyRetriever

QUESTION = "what happens in a volcano eruption"
TOPIC = {
    "v1": "A volcano eruption sends magma up as lava; the magma chamber empties and lava flows downhill.",
    "v2": "During an eruption the volcano throws ash while magma rises and lava covers the slopes.",
    "v3": "Volcano monitoring: before an eruption, magma pushes the ground up and lava lakes glow.",
    # Relevant, but shares no word with the question: only the topic's terms lead to it.
    "missed": "Cooling lava turns to basalt; magma that never reaches the surface becomes granite.",
}
FILLER_WORDS = [
    *("ocean", "tide", "moon", "harbour", "ship", "sail", "bread", "yeast", "oven", "flour", "garden"),
    *("soil", "seed", "rain", "river", "bridge", "train", "station", "ticket", "music", "piano"),
    *("violin", "concert", "market", "price", "coffee", "tea", "cup", "chess", "board"),
]


def corpus(seed: int = 7, fillers: int = 40) -> list[dict[str, str]]:
    rng = random.Random(seed)
    documents = [{"id": doc_id, "title": "", "text": text} for doc_id, text in TOPIC.items()]
    for i in range(fillers):
        words = rng.choices(FILLER_WORDS, k=12)
        documents.append({"id": f"f{i}", "title": words[0], "text": " ".join(words)})
    return documents


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> TantivyRetriever:
    return TantivyRetriever.build(corpus(), tmp_path_factory.mktemp("feedback") / "index")


def feedback_variant(expander: FeedbackExpander, query: str = QUESTION) -> str:
    variants = expander.expand(query, max_variants=2).variants
    assert [v.source for v in variants] == ["original", "feedback"]
    return variants[1].text


def weights(variant: str) -> dict[str, float]:
    pairs = [part.split("^") for part in variant.split()]
    return {word: float(weight) for word, weight in pairs}


def test_the_variant_carries_the_topics_terms_with_rm3_weights(index: TantivyRetriever) -> None:
    variant = feedback_variant(FeedbackExpander(index, feedback_docs=3, feedback_terms=5))
    assert re.fullmatch(r"\w+\^\d\.\d{4}( \w+\^\d\.\d{4})*", variant)
    weighted = weights(variant)
    assert {"magma", "lava"} <= set(weighted)
    # The question's content words share original_weight (0.8), the feedback terms the rest (where a
    # feedback term is a question word, the two parts add up).
    assert sum(weighted.values()) == pytest.approx(1.0, abs=2e-3)
    assert all(weighted[word] >= 0.8 / 3 for word in ("volcano", "eruption", "happens"))
    assert sum(w for word, w in weighted.items() if word not in QUESTION.split()) <= 0.2 + 1e-3
    assert len(weighted) <= 3 + 5
    assert not {"a", "in", "the", "an"} & set(weighted)  # stopwords are never feedback terms


def test_feedback_finds_the_relevant_document_the_question_misses(index: TantivyRetriever) -> None:
    assert "missed" not in [hit.id for hit in index.search(QUESTION, 50)]
    expander = FeedbackExpander(index, feedback_docs=3)
    with MultiQueryRetriever({"bm25": index}, expander=expander, top_k=10) as retriever:
        result = retriever.search(QUESTION)
    assert "missed" in result.ids
    found = next(hit for hit in result.hits if hit.id == "missed")
    assert [p.variant_index for p in found.provenance] == [1]
    assert [v.source for v in result.diagnostics.variants] == ["original", "feedback"]


def test_the_variant_is_the_same_for_the_same_corpus(index: TantivyRetriever, tmp_path: Path) -> None:
    rebuilt = TantivyRetriever.build(corpus(), tmp_path / "again")
    first = feedback_variant(FeedbackExpander(index))
    assert feedback_variant(FeedbackExpander(index)) == first
    assert feedback_variant(FeedbackExpander(rebuilt)) == first


def test_an_empty_first_pass_gives_the_original_alone_and_says_why(index: TantivyRetriever) -> None:
    expansion = FeedbackExpander(index).expand("zebra stripes", max_variants=4)
    assert [v.text for v in expansion.variants] == ["zebra stripes"]
    # Nothing failed: a note, and a search that finds nothing is not degraded.
    assert expansion.note == "no feedback variant: the first-pass search found no documents"
    assert expansion.fallback_reason is None
    with MultiQueryRetriever({"bm25": index}, expander=FeedbackExpander(index)) as retriever:
        result = retriever.search("zebra stripes")
    assert result.ids == []
    assert result.diagnostics.expansion.note == expansion.note
    assert not result.diagnostics.degraded


def test_plain_text_variant_for_backends_without_boosts(index: TantivyRetriever) -> None:
    variant = feedback_variant(FeedbackExpander(index, feedback_docs=3, weighted=False))
    assert variant.startswith(QUESTION + " ")
    assert "^" not in variant
    assert {"magma", "lava"} <= set(variant.split())
    # The weighted variant carries the same text as its plain form, for a dense retriever.
    weighted = FeedbackExpander(index, feedback_docs=3).expand(QUESTION, max_variants=2).variants
    assert weighted[1].plain == variant and weighted[0].plain is None
    unweighted = FeedbackExpander(index, feedback_docs=3, weighted=False).expand(QUESTION, max_variants=2)
    assert unweighted.variants[1].plain is None  # its text is already plain


def test_one_variant_asked_for_means_no_first_pass(index: TantivyRetriever) -> None:
    expansion = FeedbackExpander(index).expand(QUESTION, max_variants=1)
    assert [v.source for v in expansion.variants] == ["original"] and expansion.fallback_reason is None


def test_the_async_path_gives_the_sync_result(index: TantivyRetriever) -> None:
    with MultiQueryRetriever({"bm25": index}, expander=FeedbackExpander(index)) as retriever:
        assert asyncio.run(retriever.asearch(QUESTION)).ids == retriever.search(QUESTION).ids


class BrokenIndex:
    """An index whose disk went away: every search fails."""

    def search(self, query: str, k: int, filter: Mapping[str, Any] | None = None) -> Sequence[Hit]:
        raise OSError("index files are gone")

    def analyze(self, text: str) -> list[tuple[str, str]]:
        return [(word, word) for word in text.lower().split()]


def test_a_failing_first_pass_falls_back_to_the_original() -> None:
    expansion = FeedbackExpander(BrokenIndex()).expand(QUESTION, max_variants=3)
    assert [v.text for v in expansion.variants] == [QUESTION]
    assert expansion.fallback_reason == "no feedback variant: OSError: index files are gone"


@pytest.mark.parametrize(
    ("options", "error", "message"),
    [
        ({"original_weight": 1.0}, OutOfRange, r"original_weight must be a number in \[0, 1\) \(got 1.0\)"),
        ({"original_weight": -0.1}, OutOfRange, r"original_weight must be a number in \[0, 1\) \(got -0.1\)"),
        ({"original_weight": "0.5"}, TypeError, "original_weight must be a number"),
        ({"feedback_docs": 0}, OutOfRange, "feedback_docs must be an int from 1 to 10000"),
        ({"feedback_terms": 2.5}, TypeError, "feedback_terms must be an int"),
        ({"weighted": "yes"}, TypeError, "weighted must be a bool"),
    ],
)
def test_bad_settings_name_the_argument(
    index: TantivyRetriever, options: dict[str, Any], error: type[Exception], message: str
) -> None:
    with pytest.raises(error, match=message):
        FeedbackExpander(index, **options)


def test_an_index_without_an_analyzer_is_refused() -> None:
    with pytest.raises(
        TypeError, match=r"index must have search\(query, k, filter=None\) and analyze\(text\)"
    ):
        FeedbackExpander(object())  # type: ignore[arg-type]


def test_analyze_gives_the_terms_the_index_holds(index: TantivyRetriever) -> None:
    pairs = index.analyze("Volcanoes ERUPTING, magma's flows")
    assert pairs == [
        ("volcanoes", "volcano"),
        ("erupting", "erupt"),
        ("magma", "magma"),
        ("s", "s"),
        ("flows", "flow"),
    ]
    for document in corpus()[:4]:  # each word, written in a query, finds its document again
        for word, _ in index.analyze(document["text"]):
            assert document["id"] in [hit.id for hit in index.search(word, 50)]


def test_combined_expander_chains_in_order_drops_duplicates_and_cuts(index: TantivyRetriever) -> None:
    feedback = FeedbackExpander(index, feedback_docs=3)
    both = CombinedExpander([HeuristicExpander(), feedback])
    sources = [v.source for v in both.expand(QUESTION, max_variants=4).variants]
    assert sources == ["original", "heuristic", "feedback"]
    assert [v.source for v in both.expand(QUESTION, max_variants=2).variants] == ["original", "heuristic"]
    repeated = CombinedExpander([StaticExpander({"q": ["a", "b"]}), StaticExpander({"q": ["B", "c"]})])
    assert [v.text for v in repeated.expand("q", max_variants=5).variants] == ["q", "a", "b", "c"]
    assert both.name == "heuristic+feedback" and both.cache_key() is not None  # a versioned index
    unversioned = CombinedExpander([HeuristicExpander(), FeedbackExpander(SearchAndAnalyzeOnly(index))])
    assert unversioned.cache_key() is None  # one part that must not be cached: none of it is
    assert CombinedExpander([HeuristicExpander(), HeuristicExpander(2)]).cache_key() is not None


def test_combined_expander_keeps_each_parts_reason(index: TantivyRetriever) -> None:
    both = CombinedExpander([HeuristicExpander(), FeedbackExpander(index)])
    expansion = asyncio.run(both.aexpand("why do zebras have stripes", max_variants=4))
    assert [v.source for v in expansion.variants] == ["original", "heuristic"]
    assert expansion.note == "no feedback variant: the first-pass search found no documents"


class Exploding(Expander):
    """An expander with a bug: every call raises."""

    name = "exploding"

    def expand(self, query: str, *, max_variants: int, strategy: str | None = None) -> Expansion:
        raise KeyError("no such rule")


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_combined_expander_survives_a_part_that_raises(mode: str) -> None:
    both = CombinedExpander([Exploding(), HeuristicExpander()])
    if mode == "sync":
        expansion = both.expand(QUESTION, max_variants=4)
    else:
        expansion = asyncio.run(both.aexpand(QUESTION, max_variants=4))
    assert [v.source for v in expansion.variants] == ["original", "heuristic"]
    assert expansion.fallback_reason == "exploding: KeyError: 'no such rule'"


def test_combined_expander_checks_its_parts() -> None:
    with pytest.raises(TypeError, match="expanders must be a non-empty list of Expander"):
        CombinedExpander([])
    with pytest.raises(TypeError, match=r"expanders\[1\] must be an Expander \(got str\)"):
        CombinedExpander([HeuristicExpander(), "feedback"])  # type: ignore[list-item]


class SearchAndAnalyzeOnly:
    """A Tantivy index seen through the two methods feedback needs: no version of its contents."""

    def __init__(self, index: TantivyRetriever) -> None:
        self.index = index

    def search(self, query: str, k: int) -> Sequence[Hit]:
        return self.index.search(query, k)

    def analyze(self, text: str) -> list[tuple[str, str]]:
        return self.index.analyze(text)


def cached_search(index: TantivyRetriever, cache: VariantCache) -> tuple[bool, str]:
    """Whether the expansion came from `cache`, and the feedback variant."""
    expander = FeedbackExpander(index, feedback_docs=3)
    with MultiQueryRetriever({"bm25": index}, expander=expander, cache=cache) as retriever:
        result = retriever.search(QUESTION)
    return result.diagnostics.expansion.cached, result.diagnostics.variants[1].text


def test_the_variant_is_cached_per_version_of_the_index(tmp_path: Path) -> None:
    cache = VariantCache()
    index = TantivyRetriever.build(corpus(), tmp_path / "index")
    assert cached_search(index, cache)[0] is False
    assert cached_search(index, cache)[0] is True
    # The same directory rebuilt with other contents: the variant is computed again, from them.
    changed = [d if d["id"] != "v3" else {**d, "text": d["text"] + " obsidian obsidian"} for d in corpus()]
    rebuilt = TantivyRetriever.build(changed, tmp_path / "index")
    assert rebuilt.version != index.version
    cached, variant = cached_search(rebuilt, cache)
    assert cached is False and "obsidian" in weights(variant)


def test_the_cache_key_holds_every_setting_that_changes_the_variant(index: TantivyRetriever) -> None:
    keys = {
        FeedbackExpander(index).cache_key(),
        FeedbackExpander(index, feedback_docs=3).cache_key(),
        FeedbackExpander(index, feedback_terms=5).cache_key(),
        FeedbackExpander(index, original_weight=0.5).cache_key(),
        FeedbackExpander(index, weighted=False).cache_key(),
        FeedbackExpander(index, stopwords=["what"]).cache_key(),
    }
    assert None not in keys and len(keys) == 6
    assert FeedbackExpander(index).cache_key() == FeedbackExpander(index).cache_key()
    assert FeedbackExpander(SearchAndAnalyzeOnly(index)).cache_key() is None


class CountingAnalyzer(SearchAndAnalyzeOnly):
    """The index through feedback's two methods, recording every text analyzed; `changed` rewrites
    the text a search returns for the ids it names (a document edited between two searches)."""

    def __init__(self, index: TantivyRetriever) -> None:
        super().__init__(index)
        self.analyzed: list[str] = []
        self.changed: dict[str, str] = {}

    def search(self, query: str, k: int) -> Sequence[Hit]:
        hits = self.index.search(query, k)
        return [
            Hit(h.id, h.score, {**h.payload, "text": self.changed[h.id]}) if h.id in self.changed else h
            for h in hits
        ]

    def analyze(self, text: str) -> list[tuple[str, str]]:
        self.analyzed.append(text)
        return self.index.analyze(text)


def test_each_documents_terms_are_read_once_and_again_when_its_text_changes(index: TantivyRetriever) -> None:
    counting = CountingAnalyzer(index)
    expander = FeedbackExpander(counting, feedback_docs=3)
    first = feedback_variant(expander)
    documents = [t for t in counting.analyzed if "\n" in t]  # title and text: a document read
    assert len(documents) == 3
    counting.analyzed.clear()
    assert feedback_variant(expander) == first
    assert not [t for t in counting.analyzed if "\n" in t]  # its counts were kept
    top = index.search(QUESTION, 1)[0].id
    counting.changed[top] = "Granite and basalt: what a volcano leaves behind."
    changed = feedback_variant(expander)
    assert [t for t in counting.analyzed if "\n" in t] == [f"\n{counting.changed[top]}"]
    assert changed == feedback_variant(FeedbackExpander(counting, feedback_docs=3)) != first
