"""DenseRetriever with a real embedding (TF-IDF + SVD fitted on the corpus), and hybrid with Tantivy."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest
from fanfuse import MultiQueryRetriever
from fanfuse.corpus import Document
from fanfuse.errors import InvalidEncoder
from fanfuse.retrievers.dense import DenseRetriever, TfidfSvdEmbedder, document_text
from fanfuse.retrievers.dense_cache import dense_for_index
from fanfuse.retrievers.tantivy_index import TantivyRetriever

pytest.importorskip("sklearn")

CORPUS = [
    Document(
        "cat1", "Cats are small domesticated felines that purr and hunt mice.", "Cats", {"kind": "animal"}
    ),
    Document("cat2", "A kitten is a young cat; felines purr when content.", "Kittens", {"kind": "animal"}),
    Document("dog1", "Dogs are loyal canines that bark and fetch sticks.", "Dogs", {"kind": "animal"}),
    Document(
        "car1", "A car engine burns fuel; pistons drive the crankshaft.", "Engines", {"kind": "machine"}
    ),
    Document(
        "car2", "Electric cars use batteries and motors instead of fuel engines.", "EVs", {"kind": "machine"}
    ),
    Document("empty", "", "", {"kind": "none"}),
]


@pytest.fixture(scope="module")
def dense() -> DenseRetriever:
    embed = TfidfSvdEmbedder(dimensions=4).fit([document_text(d) for d in CORPUS])
    return DenseRetriever.from_documents(CORPUS, embed)


def test_nearest_documents_share_the_topic(dense: DenseRetriever) -> None:
    top2 = [h.id for h in dense.search("felines that purr", 2)]
    assert set(top2) == {"cat1", "cat2"}
    assert {h.id for h in dense.search("fuel engines", 2)} == {"car1", "car2"}


def test_scores_are_cosines_best_first(dense: DenseRetriever) -> None:
    hits = dense.search("cats purr", 10)
    scores = [h.score for h in hits]
    assert scores == sorted(scores, reverse=True)
    assert all(-1.0001 <= s <= 1.0001 for s in scores)
    # The empty document has no vector and is never returned.
    assert "empty" not in {h.id for h in hits} and len(hits) == 5


def test_exact_search_equals_brute_force_numpy() -> None:
    rng = np.random.default_rng(7)
    vectors = rng.normal(size=(50, 8)).astype(np.float32)
    query = rng.normal(size=8).astype(np.float32)
    retriever = DenseRetriever(
        lambda texts: np.tile(query, (len(texts), 1)), [f"d{i}" for i in range(50)], vectors
    )
    cosines = vectors @ query / (np.linalg.norm(vectors, axis=1) * np.linalg.norm(query))
    expected = [f"d{i}" for i in np.argsort(-cosines)[:7]]
    hits = retriever.search("anything", 7)
    assert [h.id for h in hits] == expected
    assert [h.score for h in hits] == pytest.approx(sorted(cosines, reverse=True)[:7], abs=1e-5)


def test_filter_on_metadata(dense: DenseRetriever) -> None:
    hits = dense.search("cats purr", 10, filter={"kind": "machine"})
    assert {h.id for h in hits} == {"car1", "car2"}
    assert {h.id for h in dense.search("cats", 10, filter={"kind": ["machine", "animal"]})} == {
        "cat1",
        "cat2",
        "dog1",
        "car1",
        "car2",
    }


def test_unknown_words_and_empty_query_find_nothing(dense: DenseRetriever) -> None:
    assert dense.search("zzzz qqqq", 5) == []
    assert dense.search("", 5) == []


def test_payload_has_title_text_metadata(dense: DenseRetriever) -> None:
    hit = dense.search("electric batteries", 1)[0]
    assert hit.id == "car2"
    assert hit.payload == {"kind": "machine", "title": "EVs", "text": CORPUS[4].text}


def test_bad_embedding_shape_is_a_clear_error() -> None:
    def broken(texts: Sequence[str]) -> list[float]:
        return [1.0] * len(texts)

    with pytest.raises(InvalidEncoder, match="expected a 2-D array with one row per text"):
        DenseRetriever.from_documents(CORPUS, broken)


def test_unfitted_embedder_is_a_clear_error() -> None:
    with pytest.raises(InvalidEncoder, match="not fitted"):
        TfidfSvdEmbedder()(["x"])


def test_hybrid_bm25_and_dense_in_one_multiquery_retriever(tmp_path: Path, dense: DenseRetriever) -> None:
    bm25 = TantivyRetriever.build(CORPUS, tmp_path / "index")
    # "kitten" occurs in one document only: BM25 finds cat2 alone, the dense side adds its neighbours.
    assert [h.id for h in bm25.search("kitten", 10)] == ["cat2"]
    with MultiQueryRetriever({"bm25": bm25, "dense": dense}, top_k=3) as hybrid:
        result = hybrid.search("kitten", expansion=False)
    assert result.ids[0] == "cat2"
    assert {p.retriever for p in result.hits[0].provenance} == {"bm25", "dense"}
    assert {p.retriever for p in result.hits[1].provenance} == {"dense"}


def test_saved_embedder_embeds_exactly_as_the_fitted_one(tmp_path: Path) -> None:
    fitted = TfidfSvdEmbedder(dimensions=3).fit([document_text(d) for d in CORPUS])
    fitted.save(tmp_path / "model.npz")
    loaded = TfidfSvdEmbedder.load(tmp_path / "model.npz")
    texts = ["kittens purr", "electric engines", "nothing known here"]
    np.testing.assert_array_equal(loaded(texts), fitted(texts))


def test_loading_a_file_that_is_not_a_model_is_a_clear_error(tmp_path: Path) -> None:
    (tmp_path / "model.npz").write_bytes(b"not numpy")
    with pytest.raises(InvalidEncoder, match="not a saved TfidfSvdEmbedder"):
        TfidfSvdEmbedder.load(tmp_path / "model.npz")


def test_index_dense_side_is_fitted_once_then_loaded(tmp_path: Path) -> None:
    index = TantivyRetriever.build(CORPUS, tmp_path / "index")
    first, fitted = dense_for_index(index, dimensions=4)
    again, fitted_again = dense_for_index(index, dimensions=4)
    assert fitted and not fitted_again
    assert [h.id for h in again.search("felines purr", 3)] == [h.id for h in first.search("felines purr", 3)]
    assert again.search("electric", 1)[0].payload["title"] == "EVs"
    # A damaged cache is fitted again, not trusted.
    (index.data_directory / "dense-vectors.npz").write_bytes(b"damaged")
    assert dense_for_index(index, dimensions=4)[1]
