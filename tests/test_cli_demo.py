"""The main job: the standard-library corpus, its cached index, and `fanfuse demo`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fanfuse import stdlib_corpus
from fanfuse.cli import demo, main
from fanfuse.retrievers.dense_index import has_dense_index
from fanfuse.stdlib_corpus import stdlib_documents, stdlib_index
from test_open_index import needs_embed, without_the_embed_extra


def test_stdlib_corpus_documents_real_objects() -> None:
    documents = {d.id: d for d in stdlib_documents()}
    assert len(documents) > 1000
    assert "JSON" in documents["json.dumps"].text
    assert documents["os.path.join"].metadata == {"kind": "function", "module": "os.path"}
    assert documents["str.split"].text.startswith("split(")
    assert documents["topic:with"].metadata["kind"] == "topic"
    # Private names and side-effect modules stay out.
    assert not any(i.startswith(("_", "antigravity", "this.")) for i in documents)


def test_index_is_built_once_then_reused(tmp_path: Path) -> None:
    index, built = stdlib_index(tmp_path)
    assert built and len(index) > 1000
    reused, built_again = stdlib_index(tmp_path)
    assert not built_again and len(reused) == len(index)
    assert reused.search("serialize obj to a JSON formatted str", 3)[0].id == "json.dumps"


def test_demo_answers_single_query_bm25_and_the_default_side_by_side(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["demo", "--cache-dir", str(tmp_path), "--top-k", "3", "--no-dense", "serialize an object to JSON"]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert ", built in" in out
    assert "Q: serialize an object to JSON" in out
    assert "single query, BM25" in out and "default: bm25, 3 variants, RRF" in out
    assert "[0] serialize an object to JSON  (original)" in out
    rows = [line for line in out.splitlines() if line.startswith("  1 ")]
    assert len(rows) == 1 and "json" in rows[0]
    assert main(args) == 0
    again = capsys.readouterr().out
    assert "reused from cache" in again
    # The way to start over names the directory this run used, not the default cache.
    assert f"(delete {tmp_path / stdlib_corpus.stdlib_index_name()} or pass --rebuild" in again


def test_demo_shows_a_follow_up_question_alone_and_with_its_history(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["demo", "--cache-dir", str(tmp_path), "--no-dense"]) == 0
    out = capsys.readouterr().out
    history, question = demo.CONVERSATION
    part = out[out.index("A follow-up question in a conversation") :]
    assert f"earlier turn: {history[0]}" in part and f"Q: {question}" in part
    # Both readings of the conversation: the earlier turns' topic words, and the turns joined.
    assert part.count("(history-topic)") == 1 and part.count("(history)") == 1
    rows = [line for line in part.splitlines() if line[:3].strip().isdigit()]
    alone = [line[4 : 4 + demo.COLUMN].strip() for line in rows]
    followed = [line[7 + demo.COLUMN : 7 + 2 * demo.COLUMN].strip() for line in rows]
    # Alone, "the same ones" finds web servers and clocks; after the question before it, random numbers.
    assert not any(name.startswith("random") for name in alone)
    assert any(name.startswith("random") for name in followed)


def small_stdlib(monkeypatch: pytest.MonkeyPatch) -> None:
    """The demo over a real part of its corpus: every document of four modules (126 in 3.11)."""
    modules = {"json", "random", "shutil", "smtplib"}
    documents = [d for d in stdlib_corpus.stdlib_documents() if d.metadata.get("module") in modules]
    monkeypatch.setattr(stdlib_corpus, "stdlib_documents", lambda: iter(documents))


def test_demo_default_is_hybrid_on_real_embeddings(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    needs_embed()
    small_stdlib(monkeypatch)
    args = ["demo", "--cache-dir", str(tmp_path), "--top-k", "3", "How do I send mail from a Python script?"]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "dense: all-MiniLM-L6-v2-int8 vectors of each document's title and first 48 tokens, embedded" in (
        out
    )
    assert "default: bm25 + dense + dense-feedback, 3 variants, RRF" in out
    rows = [line for line in out.splitlines() if line.startswith("  1 ")]
    assert "smtplib" in rows[0] and "dense 0" in rows[0]  # the dense half ranked it for the question
    index, built = stdlib_index(tmp_path)
    assert not built and has_dense_index(index.data_directory)
    manifest = json.loads((index.data_directory / "dense" / "dense.json").read_text(encoding="utf-8"))
    assert manifest["settings"]["max_length"] == 48 and manifest["documents"] == len(index)
    assert main(args) == 0
    assert "48 tokens, reused from cache" in capsys.readouterr().out


def test_demo_without_the_embed_extra_says_so_and_answers_with_bm25(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    small_stdlib(monkeypatch)
    without_the_embed_extra(monkeypatch)
    assert main(["demo", "--cache-dir", str(tmp_path), "--top-k", "2", "copy a file"]) == 0
    out = capsys.readouterr().out
    assert "dense: off, the neural half needs fanfuse[embed]" in out
    assert "default: bm25, 3 variants, RRF" in out and "Q: copy a file" in out


@pytest.mark.parametrize(
    ("questions", "position", "got"),
    [(["  "], 1, "only blank characters"), (["How do I sort a list?", ""], 2, "an empty string")],
)
def test_every_question_is_checked_before_any_work(
    questions: list[str], position: int, got: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cache = tmp_path / "cache"
    assert main(["demo", *questions, "--cache-dir", str(cache), "--no-dense"]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == (
        f"fanfuse demo: error: argument QUESTIONS: question {position} must hold a word (got {got})\n"
    )
    assert not cache.exists()  # nothing indexed, nothing answered
