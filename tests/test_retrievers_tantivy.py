"""TantivyRetriever against a real Tantivy index built in tmp_path."""

from __future__ import annotations

import gzip
import json
import threading
from pathlib import Path

import pytest
from fanfuse import FusionError, OutOfRange
from fanfuse.corpus import Fields, read_jsonl
from fanfuse.errors import InvalidCorpus, InvalidFilter, InvalidIndex
from fanfuse.retrievers import Hit, Retriever, index_versions
from fanfuse.retrievers.tantivy_index import MANIFEST, TantivyRetriever

DOCS = [
    {"id": "paris", "title": "Paris", "text": "Paris is the capital of France.", "lang": "en", "year": 2020},
    {"id": "berlin", "title": "Berlin", "text": "Berlin is the capital city of Germany.", "lang": "de"},
    {"id": "rome", "title": "Rome", "text": "Rome, a city in Italy, is a capital city too.", "lang": "it"},
    {
        "id": "json",
        "title": "json.loads",
        "text": "Deserialize a JSON document to a Python object.",
        "lang": "en",
    },
    {
        "id": "parsing",
        "title": "argparse",
        "text": "Parsing command line arguments and options.",
        "lang": "en",
    },
]


@pytest.fixture()
def index(tmp_path: Path) -> TantivyRetriever:
    return TantivyRetriever.build(DOCS, tmp_path / "index")


def ids(hits: list[Hit]) -> list[str]:
    return [hit.id for hit in hits]


def write_jsonl(path: Path, lines: list[str]) -> Path:
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_bm25_ranks_the_matching_documents_best_first(index: TantivyRetriever) -> None:
    hits = index.search("germany capital", 3)
    assert hits[0].id == "berlin"
    assert set(ids(hits)) == {"berlin", "paris", "rome"}
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
    assert isinstance(index, Retriever)


def test_k_limits_the_hits_and_must_be_positive(index: TantivyRetriever) -> None:
    assert len(index.search("capital", 2)) == 2
    with pytest.raises(OutOfRange, match="k must be an int from 1 to 10000"):
        index.search("capital", 0)


def test_payload_holds_title_text_and_metadata(index: TantivyRetriever) -> None:
    (hit,) = index.search("france", 1)
    assert hit.payload == {
        "title": "Paris",
        "text": "Paris is the capital of France.",
        "lang": "en",
        "year": 2020,
    }


def test_or_and_phrases_mean_what_they_say(index: TantivyRetriever) -> None:
    assert set(ids(index.search('"capital city"', 10))) == {"berlin", "rome"}
    # "capital of" is a phrase only in the Paris text.
    assert ids(index.search('"capital of"', 10))[0] == "paris"
    assert set(ids(index.search("france OR germany", 10))) == {"paris", "berlin"}
    assert set(ids(index.search("capital -germany", 10))) == {"paris", "rome"}
    assert ids(index.search("title:argparse", 10)) == ["parsing"]


def test_english_stemming_matches_word_forms(index: TantivyRetriever) -> None:
    assert ids(index.search("parse", 10)) == ["parsing"]


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ('capital "of', {"paris", "berlin", "rome"}),  # unbalanced quote: searched as words
        ("json: loads", {"json"}),  # unknown field `json:`
        ("(france", {"paris"}),
        ("germany)", {"berlin"}),
        ("-", set()),
        ("-germany", {"berlin"}),  # only an exclusion: the word itself is searched
        ("", set()),
        ("   ", set()),
        ("germany AND", {"berlin"}),
        ("\\", set()),
    ],
)
def test_query_syntax_characters_never_crash(index: TantivyRetriever, query: str, expected: set[str]) -> None:
    assert set(ids(index.search(query, 10))) == expected


def test_filter_restricts_without_changing_scores(index: TantivyRetriever) -> None:
    unfiltered = {h.id: h.score for h in index.search("capital", 10)}
    filtered = index.search("capital", 10, filter={"lang": "de"})
    assert ids(filtered) == ["berlin"]
    assert filtered[0].score == pytest.approx(unfiltered["berlin"])
    assert set(ids(index.search("capital", 10, filter={"lang": ["de", "it"]}))) == {"berlin", "rome"}
    assert ids(index.search("capital", 10, filter={"lang": "en", "year": 2020})) == ["paris"]
    assert index.search("capital", 10, filter={"lang": "fr"}) == []


def test_bad_filter_names_the_key(index: TantivyRetriever) -> None:
    with pytest.raises(InvalidFilter, match=r"filter\['lang'\]"):
        index.search("capital", 10, filter={"lang": {"nested": 1}})


@pytest.mark.parametrize("key", ["", "  "])
def test_empty_filter_key_is_refused_by_name(index: TantivyRetriever, key: str) -> None:
    with pytest.raises(InvalidFilter, match=r"filter\[.*\].*non-empty metadata key"):
        index.search("capital", 10, filter={key: "de"})


def test_reopen_without_rebuild(index: TantivyRetriever, tmp_path: Path) -> None:
    reopened = TantivyRetriever(tmp_path / "index")
    assert len(reopened) == len(DOCS)
    assert ids(reopened.search("germany", 5)) == ["berlin"]
    assert {d.id for d in reopened.documents()} == {d["id"] for d in DOCS}


