"""`DenseFeedback`: vector pseudo-relevance feedback over a real `DenseRetriever`. Its ranking equals
Rocchio computed directly (the query vector moved toward its top documents, each of the first
search's 100 best scored by its cosine with the moved vector), ids and scores, with and without a
filter; with the default settings, the same as Rocchio over the whole corpus; it needs no second
embedding of the query."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt
import pytest
from fanfuse import MultiQueryRetriever, OutOfRange
from fanfuse.retrievers import DenseFeedback, DenseRetriever

DIMENSIONS = 16


def embedder(seed: int) -> tuple[npt.NDArray[np.float32], list[str]]:
    rng = np.random.default_rng(seed)
    return rng.normal(size=(300, DIMENSIONS)).astype(np.float32), [f"d{i:03d}" for i in range(300)]


class WordVectors:
    """A real embedding: each word a fixed random vector, a text the sum of its words'; it counts calls."""

    def __init__(self) -> None:
        self.calls = 0
        self._rng = np.random.default_rng(3)
        self._words: dict[str, npt.NDArray[np.float32]] = {}

    def __call__(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        self.calls += 1
        rows = []
        for text in texts:
            vector = np.zeros(DIMENSIONS, dtype=np.float32)
            for word in text.split():
                if word not in self._words:
                    self._words[word] = self._rng.normal(size=DIMENSIONS).astype(np.float32)
                vector += self._words[word]
            rows.append(vector)
        return np.array(rows, dtype=np.float32)


@pytest.fixture()
def parts() -> tuple[DenseRetriever, WordVectors]:
    vectors, ids = embedder(5)
    payloads = [{"text": f"document {i}", "team": "x" if i % 3 else "y"} for i in range(len(ids))]
    embed = WordVectors()
    return DenseRetriever(embed, ids, vectors, payloads), embed


def rocchio(
    dense: DenseRetriever,
    query_vector: npt.NDArray[np.float32],
    docs: int,
    weight: float,
    k: int,
    rows: npt.NDArray[np.bool_],
    candidates: int | None = 100,
) -> list[tuple[str, float]]:
    """The definition: q' = q + weight * mean of the top `docs` unit vectors; the cosine with q' of
    the `candidates` best by q among `rows` (None: all of them)."""
    matrix = dense.vectors.astype(np.float64)
    q = query_vector.astype(np.float64) / np.linalg.norm(query_vector)
    first = np.where(rows, matrix @ q, -np.inf)
    ranked = np.argsort(-first, kind="stable")
    moved = q + weight * matrix[ranked[:docs]].mean(axis=0)
    moved /= np.linalg.norm(moved)
    pool = ranked[: rows.sum() if candidates is None else candidates]
    best = sorted(pool, key=lambda i: (-(matrix[i] @ moved), list(pool).index(i)))[:k]
    return [(dense.ids[i], float(matrix[i] @ moved)) for i in best]


@pytest.mark.parametrize(("docs", "weight"), [(5, 0.5), (1, 2.0), (10, 0.25), (3, 0.0)])
def test_the_ranking_is_rocchio_over_the_whole_corpus(
    parts: tuple[DenseRetriever, WordVectors], docs: int, weight: float
) -> None:
    dense, embed = parts
    feedback = DenseFeedback(dense, feedback_docs=docs, feedback_weight=weight)
    everyone = np.ones(len(dense.ids), dtype=bool)
    for query in ("alpha beta", "gamma", "delta epsilon zeta", "alpha gamma eta theta"):
        hits = feedback.search(query, 20)
        expected = rocchio(dense, embed([query])[0], docs, weight, 20, everyone)
        assert [h.id for h in hits] == [doc for doc, _ in expected]
        assert [h.score for h in hits] == pytest.approx([score for _, score in expected], abs=1e-5)
        assert hits[0].payload["text"].startswith("document ")
    if weight == 0.0:  # no feedback: the dense retriever's own ranking
        assert [h.id for h in feedback.search("gamma", 20)] == [h.id for h in dense.search("gamma", 20)]


def test_with_the_default_settings_the_candidates_hold_the_whole_corpus_ranking(
    parts: tuple[DenseRetriever, WordVectors],
) -> None:
    dense, embed = parts
    everyone = np.ones(len(dense.ids), dtype=bool)
    for query in ("alpha beta", "gamma", "delta epsilon zeta", "alpha gamma eta theta"):
        whole = rocchio(dense, embed([query])[0], 5, 0.5, 20, everyone, candidates=None)
        assert [h.id for h in DenseFeedback(dense).search(query, 20)] == [doc for doc, _ in whole]


def test_a_filter_applies_to_both_passes(parts: tuple[DenseRetriever, WordVectors]) -> None:
    dense, embed = parts
    hits = DenseFeedback(dense).search("alpha beta", 10, filter={"team": "y"})
    rows = np.array([i % 3 == 0 for i in range(len(dense.ids))])
    expected = rocchio(dense, embed(["alpha beta"])[0], 5, 0.5, 10, rows)
    assert [h.id for h in hits] == [doc for doc, _ in expected]
    assert all(h.payload["team"] == "y" for h in hits)


def test_one_embedding_per_search_and_nothing_for_nothing(parts: tuple[DenseRetriever, WordVectors]) -> None:
    dense, embed = parts
    dense.query_cache_size = 0
    feedback = DenseFeedback(dense)
    before = embed.calls
    feedback.search("alpha", 5)
    assert embed.calls == before + 1
    assert feedback.search("   ", 5) == []  # the dense retriever finds nothing: no feedback either


def test_a_batch_is_the_searches_one_by_one_with_one_embedding(
    parts: tuple[DenseRetriever, WordVectors],
) -> None:
    dense, embed = parts
    dense.query_cache_size = 0  # every query embedded again: the calls are counted
    queries = ["alpha beta", "gamma", "   ", "delta epsilon zeta"]
    before = embed.calls
    batched = DenseFeedback(dense).search_batch(queries, 7, filter={"team": "x"})
    assert embed.calls == before + 1
    assert batched == [DenseFeedback(dense).search(q, 7, filter={"team": "x"}) for q in queries]
    assert batched[2] == []


def test_as_a_branch_of_a_multi_query_search(parts: tuple[DenseRetriever, WordVectors]) -> None:
    dense, _ = parts
    with MultiQueryRetriever(
        {"dense": dense, "dense-feedback": DenseFeedback(dense)}, expansion=False
    ) as multi:
        result = multi.search("alpha beta")
    assert {p.retriever for hit in result.hits for p in hit.provenance} == {"dense", "dense-feedback"}


def test_bad_settings_are_refused_by_name(parts: tuple[DenseRetriever, WordVectors]) -> None:
    dense, _ = parts
    with pytest.raises(TypeError, match="dense must have search"):
        DenseFeedback(object())  # type: ignore[arg-type]
    with pytest.raises(OutOfRange, match=r"feedback_docs must be an int from 1 to 10000 \(got 0\)"):
        DenseFeedback(dense, feedback_docs=0)
    with pytest.raises(OutOfRange, match=r"feedback_weight must be a finite number >= 0 \(got -1.0\)"):
        DenseFeedback(dense, feedback_weight=-1)
    with pytest.raises(TypeError, match=r"feedback_weight must be a finite number >= 0 \(got bool\)"):
        DenseFeedback(dense, feedback_weight=True)
