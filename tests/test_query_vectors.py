"""Query vectors of a dense retriever: the cache, the micro-batching of concurrent searches, and the
rankings they give against embedding each query alone (the real default encoder where installed)."""

from __future__ import annotations

import threading
import zlib
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt
import pytest
from fanfuse import DenseRetriever, OutOfRange
from fanfuse.retrievers.query_vectors import CACHE_SIZE_VARIABLE, QueryVectors, cache_size_from_env


class CountingEmbedder:
    """A deterministic embedding (each word hashed into 16 dimensions); records every call. With a
    `gate`, the first call waits there until the test opens it."""

    def __init__(self, gate: threading.Event | None = None) -> None:
        self.calls: list[list[str]] = []
        self.gate = gate
        self.entered = threading.Event()
        self.fail_next = False

    def __call__(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        self.calls.append(list(texts))
        self.entered.set()
        if self.gate is not None and len(self.calls) == 1:
            assert self.gate.wait(30)
        if self.fail_next:
            self.fail_next = False
            raise RuntimeError("the model server is down")
        return np.stack([vector(text) for text in texts])


def vector(text: str) -> npt.NDArray[np.float32]:
    out = np.zeros(16, dtype=np.float32)
    for word in text.split():
        out[zlib.crc32(word.encode()) % 16] += 1.0
    return out


def test_a_repeated_query_is_embedded_once_and_the_cache_is_bounded() -> None:
    embed = CountingEmbedder()
    vectors = QueryVectors(embed, cache_size=2)
    first = vectors(["a b", "c", "a b"])
    assert embed.calls == [["a b", "c"]]  # a text repeated in one call is embedded once
    assert np.array_equal(first, np.stack([vector("a b"), vector("c"), vector("a b")]))
    assert np.array_equal(vectors(["c", "a b"]), first[[1, 0]]) and len(embed.calls) == 1
    vectors(["d"])  # the cache holds two: "c" (the least recently used) goes
    vectors(["a b"])
    vectors(["c"])
    assert embed.calls == [["a b", "c"], ["d"], ["c"]]
    vectors.cache_size = 0
    vectors(["a b"])
    assert embed.calls[-1] == ["a b"]


def test_concurrent_callers_share_one_encoder_call_once_the_running_one_ends() -> None:
    gate = threading.Event()
    embed = CountingEmbedder(gate)
    vectors = QueryVectors(embed, cache_size=0)
    results: dict[str, npt.NDArray[np.float32]] = {}

    def search(text: str) -> None:
        results[text] = vectors([text, "shared words"])

    first = threading.Thread(target=search, args=("first",))
    first.start()
    assert embed.entered.wait(30)  # the first call runs, holding the encoder
    others = [threading.Thread(target=search, args=(f"query {i}",)) for i in range(6)]
    for thread in others:
        thread.start()
    while sum(len(w.texts) for w in vectors._queue) < 12:  # all six have queued their texts
        threading.Event().wait(0.001)
    gate.set()
    for thread in [first, *others]:
        thread.join(30)
    assert len(embed.calls) == 2  # the first call, then one for all six waiting callers
    # "shared words" comes from the call that ran while they waited, even with the cache off.
    assert sorted(embed.calls[1]) == sorted(f"query {i}" for i in range(6))
    for text, rows in results.items():
        assert np.array_equal(rows, np.stack([vector(text), vector("shared words")]))


@pytest.mark.parametrize("cache_size", [4096, 0])
def test_a_text_the_running_call_embeds_is_not_embedded_again_by_a_waiting_caller(cache_size: int) -> None:
    """Two searches asking for the same texts at once (a dense retriever and its vector feedback):
    the second waits for the first's call and takes its rows from it, with or without a cache."""
    gate = threading.Event()
    embed = CountingEmbedder(gate)
    vectors = QueryVectors(embed, cache_size=cache_size)
    results: list[npt.NDArray[np.float32]] = []
    texts = ["what does it eat", "barn owl what does it eat"]
    first = threading.Thread(target=lambda: results.append(vectors(texts)))
    first.start()
    assert embed.entered.wait(30)
    second = threading.Thread(target=lambda: results.append(vectors([*texts, "new"])))
    second.start()
    while not vectors._queue:  # the second caller waits for the running call
        threading.Event().wait(0.001)
    gate.set()
    for thread in (first, second):
        thread.join(30)
    assert embed.calls == [texts, ["new"]]
    assert np.array_equal(results[1], np.stack([vector(t) for t in [*texts, "new"]]))


def test_an_encoder_error_reaches_every_caller_of_that_call_and_the_next_call_works() -> None:
    embed = CountingEmbedder()
    vectors = QueryVectors(embed)
    embed.fail_next = True
    with pytest.raises(RuntimeError, match="the model server is down"):
        vectors(["a"])
    assert np.array_equal(vectors(["a"])[0], vector("a"))


def test_the_cache_size_is_checked_where_it_is_set(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(CACHE_SIZE_VARIABLE, "12")
    assert cache_size_from_env() == 12
    assert DenseRetriever(CountingEmbedder(), ["x"], [vector("x")]).query_cache_size == 12
    for bad in ("-1", "many", "1.5"):
        monkeypatch.setenv(CACHE_SIZE_VARIABLE, bad)
        with pytest.raises(OutOfRange, match=f"{CACHE_SIZE_VARIABLE} must be an int >= 0"):
            cache_size_from_env()
    monkeypatch.delenv(CACHE_SIZE_VARIABLE)
    for bad, error in ((-1, OutOfRange), (True, TypeError), (2.0, TypeError)):
        with pytest.raises(error, match="query_cache_size must be an int >= 0"):
            DenseRetriever(CountingEmbedder(), ["x"], [vector("x")], query_cache_size=bad)  # type: ignore[arg-type]


def test_search_batch_embeds_once_and_equals_search_one_by_one() -> None:
    texts = {f"d{i}": " ".join(f"w{(i * j) % 23}" for j in range(1, 6)) for i in range(40)}
    embed = CountingEmbedder()
    dense = DenseRetriever(embed, list(texts), [vector(t) for t in texts.values()], query_cache_size=0)
    queries = ["w1 w2", "w3", "   ", "w5 w7 w11"]
    batch = dense.search_batch(queries, 5)
    assert embed.calls[-1] == ["w1 w2", "w3", "w5 w7 w11"]  # blank queries are not embedded
    assert batch[2] == []
    assert batch == [dense.search(q, 5) for q in queries]
    with pytest.raises(OutOfRange, match="k must be an int from 1 to 10000"):
        dense.search_batch(queries, 0)


def test_the_default_encoder_ranks_alike_batched_and_alone() -> None:
    pytest.importorskip("onnxruntime")
    from fanfuse.retrievers.default_encoder import default_encoder, embed_extra_installed

    if not embed_extra_installed():
        pytest.skip("needs fanfuse[embed]")
    encoder = default_encoder()
    passages = [
        "Reciprocal rank fusion adds one over k plus the rank of each list.",
        "BM25 scores a document by term frequency and inverse document frequency.",
        "Dense retrieval embeds queries and passages in one vector space.",
        "The Arizona Cardinals play their home games in Glendale.",
        "A query variant rewrites the question with other words.",
        "Onnxruntime runs the encoder's graph on the CPU.",
    ]
    ids = [f"p{i}" for i in range(len(passages))]
    dense = DenseRetriever(encoder.embed_queries, ids, encoder.embed_passages(passages), query_cache_size=0)
    queries = ["how does rank fusion work", "where do the cardinals play", "embedding queries", "bm25"]
    alone = [encoder.embed_queries([q])[0] for q in queries]
    together = encoder.embed_queries(queries)
    # Padding to the longest query changes the last float bits, not the vectors' meaning.
    for single, batched in zip(alone, together, strict=True):
        assert float(single @ batched) == pytest.approx(1.0, abs=1e-4)
    batch = dense.search_batch(queries, len(passages))
    for query, hits in zip(queries, batch, strict=True):
        one = dense.search(query, len(passages))
        assert [h.id for h in hits] == [h.id for h in one]  # no two passages are tied here
        assert [h.score for h in hits] == pytest.approx([h.score for h in one], abs=1e-4)
