"""A server never dies of a file: `fanfuse serve` (a real process) keeps answering when the index's
memory-mapped files are truncated under it, answers degraded, naming the branch, when Tantivy panics
on a damaged segment, and refuses at open, with one line naming what is wrong, every other damage
to an index directory it can be given; non-finite vectors are refused when written and when opened,
and a Rust panic is a branch failure wherever a branch runs, sync or async."""

from __future__ import annotations

import asyncio
import json
import re
import shutil
import signal
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any, ClassVar

import httpx
import numpy as np
import pytest
import tantivy
from cli_process import CLI
from fanfuse import MultiQueryRetriever
from fanfuse.errors import InvalidEncoder, InvalidIndex
from fanfuse.retrievers import Hit
from fanfuse.retrievers.dense import DenseRetriever
from fanfuse.retrievers.dense_index import write_dense_index
from fanfuse.retrievers.tantivy_index import TantivyRetriever
from index_damage import overwrite, segment_file

pytest.importorskip("fastapi")
pytest.importorskip("onnxruntime")

from service_server import serve_command

# Enough documents that a term's postings are bit-packed blocks, which a damaged .idx breaks at search.
DOCUMENTS = [{"id": f"d{i}", "text": f"common word{i % 50} lorem ipsum dolor {i}"} for i in range(300)]
SEARCH = {"query": "common lorem", "expander": "none", "top_k": 5}
# The part of the postings file whose damage makes Tantivy panic while searching (not at open).
PANICKING_POSTINGS = (0.45, 0.65, 0xFF)