def test_concurrent_searches_from_threads(index: TantivyRetriever) -> None:
    results: list[list[str]] = []
    threads = [
        threading.Thread(target=lambda: results.append(ids(index.search("capital", 3)))) for _ in range(8)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(results) == 8 and all(r == results[0] for r in results)


def test_reads_jsonl_gz_with_custom_fields(tmp_path: Path) -> None:
    corpus = tmp_path / "c.jsonl.gz"
    with gzip.open(corpus, "wt", encoding="utf-8") as out:
        out.write(json.dumps({"document_id": "d1", "body": "a passage about owls", "name": "Owls"}) + "\n")
        out.write("\n")
        out.write(json.dumps({"document_id": "d2", "body": "a passage about cats"}) + "\n")
    fields = Fields(id="document_id", text="body", title="name")
    index = TantivyRetriever.build(read_jsonl(corpus, fields), tmp_path / "i")
    (hit,) = index.search("owls", 5)
    assert (hit.id, hit.payload["title"]) == ("d1", "Owls")


def test_corpus_line_without_text_names_file_and_line(tmp_path: Path) -> None:
    corpus = write_jsonl(
        tmp_path / "c.jsonl", ['{"id": "a", "text": "ok"}', '{"id": "b", "body": "no text"}']
    )
    with pytest.raises(InvalidCorpus, match=r"c\.jsonl:2: .*no text field 'text'"):
        TantivyRetriever.build(read_jsonl(corpus), tmp_path / "i")


def test_corpus_line_without_id_names_file_and_line(tmp_path: Path) -> None:
    corpus = write_jsonl(tmp_path / "c.jsonl", ['{"text": "no id"}'])
    with pytest.raises(InvalidCorpus, match=r"c\.jsonl:1: missing or empty id field 'id'"):
        TantivyRetriever.build(read_jsonl(corpus), tmp_path / "i")


def test_invalid_json_names_file_and_line(tmp_path: Path) -> None:
    corpus = write_jsonl(tmp_path / "c.jsonl", ['{"id": "a", "text": "ok"}', "{oops"])
    with pytest.raises(InvalidCorpus, match=r"c\.jsonl:2: not valid JSON"):
        list(read_jsonl(corpus))


def test_duplicate_ids_name_both_lines(tmp_path: Path) -> None:
    corpus = write_jsonl(
        tmp_path / "c.jsonl",
        ['{"id": "a", "text": "x"}', '{"id": "b", "text": "y"}', '{"id": "a", "text": "z"}'],
    )
    with pytest.raises(
        InvalidCorpus, match=r"c\.jsonl:3: duplicate document id 'a' \(first at .*c\.jsonl:1\)"
    ):
        TantivyRetriever.build(read_jsonl(corpus), tmp_path / "i")


def test_missing_index_directory_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(InvalidIndex, match="no such file or directory; build it with `fanfuse index"):
        TantivyRetriever(tmp_path / "nowhere")


def test_directory_without_manifest_is_not_an_index(tmp_path: Path) -> None:
    (tmp_path / "d").mkdir()
    with pytest.raises(InvalidIndex, match=f"not a fanfuse index \\(no {MANIFEST}\\)"):
        TantivyRetriever(tmp_path / "d")


@pytest.mark.parametrize("damage", ["meta.json", "segments", "manifest"])
def test_corrupt_index_is_a_clear_error(index: TantivyRetriever, tmp_path: Path, damage: str) -> None:
    directory = tmp_path / "index"
    if damage == "meta.json":
        (index.data_directory / "meta.json").write_text("garbage")
    elif damage == "segments":
        for segment_file in index.data_directory.glob("*.store"):
            segment_file.unlink()
    else:
        (directory / MANIFEST).write_text("{not json")
    with pytest.raises(InvalidIndex, match="corrupt"):
        TantivyRetriever(directory)


def test_failed_rebuild_leaves_the_existing_index_intact(index: TantivyRetriever, tmp_path: Path) -> None:
    directory = tmp_path / "index"
    before = sorted(p.name for p in directory.iterdir())
    corpus = write_jsonl(tmp_path / "c.jsonl", ['{"id": "x", "text": "new"}', '{"id": "x", "text": "dup"}'])
    with pytest.raises(InvalidCorpus, match="duplicate"):
        TantivyRetriever.build(read_jsonl(corpus), directory)
    assert sorted(p.name for p in directory.iterdir()) == before
    assert ids(TantivyRetriever(directory).search("germany", 5)) == ["berlin"]
    # No staging directory is left behind.
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c.jsonl", "index"]


def test_successful_rebuild_replaces_the_index(index: TantivyRetriever, tmp_path: Path) -> None:
    rebuilt = TantivyRetriever.build([{"id": "only", "text": "germany"}], tmp_path / "index")
    assert len(rebuilt) == 1
    assert ids(TantivyRetriever(tmp_path / "index").search("germany", 5)) == ["only"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["index"]


def test_refuses_to_replace_a_directory_that_is_not_an_index(tmp_path: Path) -> None:
    precious = tmp_path / "precious"
    precious.mkdir()
    (precious / "notes.txt").write_text("keep me")
    with pytest.raises(InvalidIndex, match="not empty and not a fanfuse index"):
        TantivyRetriever.build(DOCS, precious)
    assert (precious / "notes.txt").read_text() == "keep me"


def test_failed_swap_keeps_the_previous_version(
    index: TantivyRetriever, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A test double for a disk that fills up just when the manifest is replaced, once the new
    # version is in place: the new version goes, the previous one stays current.
    def failing_manifest(directory: Path, manifest: dict[str, object]) -> None:
        raise FusionError(f"{directory / MANIFEST}: No space left on device")

    monkeypatch.setattr(index_versions, "_write_manifest", failing_manifest)
    with pytest.raises(FusionError, match="No space left on device"):
        TantivyRetriever.build([{"id": "new", "text": "germany"}], tmp_path / "index")
    monkeypatch.undo()
    assert ids(TantivyRetriever(tmp_path / "index").search("germany", 5)) == ["berlin"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["index"]
    assert sorted(p.name for p in (tmp_path / "index").iterdir()) == [MANIFEST, index.data_directory.name]
