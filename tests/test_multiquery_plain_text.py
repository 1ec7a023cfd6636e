"""What a retriever without query syntax (a dense encoder) receives: the variants' words, no syntax."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
from fanfuse.multiquery import (
    Expander,
    Expansion,
    FeedbackExpander,
    HeuristicExpander,
    MultiQueryRetriever,
    Variant,
)
from fanfuse.multiquery.expand.words import plain_text
from fanfuse.multiquery.plain_text import PlainTextQueries
from fanfuse.retrievers import Hit
from fanfuse.retrievers.tantivy_index import TantivyRetriever


@pytest.mark.parametrize(
    ("query", "plain"),
    [
        ("what does the with statement do", "what does the with statement do"),  # plain text: as is
        ('with statement "with statement"', "with statement with statement"),
        ("lava^0.2500 magma^0.1250 volcano^0.0625", "lava magma volcano"),
        ('"with statement"^0.2000 with^0.4', "with statement with"),
        ("split OR file OR path", "split file path"),
        ('"os.path.split" `std::vector`', "os.path.split std::vector"),
        ("ORACLE or OR-gate", "ORACLE or OR-gate"),  # only a free-standing OR is the operator
    ],
)
def test_plain_text_drops_the_syntax_and_keeps_the_words(query: str, plain: str) -> None:
    assert plain_text(query) == plain


def test_every_variant_the_expanders_write_reads_back_as_words(tmp_path: Path) -> None:
    documents = [
        {"id": "w", "text": "The with statement wraps a block in a context manager's enter and exit."},
        {"id": "c", "text": "A context manager closes the file when the with block ends."},
        {"id": "f", "text": "A for loop repeats a block for each item."},
    ]
    index = TantivyRetriever.build(documents, tmp_path / "index")
    question = "what does the with statement do"
    heuristic = HeuristicExpander(default_operator="and").candidates(question)
    feedback = FeedbackExpander(index).expand(question, max_variants=2).variants[1].text
    for variant in [*heuristic, feedback]:
        words = plain_text(variant).split()
        assert words and all(w.isalnum() or "'" in w for w in words), variant
    assert plain_text(feedback).split()[:3] == [part.split("^")[0] for part in feedback.split()[:3]]


class Recording:
    def __init__(self) -> None:
        self.calls: list[tuple[str, int, Mapping[str, Any] | None]] = []

    def search(self, query: str, k: int, filter: Mapping[str, Any] | None = None) -> list[Hit]:
        self.calls.append((query, k, filter))
        return [Hit("d", 1.0)]


def test_plain_text_queries_passes_k_and_filter_through() -> None:
    inner = Recording()
    wrapped = PlainTextQueries(inner)
    assert [h.id for h in wrapped.search('lava^0.5 "magma chamber"', 7, {"lang": "en"})] == ["d"]
    assert inner.calls == [("lava magma chamber", 7, {"lang": "en"})]


def test_plain_text_queries_needs_a_retriever() -> None:
    with pytest.raises(TypeError, match=r"retriever must have search\(query, k, filter\) \(got str\)"):
        PlainTextQueries("not a retriever")  # type: ignore[arg-type]


class WithPlainForm(Expander):
    """One variant written two ways, as FeedbackExpander writes its own."""

    def expand(self, query: str, *, max_variants: int, strategy: str | None = None) -> Expansion:
        return Expansion(
            (Variant(query, "original"), Variant("lava^0.5 magma^0.5", "feedback", plain="lava magma"))
        )


def test_a_retriever_reading_plain_text_gets_the_plain_form_the_others_the_text() -> None:
    keyword, dense = Recording(), Recording()
    retriever = MultiQueryRetriever(
        {"bm25": keyword, "dense": PlainTextQueries(dense)}, expander=WithPlainForm()
    )
    result = retriever.search("volcano?")
    assert [q for q, _, _ in keyword.calls] == ["volcano?", "lava^0.5 magma^0.5"]
    assert [q for q, _, _ in dense.calls] == ["volcano?", "lava magma"]
    searched = {(b.retriever, b.variant_index): b.variant for b in result.diagnostics.branches}
    assert searched[("dense", 1)] == "lava magma" and searched[("bm25", 1)] == "lava^0.5 magma^0.5"
