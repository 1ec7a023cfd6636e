"""Rebuilding an index in place: readers never find it half-done, an open index keeps answering, a
link at the index path stays, an index of the first format is read and upgraded, a killed build's
leftovers go away with the next build."""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from cli_process import has_open, signal_when
from fanfuse.errors import InvalidIndex
from fanfuse.retrievers.tantivy_index import MANIFEST, TantivyRetriever

DOCS = [{"id": f"d{i}", "text": f"common word{i} text"} for i in range(50)]

# Opens the index (and searches it) in a loop until stdin closes; prints opens and failures as JSON.
READER = """
import json, sys, threading
from fanfuse.retrievers.tantivy_index import TantivyRetriever
stop = threading.Event()
threading.Thread(target=lambda: (sys.stdin.read(), stop.set()), daemon=True).start()
opens, failures = 0, []
print("ready", flush=True)
while not stop.is_set():
    try:
        if not TantivyRetriever(sys.argv[1]).search("common", 3):
            failures.append("no hits")
        opens += 1
    except BaseException as error:
        failures.append(f"{type(error).__name__}: {error}")
print(json.dumps({"opens": opens, "failures": failures[:5], "failed": len(failures)}))
"""


def test_readers_never_see_a_rebuild_half_done(tmp_path: Path) -> None:
    directory = tmp_path / "index"
    TantivyRetriever.build(DOCS, directory)
    reader = subprocess.Popen(
        [sys.executable, "-c", READER, str(directory)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert reader.stdout is not None and reader.stdin is not None
    assert reader.stdout.readline() == "ready\n"
    for _ in range(40):
        TantivyRetriever.build(DOCS, directory)
    reader.stdin.close()
    report = json.loads(reader.stdout.read())
    assert reader.wait(timeout=60) == 0
    assert report["opens"] > 0
    assert report["failed"] == 0, report["failures"]


def test_an_open_index_keeps_answering_after_rebuilds(tmp_path: Path) -> None:
    directory = tmp_path / "index"
    opened = TantivyRetriever.build(DOCS, directory)
    for _ in range(2):
        TantivyRetriever.build([{"id": "new", "text": "other"}], directory)
    assert [h.id for h in opened.search("word7", 1)] == ["d7"]
    assert [h.id for h in TantivyRetriever(directory).search("other", 1)] == ["new"]
    assert sorted(p.name for p in directory.iterdir()) == sorted(
        [MANIFEST, TantivyRetriever(directory).data_directory.name]
    )


def test_a_link_at_the_index_path_is_followed_and_kept(tmp_path: Path) -> None:
    TantivyRetriever.build(DOCS, tmp_path / "real")
    (tmp_path / "link").symlink_to("real")
    TantivyRetriever.build([{"id": "new", "text": "other"}], tmp_path / "link")
    assert (tmp_path / "link").is_symlink()
    assert [h.id for h in TantivyRetriever(tmp_path / "real").search("other", 1)] == ["new"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["link", "real"]


def test_an_index_path_that_is_a_file_is_refused(tmp_path: Path) -> None:
    (tmp_path / "corpus.jsonl").write_text("keep me")
    with pytest.raises(InvalidIndex, match="is a file; pass a directory"):
        TantivyRetriever.build(DOCS, tmp_path / "corpus.jsonl")
    assert (tmp_path / "corpus.jsonl").read_text() == "keep me"


def test_first_format_index_is_read_then_upgraded_by_a_rebuild(tmp_path: Path) -> None:
    # The layout fanfuse wrote before versions: index files beside a format-1 manifest.
    built = TantivyRetriever.build(DOCS, tmp_path / "v2")
    old = tmp_path / "old"
    shutil.copytree(built.data_directory, old)
    (old / MANIFEST).write_text(json.dumps({"format": 1, "backend": "tantivy", "documents": len(DOCS)}))
    assert [h.id for h in TantivyRetriever(old).search("word3", 1)] == ["d3"]
    TantivyRetriever.build([{"id": "new", "text": "other"}], old)
    upgraded = TantivyRetriever(old)
    assert upgraded.manifest["format"] == 2
    assert [h.id for h in upgraded.search("other", 1)] == ["new"]
    assert sorted(p.name for p in old.iterdir()) == sorted([MANIFEST, upgraded.data_directory.name])
    assert sorted(p.name for p in tmp_path.iterdir()) == ["old", "v2"]


def test_a_killed_build_is_cleaned_up_by_the_next(tmp_path: Path) -> None:
    directory = tmp_path / "index"
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text("".join(json.dumps({"id": f"x{i}", "text": "y " * 50}) + "\n" for i in range(200_000)))

    def layout() -> tuple[list[str], list[str]]:
        return sorted(p.name for p in tmp_path.iterdir()), sorted(p.name for p in directory.iterdir())

    TantivyRetriever.build(DOCS, directory)
    clean = layout()
    args = ["index", str(corpus), "--index", str(directory)]
    assert signal_when(args, tmp_path, has_open(corpus), signal.SIGKILL).returncode == -signal.SIGKILL
    assert layout() != clean, "a killed build leaves its temporary directory"
    assert [h.id for h in TantivyRetriever(directory).search("word3", 1)] == ["d3"]
    rebuilt = TantivyRetriever.build([{"id": "new", "text": "other"}], directory)
    assert layout() == (clean[0], sorted([MANIFEST, rebuilt.data_directory.name]))
    assert [h.id for h in rebuilt.search("other", 1)] == ["new"]
