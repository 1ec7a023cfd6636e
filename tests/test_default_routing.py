"""Which variant each retriever of the default search searches (`fanfuse.open_index`): BM25 every
variant; the dense retriever and its vector feedback the question and the variants written as
sentences, not the word-level ones (`DENSE_SKIPPED_SOURCES`), whose weight goes to the question's
list; the dense side's texts embedded in one encoder call a search."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest
from fanfuse import MultiQueryRetriever
from fanfuse.errors import InvalidSetting
from fanfuse.index_retriever import (
    DEFAULT_RETRIEVER_WEIGHTS,
    DEFAULT_VARIANT_WEIGHTS,
    DENSE_SKIPPED_SOURCES,
    default_expander,
    default_retrievers,
    open_index,
)
from fanfuse.multiquery import HistoryExpander, StaticExpander
from fanfuse.multiquery.plain_text import PlainTextQueries
from fanfuse.multiquery.planning import SearchOptions
from fanfuse.retrievers.tantivy_index import TantivyRetriever
from test_cli_search_options import DOCUMENTS, QUERY
from test_open_index import WordHashEncoder, needs_embed

HISTORY = ["tell me about barn owls", "where do they nest"]
DENSE_SIDE = ("dense", "dense-feedback")
# Every source of a variant a search can have, and the calls that make one of each: the
# retriever's settings (given the index) and the search's options.
Settings = Callable[[TantivyRetriever], dict[str, Any]]
SEARCHES: dict[str, tuple[Settings, dict[str, Any]]] = {
    "history": (lambda bm25: {}, {"history": HISTORY}),
    # Five documents give no word the idf a topic word needs by default.
    "history-topic": (lambda bm25: {"expander": HistoryExpander(bm25, min_idf=0.0)}, {"history": HISTORY}),
    "feedback": (lambda bm25: {}, {}),
    "heuristic": (lambda bm25: {}, {}),
    "explicit": (lambda bm25: {}, {"variants": ["which animal hunts small rodents after dark"]}),
    "static": (lambda bm25: {"expander": StaticExpander({QUERY: "the nocturnal hunter of mice"})}, {}),
}


class CallCountingEncoder(WordHashEncoder):
    """The word-hash encoder, counting its query calls."""

    def __init__(self) -> None:
        super().__init__()
        self.calls = 0

    def embed_queries(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        self.calls += 1
        return super().embed_queries(texts)


@pytest.fixture()
def bm25(tmp_path: Path) -> TantivyRetriever:
    return TantivyRetriever.build(DOCUMENTS, tmp_path / "bm25")


def searched_by(result: Any) -> dict[str, set[str]]:
    """For each variant source, the retrievers that searched it (skipped branches left out)."""
    sources = [v.source for v in result.diagnostics.variants]
    out: dict[str, set[str]] = {}
    for branch in result.diagnostics.branches:
        if not branch.skipped:
            out.setdefault(sources[branch.variant_index], set()).add(branch.retriever)
    return out


def list_weights(result: Any) -> dict[tuple[str, int], float]:
    """The fusion weight of each (retriever, variant) list, read back from RRF's contributions."""
    return {
        (p.retriever, p.variant_index): round(p.contribution * (60 + p.rank), 9)
        for hit in result.hits
        for p in hit.provenance
    }


@pytest.mark.parametrize("source", list(SEARCHES))
def test_each_variant_source_goes_to_the_retrievers_the_docs_say(bm25: TantivyRetriever, source: str) -> None:
    settings, options = SEARCHES[source]
    with open_index(bm25, dense=True, encoder=WordHashEncoder(), **settings(bm25)) as retriever:
        result = retriever.search(QUERY, **options)
    routed = searched_by(result)
    assert source in routed, f"no {source} variant in this search: the case does not test it"
    assert routed["original"] == {"bm25", *DENSE_SIDE}
    expected = {"bm25"} if source in DENSE_SKIPPED_SOURCES else {"bm25", *DENSE_SIDE}
    assert routed[source] == expected


