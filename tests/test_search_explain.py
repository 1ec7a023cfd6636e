"""`fanfuse search --explain` reads as the search page of `fanfuse serve` does: the same sections in
the same order (degraded, variants, fused list with each hit's split score, branches on one
timeline), each line checked against the same search's JSON."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from fanfuse.cli import main
from fanfuse.cli.explain import BAR_WIDTH, explain_lines
from fanfuse.multiquery import MultiQueryRetriever
from fanfuse.retrievers.tantivy_index import TantivyRetriever
from multiquery_toys import FailingRetriever, KeywordRetriever
from search_page_site import DOCUMENTS, QUERY

SEARCH = [QUERY, "--turn", "tell me about owls"]


@pytest.fixture(scope="module")
def index_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("explain") / "idx"
    TantivyRetriever.build(DOCUMENTS, directory)
    return directory


def searched(index_dir: Path, capsys: pytest.CaptureFixture[str], *flags: str) -> str:
    assert main(["search", "--index", str(index_dir), *SEARCH, *flags]) == 0
    out: str = capsys.readouterr().out
    return out


def test_explain_shows_the_pages_sections_as_the_json_has_them(
    index_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data: dict[str, Any] = json.loads(searched(index_dir, capsys, "--json"))
    lines = searched(index_dir, capsys, "--explain").splitlines()
    headings = [line.split(" (")[0].split(":")[0] for line in lines if line and not line.startswith(" ")]
    assert headings == [
        "variants",
        "fused list",
        "branches",
        "time",
    ]
    diagnostics = data["diagnostics"]
    start = lines.index(next(line for line in lines if line.startswith("variants (")))
    assert lines[start + 1 : start + 1 + len(diagnostics["variants"])] == [
        f"  [{i}] {v['text']}  ({v['source']}, weight {v['weight']:.2f})"
        for i, v in enumerate(diagnostics["variants"])
    ]
    text = "\n".join(lines)
    for rank, hit in enumerate(data["hits"], 1):
        assert f"  #{rank:<3} {hit['id']}  {hit['payload']['title']}  " in text
        assert f"       {hit['payload']['text']}" in text
        for letter, p in zip("abcdefgh", hit["provenance"], strict=False):
            assert f"{letter} [{p['variant_index']}] {p['retriever']} rank {p['rank']} +" in text
    bars = [line.strip() for line in lines if line.startswith("       |")]
    assert len(bars) == len(data["hits"]) and all(len(bar) == BAR_WIDTH + 2 for bar in bars)
    rows = [line for line in lines if line.startswith("  [") and "|" in line]
    assert len(rows) == len(diagnostics["branches"])
    for row, branch in zip(rows, diagnostics["branches"], strict=True):
        assert row.startswith(f"  [{branch['variant_index']}] {branch['retriever']}")
        assert f"| {branch['hits']} hits, " in row
    assert not any(line.startswith("degraded") for line in lines)


def test_explain_leads_with_degraded_and_shows_each_failed_branch() -> None:
    retrievers = [KeywordRetriever(), FailingRetriever()]
    with MultiQueryRetriever(
        retrievers, max_variants=2, reranker=lambda q, hits: [1.5] * len(hits)
    ) as retriever:
        result = retriever.search("rank fusion of lists")
    lines = explain_lines(result)
    assert result.hits
    assert [line for line in lines if line.startswith("  #")] == [
        f"  #{rank:<3} {hit.id}  {hit.payload.get('title', '')}  rerank 1.5000  {hit.score:.5f}"
        for rank, hit in enumerate(result.hits, 1)
    ]
    assert lines[0] == "degraded: 2 of 4 branches failed; the list fuses the others"
    failed = [line for line in lines if "error: ConnectionError: index server unreachable, " in line]
    assert [line.split("|")[0].strip() for line in failed] == ["[0] failing", "[1] failing"]
