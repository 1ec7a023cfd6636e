"""Every way a filter enters a search means the same: `fanfuse search --filter` (each flag of the
command that takes one, read from its parser) and the service's `filter` field (read from its OpenAPI
schema) give, on both halves of a hybrid index, exactly the documents `filters.matches` keeps; a key
no document has is refused by each of them, and by a Python call, naming it."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import pytest
from fanfuse.cli import build_parser, main
from fanfuse.errors import InvalidIndex
from fanfuse.retrievers.filters import filter_from_flags, matches

DOCUMENTS = [
    {"id": "one", "text": "common words", "n": 1, "flag": True, "tags": ["x", "y"], "product": "cloud"},
    {"id": "true", "text": "common words", "n": True, "flag": 1, "tags": "x", "product": "onprem"},
    {"id": "float", "text": "common words", "n": 1.0, "flag": False, "tags": ["y"], "product": "edge"},
    {"id": "bare", "text": "common words"},
]
METADATA = {d["id"]: {k: v for k, v in d.items() if k not in ("id", "text")} for d in DOCUMENTS}

# (--filter flags, the same filter as JSON): the examples that once meant different things per backend.
CASES = [
    (["n=true"], {"n": True}),
    (["flag=1"], {"flag": 1}),
    (["n=1"], {"n": 1}),
    (["tags=x"], {"tags": "x"}),
    (['tags=["x","y"]'], {"tags": ["x", "y"]}),
    (["product=cloud", "product=onprem"], {"product": ["cloud", "onprem"]}),
    (["product=cloud", "n=1"], {"product": "cloud", "n": 1}),
]
# A key that no document has: refused, naming it and the keys there are.
UNKNOWN_KEY = "filter names the metadata key 'missing', which no document has, and would match nothing; "
KEYS = "the documents' keys: 'flag', 'n', 'product', 'tags'"


@pytest.fixture(scope="module")
def hybrid(tmp_path_factory: pytest.TempPathFactory) -> Path:
    pytest.importorskip("onnxruntime")
    root = tmp_path_factory.mktemp("filters")
    corpus = root / "corpus.jsonl"
    corpus.write_text("".join(json.dumps(d) + "\n" for d in DOCUMENTS), encoding="utf-8")
    assert main(["index", str(corpus), "--index", str(root / "idx"), "--dense"]) == 0
    return root / "idx"


def found_by_retriever(answer: dict[str, Any]) -> dict[str, set[str]]:
    # Every retriever the search ran (the dense side's vector feedback too) must keep the same documents.
    found: dict[str, set[str]] = {b["retriever"]: set() for b in answer["diagnostics"]["branches"]}
    assert {"bm25", "dense"} <= set(found)
    for hit in answer["hits"]:
        for p in hit["provenance"]:
            if p["rank"] is not None:
                found[p["retriever"]].add(hit["id"])
    return found


def expected(filter: dict[str, Any], answer: dict[str, Any]) -> dict[str, set[str]]:
    kept = {doc_id for doc_id, metadata in METADATA.items() if matches(filter, metadata)}
    return {b["retriever"]: kept for b in answer["diagnostics"]["branches"]}


def filter_flags() -> list[str]:
    """The options of every command that take a metadata filter, from the parsers themselves."""
    parser = build_parser()
    commands = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices
    return [
        f"{name} {flag}"
        for name, command in commands.items()
        for action in command._actions
        for flag in action.option_strings
        if "filter" in flag
    ]


def test_search_is_the_only_command_with_a_filter() -> None:
    # A new command or flag that takes a filter must join the cases below.
    assert filter_flags() == ["search --filter"]


@pytest.mark.parametrize(("flags", "filter"), CASES, ids=[" ".join(f) for f, _ in CASES])
def test_the_command_line_filter(
    hybrid: Path, flags: list[str], filter: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    assert filter_from_flags(flags) == filter
    argv = ["search", "common", "--index", str(hybrid), "--expander", "none", "--json", "--top-k", "20"]
    assert main([*argv, *(f"--filter={flag}" for flag in flags)]) == 0
    answer = json.loads(capsys.readouterr().out)
    assert found_by_retriever(answer) == expected(filter, answer)


@pytest.mark.parametrize(("flags", "filter"), CASES, ids=[" ".join(f) for f, _ in CASES])
def test_the_service_filter_field(hybrid: Path, flags: list[str], filter: dict[str, Any]) -> None:
    pytest.importorskip("fastapi")
    from fanfuse.service import app_for_index
    from fastapi.testclient import TestClient

    with TestClient(app_for_index(hybrid)) as client:
        assert (
            "filter"
            in client.get("/openapi.json").json()["components"]["schemas"]["SearchRequest"]["properties"]
        )
        response = client.post(
            "/search", json={"query": "common", "expander": "none", "top_k": 20, "filter": filter}
        )
    assert response.status_code == 200, response.text
    assert found_by_retriever(response.json()) == expected(filter, response.json())


def test_a_key_no_document_has_is_refused_by_every_entry_point(
    hybrid: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from fanfuse import open_index
    from fanfuse.errors import InvalidFilter
    from fanfuse.retrievers.tantivy_index import TantivyRetriever

    argv = ["search", "common", "--index", str(hybrid), "--filter", "missing=1"]
    assert main(argv) == 2
    assert capsys.readouterr().err == f"fanfuse search: error: --filter: {UNKNOWN_KEY}{KEYS}\n"
    retriever = open_index(hybrid)
    assert {"bm25", "dense"} <= set(retriever.retriever_names)
    # Once for the whole search, not as a failure of every branch.
    with pytest.raises(InvalidFilter, match=f"^{UNKNOWN_KEY}{KEYS}$"):
        retriever.search("common", filter={"missing": 1})
    for name in ("bm25", "dense"):
        with pytest.raises(InvalidFilter, match=f"^{UNKNOWN_KEY}{KEYS}$"):
            retriever.retrievers[name].search("common", 5, {"missing": 1})
    assert TantivyRetriever(hybrid).metadata_keys == {"flag", "n", "product", "tags"}
    pytest.importorskip("fastapi")
    from fanfuse.service import app_for_index
    from fastapi.testclient import TestClient

    with TestClient(app_for_index(hybrid)) as client:
        response = client.post("/search", json={"query": "common", "filter": {"missing": 1}})
    assert response.status_code == 422
    assert [(e["loc"], e["msg"]) for e in response.json()["detail"]] == [
        (["body", "filter"], UNKNOWN_KEY + KEYS)
    ]


def test_an_index_that_lists_no_keys_leaves_the_key_to_the_match(tmp_path: Path) -> None:
    from fanfuse.retrievers.tantivy_index import TantivyRetriever

    index = TantivyRetriever.build(DOCUMENTS, tmp_path / "idx")
    manifest = tmp_path / "idx" / "fanfuse-index.json"
    written = json.loads(manifest.read_text(encoding="utf-8"))
    assert written["metadata_keys"] == ["flag", "n", "product", "tags"]
    del written["metadata_keys"]  # as an index built before the list
    manifest.write_text(json.dumps(written), encoding="utf-8")
    index = TantivyRetriever(tmp_path / "idx")
    assert index.metadata_keys is None
    assert index.search("common", 5, {"missing": 1}) == []
    written["metadata_keys"] = "flag"
    manifest.write_text(json.dumps(written), encoding="utf-8")
    with pytest.raises(InvalidIndex, match="corrupt manifest \\('metadata_keys'\\)"):
        TantivyRetriever(tmp_path / "idx")


def test_only_a_filtered_search_asks_the_retrievers_for_their_keys() -> None:
    # A dense retriever reads its keys from every document's metadata: no unfiltered search pays that.
    from fanfuse.errors import InvalidFilter
    from fanfuse.multiquery import MultiQueryRetriever

    class Keyed:
        asked = 0

        @property
        def metadata_keys(self) -> frozenset[str]:
            self.asked += 1
            return frozenset({"team"})

        def search(self, query: str, k: int, filter: dict[str, Any] | None = None) -> list[Any]:
            return []

    keyed = Keyed()
    retriever = MultiQueryRetriever([keyed], expansion=False)
    retriever.search("common")
    assert keyed.asked == 0
    retriever.search("common", filter={"team": "x"})
    with pytest.raises(InvalidFilter, match="'other', which no document has"):
        retriever.search("common", filter={"other": "x"})
    assert keyed.asked == 1  # read once, then kept
