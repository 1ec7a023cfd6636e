"""The embedded index gives back each document's metadata as it was given: a string that reads as a
date stays that string (with its offset and precision), numbers keep their value whatever their size,
and a filter finds the value exactly. An index of the earlier layout (metadata in a Tantivy JSON field)
is still read, its dates as RFC 3339 text; metadata that is not JSON is refused naming the document."""

from __future__ import annotations

import datetime
import json
from pathlib import Path
from typing import Any

import pytest
import tantivy
from fanfuse.cli import main
from fanfuse.corpus import Document
from fanfuse.errors import InvalidCorpus
from fanfuse.retrievers import tantivy_index
from fanfuse.retrievers.filters import index_terms
from fanfuse.retrievers.tantivy_index import FILTER_FIELD, MANIFEST, TantivyRetriever

METADATA: list[dict[str, Any]] = [
    {"when": "2020-01-01T01:00:00+01:00", "tags": ["2021-03-04T05:06:07.5Z", "x"], "n": 2**70},
    {
        "when": "2020-01-01T00:00:00Z",
        "nested": {"at": "2022-02-02T02:02:02-05:00"},
        "n": -0.0,
        "u": "e\u0301",
    },
]


def build(directory: Path) -> TantivyRetriever:
    docs = [Document(f"d{i}", "common words", "", metadata) for i, metadata in enumerate(METADATA)]
    return TantivyRetriever.build(docs, directory)


def payloads(index: TantivyRetriever) -> dict[str, dict[str, Any]]:
    hits = index.search("common", 10)
    return {hit.id: {k: v for k, v in hit.payload.items() if k not in ("title", "text")} for hit in hits}


def test_metadata_comes_back_as_it_was_given(tmp_path: Path) -> None:
    index = build(tmp_path / "idx")
    expected = {f"d{i}": metadata for i, metadata in enumerate(METADATA)}
    assert payloads(index) == expected
    assert json.dumps(payloads(index), sort_keys=True) == json.dumps(expected, sort_keys=True)
    assert {d.id: dict(d.metadata) for d in index.documents()} == expected
    # Reopened from disk, the same.
    assert payloads(TantivyRetriever(tmp_path / "idx")) == expected


def test_a_filter_finds_a_date_like_string_as_written(tmp_path: Path) -> None:
    index = build(tmp_path / "idx")
    found = lambda filter: {hit.id for hit in index.search("common", 10, filter)}  # noqa: E731
    assert found({"when": "2020-01-01T01:00:00+01:00"}) == {"d0"}  # the same instant as d1's, another string
    assert found({"when": "2020-01-01T00:00:00Z"}) == {"d1"}
    assert found({"tags": "2021-03-04T05:06:07.5Z"}) == {"d0"}
    assert found({"n": 2**70}) == {"d0"}


def test_the_json_answer_of_a_search_holds_the_strings(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    build(tmp_path / "idx")
    assert main(["search", "--index", str(tmp_path / "idx"), "common", "--json", "--expander", "none"]) == 0
    hits = {hit["id"]: hit["payload"] for hit in json.loads(capsys.readouterr().out)["hits"]}
    assert hits["d0"]["when"] == "2020-01-01T01:00:00+01:00"
    assert hits["d1"]["nested"] == {"at": "2022-02-02T02:02:02-05:00"}


def earlier_layout_index(directory: Path) -> TantivyRetriever:
    """An index of the layout before the metadata's JSON text: a Tantivy JSON field, and filter terms."""
    builder = tantivy.SchemaBuilder()
    builder.add_text_field("id", stored=True, tokenizer_name="raw")
    for field in tantivy_index.SEARCH_FIELDS:
        builder.add_text_field(field, stored=True, tokenizer_name=tantivy_index.TEXT_TOKENIZER)
    builder.add_json_field("metadata", stored=True, tokenizer_name="raw")
    builder.add_text_field(FILTER_FIELD, stored=False, tokenizer_name="raw", index_option="basic")
    directory.mkdir()
    writer = tantivy.Index(builder.build(), path=str(directory)).writer()
    records = [{"when": "2020-01-01T01:00:00+01:00", "k": 1}, {"when": "2020-01-01T00:00:00.250Z"}]
    for i, metadata in enumerate(records):
        doc = {"id": f"d{i}", "title": "", "text": "common words", "metadata": metadata}
        writer.add_document(tantivy.Document(**doc, **{FILTER_FIELD: index_terms(metadata)}))
    writer.commit()
    writer.wait_merging_threads()
    (directory / MANIFEST).write_text(json.dumps({"format": 1, "backend": "tantivy", "documents": 2}))
    return TantivyRetriever(directory)


def test_an_index_of_the_earlier_layout_gives_its_dates_as_rfc_3339_text(tmp_path: Path) -> None:
    index = earlier_layout_index(tmp_path / "old")
    # Tantivy kept the instant in UTC: the offset and the trailing zeros are not recovered.
    assert payloads(index) == {
        "d0": {"when": "2020-01-01T00:00:00Z", "k": 1},
        "d1": {"when": "2020-01-01T00:00:00.250000Z"},
    }
    # Its filter terms were made from the metadata as given: a filter still finds the string as written.
    assert {hit.id for hit in index.search("common", 10, {"when": "2020-01-01T01:00:00+01:00"})} == {"d0"}


@pytest.mark.parametrize(
    ("value", "why"),
    [
        (datetime.datetime(2020, 1, 1), "Object of type datetime is not JSON serializable"),
        (float("nan"), "Out of range float values are not JSON compliant"),
        ({1, 2}, "Object of type set is not JSON serializable"),
    ],
)
def test_metadata_that_is_not_json_is_refused_naming_the_document(
    tmp_path: Path, value: object, why: str
) -> None:
    docs = [
        Document("ok", "common", "", {"a": 1}),
        Document("bad", "common", "", {"a": value}, "corpus.jsonl:2"),
    ]
    with pytest.raises(InvalidCorpus) as refused:
        TantivyRetriever.build(docs, tmp_path / "idx")
    assert str(refused.value).startswith(f"corpus.jsonl:2: document 'bad' cannot be indexed ({why}")
    assert not (tmp_path / "idx").exists()
