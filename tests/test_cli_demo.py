"""The main job: the standard-library corpus, its cached index, and `fanfuse demo`."""

from __future__ import annotations

from pathlib import Path

import pytest
from fanfuse.cli import main
from fanfuse.stdlib_corpus import stdlib_documents, stdlib_index


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


def test_demo_answers_single_and_multi_query_side_by_side(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["demo", "--cache-dir", str(tmp_path), "--top-k", "3", "serialize an object to JSON"]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert ", built in" in out
    assert "Q: serialize an object to JSON" in out
    assert "single query (BM25)" in out and "multi-query" in out
    assert "[1] serialize object JSON  (heuristic)" in out
    rows = [line for line in out.splitlines() if line.startswith("  1 ")]
    assert len(rows) == 1 and "json" in rows[0]
    assert main(args) == 0
    assert "reused from cache" in capsys.readouterr().out
