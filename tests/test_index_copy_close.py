"""A private copy of an index (a server's, `private_copy=True`) is removed when its retriever is
closed, and a server over an index directory closes the one it opened when it shuts down: a process
that serves one app after another (a reload, a test run) leaves no copy on disk per app. After
`close()`, every public method of `TantivyRetriever` that reads the index raises RuntimeError
(Tantivy opens segment files lazily, so a read could otherwise meet a removed file). A retriever the
caller opened and gave to the app stays the caller's to close."""

from __future__ import annotations

import inspect
import os
import tempfile
from pathlib import Path

import pytest
from fanfuse import TantivyRetriever
from fanfuse.retrievers.index_copy import COPY_PREFIX, OWNER_FILE
from fanfuse.service import app_for_index
from fastapi.testclient import TestClient
from test_cli_search_options import DOCUMENTS

# The methods that need the index's files, with a call each; the others read none (`analyze` runs the
# analyzers alone, `version` and `__len__` what opening read).
READS = {
    "search": lambda r: r.search("owls", 3),
    "search_batch": lambda r: r.search_batch(["owls"], 3),
    "documents": lambda r: list(r.documents()),
    "document_frequency": lambda r: r.document_frequency("owl"),
}
READ_NOTHING = {"analyze", "build", "close", "version"}


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("close") / "index"
    TantivyRetriever.build(DOCUMENTS, directory)
    return directory


def test_the_reading_methods_are_every_public_method() -> None:
    public = {name for name, _ in inspect.getmembers(TantivyRetriever) if not name.startswith("_")}
    assert public == set(READS) | READ_NOTHING


def test_close_removes_the_private_copy_now(index: Path) -> None:
    retriever = TantivyRetriever(index, private_copy=True)
    copy = retriever.private_directory
    assert copy is not None and copy.is_dir()
    retriever.close()
    assert not copy.exists()
    retriever.close()  # again: nothing left to do


@pytest.mark.parametrize("private", [True, False], ids=["copy", "in place"])
@pytest.mark.parametrize("method", READS)
def test_a_read_after_close_raises(index: Path, method: str, private: bool) -> None:
    retriever = TantivyRetriever(index, private_copy=private)
    assert READS[method](retriever) is not None
    retriever.close()
    with pytest.raises(RuntimeError, match="is closed"):
        READS[method](retriever)


@pytest.mark.parametrize("private", [True, False], ids=["copy", "in place"])
def test_documents_started_before_close_stop_at_close(index: Path, private: bool) -> None:
    retriever = TantivyRetriever(index, private_copy=private)
    documents = retriever.documents()
    assert next(documents) is not None
    retriever.close()
    with pytest.raises(RuntimeError, match="is closed"):
        next(documents)


def test_a_server_over_a_directory_removes_its_copy_when_it_shuts_down(index: Path) -> None:
    before = _own_copies()
    with TestClient(app_for_index(index)) as client:
        assert client.post("/search", json={"query": "owls"}).status_code == 200
        (copy,) = _own_copies() - before
        assert copy.is_dir()
    assert not copy.exists()


def test_a_retriever_given_to_the_server_stays_open(index: Path) -> None:
    retriever = TantivyRetriever(index, private_copy=True)
    with TestClient(app_for_index(retriever)) as client:
        assert client.post("/search", json={"query": "owls"}).status_code == 200
    assert retriever.private_directory is not None and retriever.private_directory.is_dir()
    assert retriever.search("owls", 3)
    retriever.close()


def _own_copies() -> set[Path]:
    """The private copies this process owns in the temporary directory (each names its owner's pid;
    other workers of the run make theirs in the same place)."""
    pid = f"{os.getpid()}\n"
    place = Path(tempfile.gettempdir())
    return {
        copy
        for copy in place.glob(f"{COPY_PREFIX}*")
        if (copy / OWNER_FILE).is_file() and (copy / OWNER_FILE).read_text() == pid
    }
