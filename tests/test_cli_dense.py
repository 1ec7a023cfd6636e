"""`fanfuse index --dense` and `fanfuse search --dense`: neural vectors stored with the index (all or
nothing), embedded on first use, and a clear exit 2 where the extra is missing."""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from pathlib import Path

import pytest
from fanfuse.cli import main
from fanfuse.corpus import Document
from fanfuse.retrievers.dense_index import has_dense_index
from fanfuse.retrievers.tantivy_index import TantivyRetriever
from test_cli_search_options import DOCUMENTS, QUERY
from test_open_index import needs_embed, without_the_embed_extra


def write_corpus(path: Path, documents: Sequence[dict[str, str]]) -> Path:
    path.write_text("".join(json.dumps(d) + "\n" for d in documents), encoding="utf-8")
    return path


def searched_retrievers(index_dir: Path, capsys: pytest.CaptureFixture[str], *flags: str) -> set[str]:
    assert main(["search", "--index", str(index_dir), QUERY, "--json", *flags]) == 0
    result = json.loads(capsys.readouterr().out)
    return {b["retriever"] for b in result["diagnostics"]["branches"]}


def test_index_dense_stores_vectors_with_the_index(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    needs_embed()
    corpus = write_corpus(tmp_path / "c.jsonl", DOCUMENTS)
    assert main(["index", str(corpus), "--index", str(tmp_path / "idx"), "--dense"]) == 0
    out = capsys.readouterr().out
    assert "embedded 5 documents with all-MiniLM-L6-v2-int8" in out and "indexed 5 documents" in out
    first = TantivyRetriever(tmp_path / "idx").data_directory
    assert has_dense_index(first)
    manifest = json.loads((first / "dense" / "dense.json").read_text(encoding="utf-8"))
    assert manifest["documents"] == 5 and manifest["settings"]["max_length"] == 128
    # Rebuilt without --dense: a new version, without vectors (they were of the old documents).
    assert main(["index", str(corpus), "--index", str(tmp_path / "idx")]) == 0
    assert not has_dense_index(TantivyRetriever(tmp_path / "idx").data_directory)
    assert not first.exists()


def test_index_dense_without_the_extra_exits_2_before_writing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    TantivyRetriever.build(DOCUMENTS[:2], tmp_path / "idx")
    before = TantivyRetriever(tmp_path / "idx").data_directory
    without_the_embed_extra(monkeypatch)
    corpus = write_corpus(tmp_path / "c.jsonl", DOCUMENTS)
    for target in (tmp_path / "idx", tmp_path / "new"):
        assert main(["index", str(corpus), "--index", str(target), "--dense"]) == 2
        err = capsys.readouterr().err
        assert err == "fanfuse index: error: --dense needs fanfuse[embed]: pip install 'fanfuse[embed]'\n"
    assert not (tmp_path / "new").exists()
    index = TantivyRetriever(tmp_path / "idx")
    assert index.data_directory == before and len(index) == 2


def test_a_failure_after_indexing_keeps_the_previous_index_and_vectors(tmp_path: Path) -> None:
    def store(version: Path, documents: Sequence[Document]) -> None:
        (version / "dense").mkdir()
        (version / "dense" / "dense.json").write_text("{}", encoding="utf-8")
        seen.append([d.id for d in documents])

    seen: list[list[str]] = []
    TantivyRetriever.build(DOCUMENTS[:2], tmp_path / "idx", then=store)
    assert seen == [["zeta", "alpha"]]
    before = TantivyRetriever(tmp_path / "idx").data_directory
    assert has_dense_index(before)

    def fail(version: Path, documents: Sequence[Document]) -> None:
        raise KeyboardInterrupt  # Ctrl-C while embedding

    with pytest.raises(KeyboardInterrupt):
        TantivyRetriever.build(DOCUMENTS, tmp_path / "idx", then=fail)
    index = TantivyRetriever(tmp_path / "idx")
    assert index.data_directory == before and len(index) == 2 and has_dense_index(before)
    assert [p.name for p in (tmp_path / "idx").iterdir() if p.name.startswith("version-")] == [before.name]


def test_search_dense_embeds_once_and_the_index_stays_hybrid(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    needs_embed()
    TantivyRetriever.build(DOCUMENTS, tmp_path / "idx")
    assert searched_retrievers(tmp_path / "idx", capsys) == {"bm25"}
    assert main(["search", "--index", str(tmp_path / "idx"), QUERY, "--dense"]) == 0
    assert f"embedded 5 documents, kept in {tmp_path / 'idx'}" in capsys.readouterr().err
    assert has_dense_index(TantivyRetriever(tmp_path / "idx").data_directory)
    assert searched_retrievers(tmp_path / "idx", capsys) == {"bm25", "dense", "dense-feedback"}
    assert main(["search", "--index", str(tmp_path / "idx"), QUERY, "--dense"]) == 0
    assert capsys.readouterr().err == ""  # reused, not embedded again
    assert searched_retrievers(tmp_path / "idx", capsys, "--no-dense") == {"bm25"}


def test_an_unimportable_onnxruntime_reads_as_no_embed_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    # What the tests above rely on: with onnxruntime unimportable, fanfuse sees no embed extra.
    from fanfuse.retrievers.default_encoder import embed_extra_installed

    without_the_embed_extra(monkeypatch)
    assert not embed_extra_installed()
    with pytest.raises(ImportError):
        __import__("onnxruntime")
    assert sys.modules["onnxruntime"] is None


def test_the_timing_line_counts_the_branches_the_routing_skips(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The dense side does not search the word-list variants: the text says how many of the branches
    it counts were skipped, as the JSON's branches do."""
    needs_embed()
    TantivyRetriever.build(DOCUMENTS, tmp_path / "idx")
    assert main(["search", "--index", str(tmp_path / "idx"), QUERY, "--dense", "--json"]) == 0
    branches = json.loads(capsys.readouterr().out)["diagnostics"]["branches"]
    skipped = sum(b["skipped"] for b in branches)
    assert skipped > 0
    assert main(["search", "--index", str(tmp_path / "idx"), QUERY]) == 0
    out = capsys.readouterr().out
    assert f"= {len(branches)} branches ({skipped} skipped: weight 0) in " in out