@pytest.fixture(scope="module")
def pristine(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A hybrid index (BM25 and the built-in model's vectors) to copy for each test."""
    from fanfuse.cli import main

    root = tmp_path_factory.mktemp("damage")
    corpus = root / "corpus.jsonl"
    corpus.write_text("".join(json.dumps(d) + "\n" for d in DOCUMENTS), encoding="utf-8")
    assert main(["index", str(corpus), "--index", str(root / "idx"), "--dense"]) == 0
    return root / "idx"


@pytest.fixture()
def index(pristine: Path, tmp_path: Path) -> Path:
    shutil.copytree(pristine, tmp_path / "idx")
    return tmp_path / "idx"


def version(index: Path) -> Path:
    return next(index.glob("version-*"))


def search(url: str, **fields: Any) -> httpx.Response:
    return httpx.post(f"{url}/search", json={**SEARCH, **fields}, timeout=60)


@pytest.mark.parametrize("workers", ["1", "2"])
def test_files_truncated_under_a_running_server(index: Path, workers: str) -> None:
    # What `cp NEW OLD` does to a live index: the file is truncated, then rewritten. The server
    # searched memory-mapped files: the next read past the new end was SIGBUS, the process gone.
    # With workers, the one copy the supervisor made is what each of them opens.
    with serve_command("--index", str(index), "--workers", workers) as (url, process):
        before = search(url)
        assert before.status_code == 200, before.text
        for path in [
            *version(index).glob("*.store"),
            *version(index).glob("*.idx"),
            version(index) / "dense" / "vectors.npy",
        ]:
            path.write_bytes(b"")
        for _ in range(3):
            after = search(url)
            assert after.status_code == 200, after.text
            assert [h["id"] for h in after.json()["hits"]] == [h["id"] for h in before.json()["hits"]]
        assert process.poll() is None


def test_a_panic_in_a_branch_is_a_failed_branch_named_in_the_answer(index: Path) -> None:
    # Damage that passes the checksum (a bug, or a disk returning wrong data): Tantivy panics while
    # searching; pyo3's PanicException is a BaseException, which escaped the branch: answer 500.
    overwrite(segment_file(version(index), "idx"), *PANICKING_POSTINGS, keep_checksum=True)
    with serve_command("--index", str(index)) as (url, process):
        hybrid = search(url)
        assert hybrid.status_code == 200, hybrid.text
        diagnostics = hybrid.json()["diagnostics"]
        assert diagnostics["degraded"] is True
        failed = {b["retriever"]: b["error"] for b in diagnostics["branches"] if b["error"]}
        assert list(failed) == ["bm25"] and "could not be read" in failed["bm25"], failed
        assert hybrid.json()["hits"], "the dense branch is fused"
        bm25_only = search(url, dense=False)
        assert bm25_only.status_code == 503 and "could not be read" in bm25_only.text, bm25_only.text
        assert httpx.get(f"{url}/healthz", timeout=30).status_code == 200
        assert process.poll() is None
        process.send_signal(signal.SIGTERM)
        assert process.wait(30) == -signal.SIGTERM


def _damage_segments(component: str) -> Callable[[Path], None]:
    return lambda index: overwrite(segment_file(version(index), component), 0.3, 0.5, 0xFF)


def _truncate(relative: str, keep: float = 0.5) -> Callable[[Path], None]:
    def damage(index: Path) -> None:
        path = next(version(index).glob(relative))
        path.write_bytes(path.read_bytes()[: int(path.stat().st_size * keep)])

    return damage


def _replace(relative: str, content: bytes) -> Callable[[Path], None]:
    return lambda index: next(version(index).glob(relative)).write_bytes(content)


def _vectors(make: Callable[[np.ndarray[Any, Any]], np.ndarray[Any, Any]]) -> Callable[[Path], None]:
    def damage(index: Path) -> None:
        path = version(index) / "dense" / "vectors.npy"
        np.save(path, make(np.load(path)))

    return damage


def _manifest(content: str) -> Callable[[Path], None]:
    return lambda index: (index / "fanfuse-index.json").write_text(content)


def _nan(vectors: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
    return np.full_like(vectors, np.nan)


def _one_infinite(vectors: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
    changed = vectors.copy()
    changed[3, 7] = np.inf
    return changed


OTHER_IDS = json.dumps([f"x{i}" for i in range(len(DOCUMENTS))]).encode()
NO_VERSION = '{"format": 2, "version": "version-0-0"}'

# Everything in an index directory, damaged: (what, how, what the one-line refusal says).
DAMAGE: list[tuple[str, Callable[[Path], None], str]] = [
    *(
        (f"{c} file overwritten", _damage_segments(c), "is damaged")
        for c in ("store", "idx", "term", "pos", "fieldnorm", "fast")
    ),
    ("a segment file cut short", _truncate("*.term"), "is damaged"),
    ("a segment file emptied", _truncate("*.store", 0.0), "is damaged"),
    ("a segment file removed", lambda index: segment_file(version(index), "pos").unlink(), ".pos missing"),
    ("tantivy's file list removed", lambda index: (version(index) / ".managed.json").unlink(), "missing"),
    ("tantivy's meta.json garbled", _replace("meta.json", b"{not json"), "corrupt"),
    ("the manifest garbled", _manifest("{not json"), "corrupt manifest"),
    ("the manifest naming no version", _manifest(NO_VERSION), "version-0-0 does not exist"),
    ("vectors NaN", _vectors(_nan), "NaN or infinite"),
    ("a vector infinite", _vectors(_one_infinite), "NaN or infinite"),
    ("vectors float64", _vectors(lambda v: v.astype(np.float64)), "do not match"),
    ("vectors of another shape", _vectors(lambda v: v[:, :100]), "do not match"),
    ("vectors cut short", _truncate("dense/vectors.npy"), "unreadable dense vectors"),
    ("the vectors' manifest garbled", _replace("dense/dense.json", b"{"), "corrupt manifest"),
    ("the vectors' ids garbled", _replace("dense/ids.json", b"[1, 2"), "unreadable dense vectors"),
    ("the vectors' ids of other documents", _replace("dense/ids.json", OTHER_IDS), "other documents"),
]


@pytest.mark.parametrize(("damage", "message"), [(d, m) for _, d, m in DAMAGE], ids=[w for w, _, _ in DAMAGE])
def test_a_damaged_index_is_refused_at_open(
    index: Path, damage: Callable[[Path], None], message: str
) -> None:
    from fanfuse.service import app_for_index

    damage(index)
    with pytest.raises(InvalidIndex, match=re.escape(message)):
        app_for_index(index)


@pytest.mark.parametrize("what", ["store file overwritten", "vectors NaN"])
def test_the_server_process_refuses_a_damaged_index_with_one_line(index: Path, what: str) -> None:
    """`fanfuse serve` itself: exit 2 and one line, as for every case above (the same open)."""
    damage, message = next((d, m) for w, d, m in DAMAGE if w == what)
    damage(index)
    serve = [*CLI, "serve", "--index", str(index), "--port", "0"]
    try:
        done = subprocess.run(serve, capture_output=True, text=True, timeout=120)
    except subprocess.TimeoutExpired as expired:
        raise AssertionError(f"the server started on a damaged index: {expired.stdout!r}") from None
    assert done.returncode == 2, done.stderr
    lines = [line for line in done.stderr.splitlines() if line.startswith("fanfuse serve: error:")]
    assert len(lines) == 1 and message in lines[0], done.stderr
    assert "Traceback" not in done.stderr


def test_non_finite_vectors_are_refused_when_written_and_when_given(tmp_path: Path) -> None:
    class Encoder:
        identity: ClassVar[dict[str, Any]] = {"name": "toy", "dimensions": 2}

    with pytest.raises(InvalidEncoder, match="NaN or infinite"):
        write_dense_index(
            tmp_path / "idx", ["a", "b"], np.array([[1, 0], [np.nan, 0]], dtype=np.float32), Encoder()
        )  # type: ignore[arg-type]
    assert not (tmp_path / "idx").exists()
    for normalized in (False, True):
        with pytest.raises(
            InvalidEncoder, match=r"1 document vector\(s\) hold NaN or infinite values \(ids 'b'\)"
        ):
            DenseRetriever(
                lambda t: np.ones((len(t), 2)), ["a", "b"], [[1, 0], [np.inf, 0]], normalized=normalized
            )
    nan_query = DenseRetriever(lambda t: np.full((len(t), 2), np.nan), ["a"], [[1, 0]])
    with pytest.raises(InvalidEncoder, match="embedding function returned NaN or infinite values"):
        nan_query.search("q", 1)
    with pytest.raises(InvalidEncoder, match="embedding function returned NaN or infinite values"):
        DenseRetriever.from_documents([{"id": "a", "text": "x"}], lambda t: np.full((len(t), 2), np.inf))


class RawTantivy:
    """A retriever over Tantivy's own binding, so that its panic reaches the fan-out unconverted."""

    def __init__(self, directory: Path) -> None:
        self.index = tantivy.Index.open(str(directory))

    def search(self, query: str, k: int, filter: Any = None) -> list[Hit]:
        searcher = self.index.searcher()
        found = searcher.search(self.index.parse_query(query, ["text"]), k).hits
        return [Hit(str(searcher.doc(a).get_first("id")), s) for s, a in found]


class AsyncRawTantivy(RawTantivy):
    async def search(self, query: str, k: int, filter: Any = None) -> list[Hit]:  # type: ignore[override]
        return RawTantivy.search(self, query, k, filter)


@pytest.mark.parametrize("kind", [RawTantivy, AsyncRawTantivy])
@pytest.mark.parametrize("timeout", [None, 30.0])
def test_a_panic_is_a_branch_failure_sync_and_async(
    pristine: Path, index: Path, kind: type[RawTantivy], timeout: float | None
) -> None:
    # The copy is damaged before anything in this process maps it: rewriting a mapped file is
    # SIGBUS in the process that maps it (the class under test).
    overwrite(segment_file(version(index), "idx"), *PANICKING_POSTINGS, keep_checksum=True)
    panicking = kind(version(index))
    with pytest.raises(BaseException) as raised:
        asyncio.run(panicking.search("common", 3)) if kind is AsyncRawTantivy else panicking.search(
            "common", 3
        )  # type: ignore[arg-type]
    assert type(raised.value).__name__ == "PanicException", "the damage no longer makes Tantivy panic"
    retrievers = {"damaged": panicking, "healthy": TantivyRetriever(pristine)}
    with MultiQueryRetriever(retrievers, expansion=False, branch_timeout=timeout) as multi:
        for result in (multi.search("common lorem"), asyncio.run(multi.asearch("common lorem"))):
            errors = {b.retriever: b.error for b in result.diagnostics.branches}
            assert errors["healthy"] is None and "PanicException" in str(errors["damaged"]), errors
            assert result.hits