def test_a_skipped_variant_weighs_on_the_dense_question_list(bm25: TantivyRetriever) -> None:
    with open_index(bm25, dense=True, encoder=WordHashEncoder(), top_k=len(DOCUMENTS)) as retriever:
        result = retriever.search(QUERY)
    sources = [v.source for v in result.diagnostics.variants]
    assert sources == ["original", "feedback", "heuristic"]
    weights = list_weights(result)
    original, variant = DEFAULT_VARIANT_WEIGHTS
    assert weights[("bm25", 0)] == original and weights[("bm25", 1)] == variant
    # The dense question's list weighs as the question's and the two word lists it does not search.
    assert weights[("dense", 0)] == original + 2 * variant
    feedback_weight = DEFAULT_RETRIEVER_WEIGHTS["dense-feedback"]
    assert weights[("dense-feedback", 0)] == pytest.approx((original + 2 * variant) * feedback_weight)
    assert not any(name in DENSE_SIDE and i > 0 for name, i in weights)


@pytest.mark.parametrize("options", [{}, {"history": HISTORY}, {"variants": ["owls that hunt at night"]}])
def test_the_dense_side_embeds_once_a_search(bm25: TantivyRetriever, options: SearchOptions) -> None:
    encoder = CallCountingEncoder()
    with open_index(bm25, dense=True, encoder=encoder) as retriever:
        for n, question in enumerate([QUERY, "owls at night", "what do bats eat", "mice"], start=1):
            retriever.search(question, **options)
            assert encoder.calls == n  # the dense retriever's and its feedback's texts, in one call
    assert not any(mark in q for q in encoder.queries for mark in '^"')  # no query syntax embedded


def test_the_real_encoder_is_called_once_a_search(tmp_path: Path) -> None:
    needs_embed()
    from fanfuse.retrievers.default_encoder import default_encoder

    encoder = default_encoder()
    calls: list[int] = []
    embed = encoder.embed_queries

    def counted(texts: Sequence[str]) -> npt.NDArray[np.float32]:
        calls.append(len(texts))
        return embed(texts)

    encoder.embed_queries = counted  # type: ignore[method-assign]
    bm25 = TantivyRetriever.build(DOCUMENTS, tmp_path / "bm25")
    with open_index(bm25, dense=True, encoder=encoder) as retriever:
        retriever.search(QUERY)
        retriever.search("owls at night", history=HISTORY)
    assert len(calls) == 2 and calls[0] == 1  # without history the dense side reads the question alone


def test_with_sentence_variants_only_the_results_are_those_of_every_variant_to_dense(
    bm25: TantivyRetriever,
) -> None:
    """Nothing is skipped, so nothing moves: the default equals the dense side given every variant."""
    encoder = WordHashEncoder()
    every = {
        name: PlainTextQueries(r.retriever) if isinstance(r, PlainTextQueries) else r
        for name, r in default_retrievers(bm25, True, encoder).items()
    }
    settings = {
        "expander": default_expander(bm25),
        "variant_weights": list(DEFAULT_VARIANT_WEIGHTS),
        "retriever_weights": DEFAULT_RETRIEVER_WEIGHTS,
    }
    variants = ["which animal hunts small rodents after dark", "nocturnal birds of prey"]
    with open_index(bm25, dense=True, encoder=encoder) as new, MultiQueryRetriever(every, **settings) as old:
        for options in ({"variants": variants}, {"max_variants": 1}, {"expansion": False}):
            assert new.search(QUERY, **options).hits == old.search(QUERY, **options).hits


def test_skipped_sources_are_checked() -> None:
    with pytest.raises(TypeError, match="skipped_sources must be a list of variant sources"):
        PlainTextQueries(_Searchable(), skipped_sources="heuristic")
    with pytest.raises(InvalidSetting, match="cannot name 'original'"):
        PlainTextQueries(_Searchable(), skipped_sources=["original"])
    assert "heuristic" in repr(PlainTextQueries(_Searchable(), skipped_sources=["heuristic"]))


class _Searchable:
    def search(self, query: str, k: int, filter: Any = None) -> list[Any]:
        return []
