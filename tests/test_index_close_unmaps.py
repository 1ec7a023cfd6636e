"""Closing lets an index's files go: `TantivyRetriever.close()` unmaps them (once the reads running
at that moment end), and the retriever `open_index` opened from a directory closes it with itself
(the end of its `with` block), so that a version a rebuild removed stops taking disk space while
the Python objects live on. An index the caller opened and passed in stays the caller's to close."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest
from fanfuse import open_index
from fanfuse.retrievers.tantivy_index import TantivyRetriever

DOCUMENTS = [{"id": f"d{i}", "text": f"barn owls hunt mice in meadow {i}"} for i in range(20)]

pytestmark = pytest.mark.skipif(not Path("/proc/self/maps").exists(), reason="reads /proc/self/maps")


def mapped(directory: Path) -> set[str]:
    """The files under `directory` this process maps."""
    root = str(directory.resolve())
    with open("/proc/self/maps", encoding="utf-8") as maps:
        paths = {line.split(None, 5)[5].strip() for line in maps if len(line.split(None, 5)) == 6}
    return {path for path in paths if path.startswith(root)}


def let_go(directory: Path) -> bool:
    """Whether the process maps no file of `directory` any more. Tantivy's own threads hold the files
    a moment after the last Python reference goes, so the maps are given 10 s to end."""
    deadline = time.monotonic() + 10
    while mapped(directory) and time.monotonic() < deadline:
        time.sleep(0.02)
    return not mapped(directory)


@pytest.fixture()
def index(tmp_path: Path) -> Path:
    TantivyRetriever.build(DOCUMENTS, tmp_path / "idx")
    return tmp_path / "idx"


def test_closing_a_retriever_unmaps_its_files(index: Path) -> None:
    bm25 = TantivyRetriever(index)
    assert bm25.search("owls", 3)
    assert mapped(index)
    bm25.close()
    assert let_go(index), mapped(index)
    bm25.close()  # again: nothing more to do
    assert repr(bm25).endswith("closed)")
    with pytest.raises(RuntimeError, match="is closed"):
        bm25.search("owls", 3)
    with pytest.raises(RuntimeError, match="is closed"):
        len(bm25)


def test_the_retriever_open_index_opened_is_closed_with_it(index: Path) -> None:
    with open_index(index, dense=False) as retriever:
        assert retriever.search("owls").ids
        assert mapped(index)
    assert let_go(index), mapped(index)
    asynchronous = open_index(index, dense=False)
    asynchronous.close()
    assert let_go(index), mapped(index)


def test_an_index_the_caller_opened_stays_open(index: Path) -> None:
    bm25 = TantivyRetriever(index)
    with open_index(bm25, dense=False) as retriever:
        assert retriever.search("owls").ids
    assert bm25.search("owls", 3)  # still the caller's
    bm25.close()
    assert let_go(index), mapped(index)


def test_a_read_running_at_close_ends_before_the_files_go(index: Path) -> None:
    bm25 = TantivyRetriever(index)
    started, release = threading.Event(), threading.Event()
    documents = bm25.documents()
    first = next(documents)  # a read began; the generator holds no read between documents
    assert first.id
    results: list[object] = []

    def search() -> None:
        with bm25._in_use():
            started.set()
            release.wait(10)
            results.append(bm25._searcher.num_docs)

    reader = threading.Thread(target=search)
    reader.start()
    started.wait(10)
    bm25.close()
    assert mapped(index)  # the running read still has them
    release.set()
    reader.join(10)
    assert results == [len(DOCUMENTS)]
    assert let_go(index), mapped(index)
    with pytest.raises(RuntimeError, match="is closed"):
        next(documents)


def test_the_dense_vectors_open_index_mapped_go_with_it(tmp_path: Path, index: Path) -> None:
    """The neural vectors stored beside the index (a toy ONNX model: the real thing's code path)."""
    pytest.importorskip("onnxruntime", reason="OnnxEncoder needs onnxruntime (extra 'embed')")
    from fanfuse.retrievers.dense_cache import neural_dense_for_index
    from test_dense_index import toy_encoder

    encoder = toy_encoder(tmp_path)
    bm25 = TantivyRetriever(index)
    neural_dense_for_index(bm25, encoder=encoder)[0].close()  # embeds and stores the vectors
    bm25.close()
    assert let_go(index), mapped(index)
    with open_index(index, encoder=encoder) as retriever:
        assert "dense" in retriever.retriever_names and retriever.search("owls").ids
        assert {path for path in mapped(index) if path.endswith(".npy")}
    assert let_go(index), mapped(index)
