"""The history-aware variants without a model (`HistoryExpander`): which words of the earlier user
turns it carries over (specific in the index, by turn), how it writes them for BM25 and for a dense
retriever, how much their lists weigh, and that without history nothing changes; on a real Tantivy
index."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest
from fanfuse import OutOfRange
from fanfuse.index_retriever import open_index
from fanfuse.multiquery import (
    CombinedExpander,
    Expander,
    Expansion,
    HeuristicExpander,
    HistoryExpander,
    MultiQueryRetriever,
    Variant,
)
from fanfuse.multiquery.conversation import History, check_history
from fanfuse.retrievers.tantivy_index import TantivyRetriever

# "owl" is in 3 of 24 documents (idf about 2.0), "barn" in 1 (about 2.9), "animal" in 23 (about 0.06).
DOCUMENTS = [
    {"id": "barn-owl", "text": "The barn owl animal hunts mice at night and swallows its prey whole."},
    {"id": "owl-pellet", "text": "An owl animal coughs up pellets of bones and fur."},
    {"id": "owl-eyes", "text": "Each owl animal has eyes fixed in their sockets."},
    {"id": "hawk", "text": "A hawk hunts by day and eats snakes and rabbits."},
    *({"id": f"filler-{i}", "text": f"Another animal number {i} lives in the wood."} for i in range(20)),
]
QUESTION = "what does it eat?"


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> TantivyRetriever:
    return TantivyRetriever.build(DOCUMENTS, tmp_path_factory.mktemp("history-variants") / "idx")


def expand(
    expander: Expander, history: list[Any], query: str = QUESTION, budget: int = 5
) -> tuple[Variant, ...]:
    return expander.expand(query, max_variants=budget, history=check_history(history)).variants


def test_the_index_counts_documents_per_term(index: TantivyRetriever) -> None:
    assert [index.document_frequency(term) for term in ("owl", "barn", "anim", "zebra")] == [3, 1, 23, 0]


def test_topic_words_are_the_specific_words_of_the_earlier_user_turns(index: TantivyRetriever) -> None:
    expander = HistoryExpander(index, min_idf=2.5)
    history = [
        "tell me about animal owls",  # older: "owl" is common enough (idf < 2.5), "tell" is in no document
        {"role": "assistant", "content": "Owls hunt mice."},  # not a user turn: not read
        "and the barn owl?",  # the previous user turn: "barn" is specific
    ]
    topic, joined = expand(expander, history)[1:]
    assert topic == Variant("what does it eat barn^1", "history-topic", "what does it eat? barn", weight=0.5)
    assert joined == Variant(
        "and the barn owl what does it eat", "history", "and the barn owl? what does it eat?", weight=0.5
    )
    # A lower bar takes the owls too; the previous turn's words weigh 1, older ones 0.5; a word of the
    # question or one already taken is not repeated.
    lower = HistoryExpander(index, min_idf=1.5)
    assert lower.topic_words(QUESTION + " owls", ["owls in the barn", "and the barn owl?"]) == [("barn", 1.0)]
    assert lower.topic_words(QUESTION, ["owls in the barn", "and the hawk?"]) == [
        ("hawk", 1.0),
        ("owls", 0.5),
        ("barn", 0.5),
    ]
    weights = HistoryExpander(index, min_idf=1.5, previous_weight=2.0, older_weight=0.0)
    assert weights.topic_words(QUESTION, ["owls in the barn", "and the hawk?"]) == [("hawk", 2.0)]


def test_the_idf_is_bm25s(index: TantivyRetriever) -> None:
    # owl: ln(1 + (24 - 3 + 0.5) / (3 + 0.5)) = 1.97; just under 1.97 takes it, just over does not.
    idf = math.log(1 + (24 - 3 + 0.5) / 3.5)
    assert HistoryExpander(index, min_idf=idf - 1e-9).topic_words(QUESTION, ["owl"]) == [("owl", 1.0)]
    assert HistoryExpander(index, min_idf=idf + 1e-9).topic_words(QUESTION, ["owl"]) == []


def test_without_topic_words_or_an_index_only_the_joined_turns(index: TantivyRetriever) -> None:
    assert [v.text for v in expand(HistoryExpander(index), ["tell me more"])[1:]] == [
        "tell me more what does it eat"
    ]
    assert [v.plain for v in expand(HistoryExpander(), ["the barn owl"])[1:]] == [
        "the barn owl what does it eat?"
    ]


def test_without_earlier_user_turns_there_are_no_variants(index: TantivyRetriever) -> None:
    expander = HistoryExpander(index)
    for history in ([], [{"role": "assistant", "content": "Barn owls eat mice."}], ["  "]):
        assert expand(expander, history) == (Variant(QUESTION, "original"),)
    assert expand(expander, ["the barn owl"], budget=1) == (Variant(QUESTION, "original"),)
    assert len(expand(expander, ["the barn owl"], budget=2)) == 2


def test_text_typed_by_the_user_cannot_break_the_query_syntax(index: TantivyRetriever) -> None:
    topic, joined = expand(HistoryExpander(index), ['the "barn owl: AND'], query='what: "eats it')[1:]
    for variant in (topic, joined):
        assert index.search(variant.text, 5)  # parsed as written, not as the fallback of a bad query
    assert joined.text == "the barn owl and what eats it"


def test_bad_settings_are_refused_by_name() -> None:
    with pytest.raises(TypeError, match="index must have analyze"):
        HistoryExpander(object())  # type: ignore[arg-type]
    with pytest.raises(OutOfRange, match=r"min_idf must be a finite number >= 0 \(got -1.0\)"):
        HistoryExpander(min_idf=-1)
    with pytest.raises(OutOfRange, match=r"weight must be a finite number > 0 \(got 0.0\)"):
        HistoryExpander(weight=0)
    with pytest.raises(TypeError, match=r"older_weight must be a finite number >= 0 \(got str\)"):
        HistoryExpander(older_weight="1")  # type: ignore[arg-type]
    with pytest.raises(OutOfRange, match="previous_weight must be a finite number"):
        HistoryExpander(previous_weight=math.nan)


class Fixed(Expander):
    """Variants given up front, some with an expander weight: what the search does with them."""

    name = "fixed"

    def __init__(self, *variants: Variant) -> None:
        self.variants = variants

    def expand(
        self, query: str, *, max_variants: int, strategy: str | None = None, history: History = ()
    ) -> Expansion:
        return Expansion((Variant(query, "original"), *self.variants)[:max_variants])


def test_an_expander_weight_is_a_share_of_the_originals(index: TantivyRetriever) -> None:
    expander = Fixed(Variant("barn owl", "history", weight=0.5), Variant("owl pellets", "heuristic"))
    with MultiQueryRetriever(index, expander=expander, variant_weights=[3.0, 1.0]) as retriever:
        weights = [v.weight for v in retriever.search("owls").diagnostics.variants]
        assert weights == [3.0, 1.5, 1.0]
        result = retriever.search("owls", variant_weights=[2.0, 1.0])
    assert [v.weight for v in result.diagnostics.variants] == [2.0, 1.0, 1.0]
    # The fused score adds each list's weight / (60 + rank): the history list's weigh 1.0 here.
    barn = next(hit for hit in result.hits if hit.id == "barn-owl")
    history_rank = next(p.rank for p in barn.provenance if p.variant_index == 1)
    assert history_rank is not None
    contribution = next(p.contribution for p in barn.provenance if p.variant_index == 1)
    assert contribution == pytest.approx(1.0 / (60 + history_rank))


def test_a_method_without_weights_leaves_the_expander_weights_out(index: TantivyRetriever) -> None:
    expander = Fixed(Variant("barn owl", "history", weight=0.5))
    with MultiQueryRetriever(index, expander=expander, method="isr") as retriever:
        result = retriever.search("owls")
    assert [v.weight for v in result.diagnostics.variants] == [1.0, 1.0]
    with MultiQueryRetriever(index, expander=expander) as retriever:  # rrf takes them, at weights 1
        assert [v.weight for v in retriever.search("owls").diagnostics.variants] == [1.0, 0.5]


def test_the_combined_expander_stops_asking_once_the_budget_is_full(index: TantivyRetriever) -> None:
    asked: list[str] = []

    class Counting(Expander):
        name = "counting"

        def expand(self, query: str, *, max_variants: int, strategy: str | None = None) -> Expansion:
            asked.append(query)
            return Expansion((Variant(query, "original"), Variant("owl pellets", "counting")))

    combined = CombinedExpander([HistoryExpander(index), HeuristicExpander(), Counting()])
    full = expand(combined, ["the barn owl"], query="what do the owls eat", budget=4)
    assert [v.source for v in full] == ["original", "history-topic", "history", "heuristic"] and asked == []
    assert [v.source for v in expand(combined, [], query="what do the owls eat", budget=4)][-1] == "counting"
    assert asked == ["what do the owls eat"]


def test_the_default_with_and_without_history(index: TantivyRetriever) -> None:
    question = "how does it hunt?"
    with open_index(index) as retriever:
        alone = retriever.search(question)
        again = retriever.search(question, history=[])
        conversation = retriever.search(question, history=["tell me about the hawk"])
    assert [v.source for v in alone.diagnostics.variants] == ["original", "feedback", "heuristic"]
    assert (again.ids, again.diagnostics.variants) == (alone.ids, alone.diagnostics.variants)
    variants = conversation.diagnostics.variants
    assert [(v.source, v.weight) for v in variants] == [
        ("original", 3.0),
        ("history-topic", 1.5),
        ("history", 1.5),
        ("feedback", 1.0),
    ]
    # Alone, "it" could be any hunter; in its conversation it is the hawk.
    assert alone.ids[:2] == ["barn-owl", "hawk"]
    assert conversation.ids[:2] == ["hawk", "barn-owl"]


@pytest.mark.parametrize(
    ("question", "depends"),
    [
        ("what does it eat?", True),  # a referring word
        ("Then, how fast?", True),  # a referring word, any case and punctuation
        ("and the pellets?", True),  # one content word of its own
        ("why?", True),  # none
        ("which owls hunt mice at night", False),  # its own topic
        ("how do hawks hunt", False),
    ],
)
def test_a_question_depends_on_its_history_by_its_words(
    index: TantivyRetriever, question: str, depends: bool
) -> None:
    expander = HistoryExpander(index)
    assert expander.depends(question) is depends
    assert HistoryExpander(index, max_own_words=9).depends(question)  # a high bound: every one depends
    share = 1.0 if depends else expander.independent_weight
    weights = [v.weight for v in expand(expander, ["tell me about the barn owl"], query=question)[1:]]
    assert weights and all(w == pytest.approx(0.5 * share) for w in weights)


def test_a_question_on_its_own_topic_gets_the_independent_share(index: TantivyRetriever) -> None:
    history, question = ["tell me about the barn owl"], "which hawks hunt rabbits by day"
    assert [v.weight for v in expand(HistoryExpander(index), history, query=question)[1:]] == [0.25, 0.25]
    quarter = HistoryExpander(index, independent_weight=0.5, weight=0.5 * 0.5)
    assert [v.weight for v in expand(quarter, history, query=question)[1:]] == [0.125, 0.125]
    # At 0 it gets no history variant: the search is the question's alone; a dependent one still does.
    none = HistoryExpander(index, independent_weight=0)
    assert expand(none, history, query=question) == (Variant(question, "original"),)
    assert [v.weight for v in expand(none, history)[1:]] == [0.5, 0.5]
    with open_index(index) as retriever:
        alone = retriever.search(question)
        read = retriever.search(question, history=history)
    assert [(v.source, v.weight) for v in read.diagnostics.variants][:3] == [
        ("original", 3.0),
        ("history-topic", 0.75),
        ("history", 0.75),
    ]
    assert [v.source for v in alone.diagnostics.variants] == ["original", "feedback", "heuristic"]


def test_bad_per_question_settings_are_refused_by_name() -> None:
    with pytest.raises(OutOfRange, match=r"independent_weight must be a number in \[0, 1\] \(got 1.5\)"):
        HistoryExpander(independent_weight=1.5)
    with pytest.raises(OutOfRange, match=r"independent_weight must be a number in \[0, 1\] \(got -0.1\)"):
        HistoryExpander(independent_weight=-0.1)
    with pytest.raises(OutOfRange, match=r"max_own_words must be an int >= 0 \(got -1\)"):
        HistoryExpander(max_own_words=-1)
    for bad in (True, 1.5, "2"):
        with pytest.raises(TypeError, match="max_own_words must be an int"):
            HistoryExpander(max_own_words=bad)  # type: ignore[arg-type]


def test_the_cache_key_follows_the_index_version(index: TantivyRetriever, tmp_path: Path) -> None:
    key = HistoryExpander(index).cache_key()
    assert key is not None and index.version in key  # type: ignore[operator]
    assert HistoryExpander(index, min_idf=3.0).cache_key() != key
    assert HistoryExpander(index, max_own_words=3).cache_key() != key
    assert HistoryExpander(index, independent_weight=1.0).cache_key() != key
    rebuilt = TantivyRetriever.build(DOCUMENTS[:4], tmp_path / "other")
    assert HistoryExpander(rebuilt).cache_key() != key
    assert HistoryExpander().cache_key() is not None  # no index: the settings alone decide

    class Unversioned:
        def analyze(self, text: str) -> list[tuple[str, str]]:
            return index.analyze(text)

        def document_frequency(self, term: str) -> int:
            return index.document_frequency(term)

        def __len__(self) -> int:
            return len(index)

    assert HistoryExpander(Unversioned()).cache_key() is None
