"""Stored neural vectors: built once into the index directory, memory-mapped, refused with another model."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import numpy as np
import pytest
from fanfuse.corpus import Document
from fanfuse.errors import InvalidCorpus, InvalidEncoder, InvalidIndex

pytest.importorskip("onnxruntime", reason="OnnxEncoder needs onnxruntime (extra 'embed')")
pytest.importorskip("onnx", reason="the toy models are built with the onnx package (extra 'dev')")

import fanfuse.retrievers.dense_index as dense_index
from fanfuse.retrievers.default_encoder import TOKENIZER_PATH, default_encoder, embed_extra_installed
from fanfuse.retrievers.dense import DenseRetriever
from fanfuse.retrievers.dense_cache import neural_dense_for_index
from fanfuse.retrievers.dense_index import build_dense_index, has_dense_index, open_dense
from fanfuse.retrievers.onnx_encoder import OnnxEncoder
from fanfuse.retrievers.tantivy_index import TantivyRetriever
from onnx_toys import write_toy_model

CORPUS = [
    Document("split", "Split the pathname into a pair (head, tail).", "os.path.split", {"module": "os"}),
    Document("join", "Join one or more path segments intelligently.", "os.path.join", {"module": "os"}),
    Document("loads", "Deserialize a JSON document to a Python object.", "json.loads", {"module": "json"}),
    Document("sleep", "Suspend execution for the given number of seconds.", "time.sleep", {"module": "time"}),
    Document("with", "The with statement wraps a block in a context manager.", "with", {"module": "ref"}),
    Document("sort", "Return a new sorted list from the items in iterable.", "sorted", {"module": "py"}),
]
QUERIES = ["split a file path", "parse json text", "wait a few seconds", "context manager", "order a list"]


def toy_encoder(tmp_path: Path, seed: int = 0, **options: object) -> OnnxEncoder:
    directory = tmp_path / f"toy-{seed}"
    if not directory.is_dir():
        write_toy_model(directory / "model.onnx", seed=seed)
        shutil.copyfile(TOKENIZER_PATH, directory / "tokenizer.json")
    return OnnxEncoder(directory, **options)  # type: ignore[arg-type]


def ranked(retriever: DenseRetriever, k: int = 4) -> list[list[tuple[str, float]]]:
    return [[(hit.id, round(hit.score, 5)) for hit in retriever.search(query, k)] for query in QUERIES]


@pytest.mark.skipif(not embed_extra_installed(), reason="fanfuse[embed] is not installed")
def test_stored_vectors_find_what_the_in_memory_retriever_finds(tmp_path: Path) -> None:
    encoder = default_encoder()
    in_memory = DenseRetriever.from_documents(
        CORPUS, encoder.embed_queries, embed_documents=encoder.embed_passages
    )
    build_dense_index(tmp_path / "index", CORPUS, encoder)
    stored = open_dense(tmp_path / "index", documents=CORPUS)  # the encoder comes from the manifest
    assert ranked(stored) == ranked(in_memory)
    assert [hit.id for hit in stored.search("split a file path", 1)] == ["split"]
    # Mapped from the file, not read into memory.
    assert isinstance(stored.vectors.base, np.memmap) or isinstance(stored.vectors, np.memmap)
    np.testing.assert_allclose(np.linalg.norm(stored.vectors, axis=1), 1.0, atol=1e-6)


def test_beside_a_tantivy_index_payloads_and_filters_come_from_it(tmp_path: Path) -> None:
    index = TantivyRetriever.build(CORPUS, tmp_path / "index")
    encoder = toy_encoder(tmp_path)
    built = build_dense_index(index.directory, index.documents(), encoder)
    reopened = open_dense(index.directory)  # an OnnxEncoder rebuilt from the recorded settings
    assert ranked(reopened) == ranked(built)
    hits = reopened.search("path", 6, filter={"module": "os"})
    assert {hit.id for hit in hits} == {"split", "join"}
    assert hits[0].payload["title"].startswith("os.path.") and hits[0].payload["module"] == "os"
    # The Tantivy index still opens and searches with the vectors inside its directory.
    assert TantivyRetriever(index.directory).search("pathname", 1)[0].id == "split"


def test_another_model_or_other_prefixes_are_refused(tmp_path: Path) -> None:
    build_dense_index(tmp_path / "index", CORPUS, toy_encoder(tmp_path, seed=0))
    manifest = re.escape(str(tmp_path / "index" / "dense" / "dense.json"))
    made_by = f"{manifest}: the vectors were made by 'toy-0' .* 'toy-1' .*model_sha256"
    with pytest.raises(InvalidEncoder, match=made_by):
        open_dense(tmp_path / "index", toy_encoder(tmp_path, seed=1), documents=CORPUS)
    with pytest.raises(InvalidEncoder, match=r"\(query_prefix differ\)"):
        open_dense(tmp_path / "index", toy_encoder(tmp_path, seed=0, query_prefix="query: "))


def test_the_same_files_under_another_name_open_and_a_replaced_model_does_not(tmp_path: Path) -> None:
    encoder = toy_encoder(tmp_path, seed=0)
    build_dense_index(tmp_path / "index", CORPUS, encoder)
    before = ranked(open_dense(tmp_path / "index", encoder, documents=CORPUS))
    copy = shutil.copytree(tmp_path / "toy-0", tmp_path / "renamed")
    assert ranked(open_dense(tmp_path / "index", OnnxEncoder(copy), documents=CORPUS)) == before
    write_toy_model(encoder.model_path, seed=5)  # another model at the recorded path
    with pytest.raises(InvalidEncoder, match=r"\(model_sha256 differ\)"):
        open_dense(tmp_path / "index", documents=CORPUS)


def test_a_failed_build_leaves_the_previous_vectors_and_no_leftovers(tmp_path: Path) -> None:
    encoder = toy_encoder(tmp_path)
    build_dense_index(tmp_path / "index", CORPUS, encoder)
    before = ranked(open_dense(tmp_path / "index", encoder, documents=CORPUS))

    with pytest.raises(InvalidCorpus, match="duplicate document id 'split'"):
        build_dense_index(tmp_path / "index", [*CORPUS[:3], CORPUS[0]], encoder)

    def interrupted(done: int) -> None:
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        build_dense_index(tmp_path / "index", CORPUS[:2], encoder, progress=interrupted)
    assert ranked(open_dense(tmp_path / "index", encoder, documents=CORPUS)) == before
    assert [p.name for p in (tmp_path / "index").iterdir()] == ["dense"]


def test_a_failed_write_leaves_the_previous_store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    encoder = toy_encoder(tmp_path)

    def disk_full(path: Path, *args: object, **kwargs: object) -> None:
        Path(path).write_bytes(b"\x93NUMPY partial")
        raise OSError("No space left on device")

    build_dense_index(tmp_path / "index", CORPUS, encoder)
    before = ranked(open_dense(tmp_path / "index", encoder, documents=CORPUS))
    monkeypatch.setattr(dense_index.np, "save", disk_full)
    with pytest.raises(OSError, match="No space left"):
        build_dense_index(tmp_path / "new-index", CORPUS, encoder)
    assert not (tmp_path / "new-index").exists()
    with pytest.raises(OSError, match="No space left"):
        build_dense_index(tmp_path / "index", CORPUS[:3], encoder)
    monkeypatch.undo()
    assert ranked(open_dense(tmp_path / "index", encoder, documents=CORPUS)) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["index", "toy-0"]
    assert [p.name for p in (tmp_path / "index").iterdir()] == ["dense"]


def test_missing_or_damaged_stores_are_named(tmp_path: Path) -> None:
    encoder = toy_encoder(tmp_path)
    with pytest.raises(InvalidIndex, match=r"holds no dense vectors .*`fanfuse index --dense`"):
        open_dense(tmp_path / "nothing", encoder)
    build_dense_index(tmp_path / "index", CORPUS, encoder)
    store = tmp_path / "index" / "dense"

    (store / "ids.json").write_text(json.dumps(["split", "join"]))
    with pytest.raises(InvalidIndex, match=r"vectors.npy \(float32, \(6, 8\)\) and ids.json do not match"):
        open_dense(tmp_path / "index", encoder)
    np.save(store / "vectors.npy", np.zeros((6, 8), dtype=np.float64))
    with pytest.raises(InvalidIndex, match="do not match the 6 x 8 float32 vectors"):
        open_dense(tmp_path / "index", encoder)
    (store / "vectors.npy").write_bytes(b"garbage")
    with pytest.raises(InvalidIndex, match="unreadable dense vectors"):
        open_dense(tmp_path / "index", encoder)
    (store / "dense.json").write_text("{not json")
    with pytest.raises(InvalidIndex, match=f"{re.escape(str(store / 'dense.json'))}: corrupt manifest"):
        open_dense(tmp_path / "index", encoder)


def test_vectors_of_other_documents_are_refused(tmp_path: Path) -> None:
    encoder = toy_encoder(tmp_path)
    build_dense_index(tmp_path / "index", CORPUS, encoder)
    with pytest.raises(InvalidIndex, match=r"other documents than the index holds \(1 of 6 ids not found"):
        open_dense(tmp_path / "index", encoder, documents=[*CORPUS[1:], Document("new", "text")])


def test_a_model_that_moved_is_named(tmp_path: Path) -> None:
    encoder = toy_encoder(tmp_path)
    build_dense_index(tmp_path / "index", CORPUS, encoder)
    shutil.rmtree(tmp_path / "toy-0")
    with pytest.raises(InvalidEncoder, match=f"made by the model at '{re.escape(str(encoder.model_path))}'"):
        open_dense(tmp_path / "index", documents=CORPUS)


def test_an_index_embeds_once_then_opens_its_vectors(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    index = TantivyRetriever.build(CORPUS, tmp_path / "index")
    encoder = toy_encoder(tmp_path)
    done: list[int] = []
    first, embedded = neural_dense_for_index(index, encoder=encoder, progress=done.append)
    assert embedded and done[-1] == len(CORPUS)
    again, embedded_again = neural_dense_for_index(index, encoder=encoder)
    assert not embedded_again and ranked(again) == ranked(first)

    def read_only(*args: object) -> None:
        raise PermissionError("read-only file system")

    shutil.rmtree(index.data_directory / "dense")
    monkeypatch.setattr("fanfuse.retrievers.dense_cache.write_dense_index", read_only)
    unstored, embedded_now = neural_dense_for_index(index, encoder=encoder)
    assert embedded_now and ranked(unstored) == ranked(first) and not has_dense_index(index.data_directory)
