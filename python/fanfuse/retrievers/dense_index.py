"""Neural document vectors kept in an index directory: embedded once, memory-mapped on open.

`build_dense_index(DIR, documents, encoder)` embeds every document (title and text, cut to the
encoder's `max_length` tokens) and writes `DIR/dense/`: `vectors.npy` (float32, unit rows),
`ids.json`, and `dense.json`, the manifest naming the encoder that made the vectors. The directory
appears complete or not at all. `open_dense(DIR)` maps the vectors (`np.load(mmap_mode="r")`: the
pages are shared between processes and read on demand) and refuses a query encoder whose identity
(model file, tokenizer, pooling, prefixes, dimensions) differs from the one in the manifest.

Search is exact (one matrix-vector product per query), linear in the number of vectors: measured in
docs/retrievers.md at about 1 ms per query for 10^4 vectors of 384 dimensions, 10 ms for 10^5 and
0.2-0.3 s for 10^6. Up to some 10^5 passages that is fine; past that an approximate index (HNSW in
Qdrant, pgvector, FAISS...) is the better tool, behind the same retriever protocol.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

from fanfuse.corpus import Document, Fields
from fanfuse.errors import InvalidEncoder, InvalidIndex
from fanfuse.output_guard import StagedDirectory
from fanfuse.retrievers.dense import DenseRetriever, document_text, unique_documents, unit_rows

DENSE_DIR = "dense"
MANIFEST = "dense.json"
VECTORS = "vectors.npy"
IDS = "ids.json"
FORMAT = 1
_REBUILD = "rebuild them with `fanfuse index --dense` or build_dense_index(...)"


class PassageEncoder(Protocol):
    """What the store needs of an encoder (`OnnxEncoder` is one)."""

    @property
    def identity(self) -> Mapping[str, Any]:
        """JSON-ready; equal identities mean comparable vectors."""
        ...

    def embed_queries(self, texts: Sequence[str]) -> npt.NDArray[np.float32]: ...

    def embed_passages(
        self, texts: Sequence[str], progress: Callable[[int], None] | None = None
    ) -> npt.NDArray[np.float32]: ...


def has_dense_index(index_dir: str | os.PathLike[str]) -> bool:
    """Whether `index_dir` holds stored vectors (it says nothing of their encoder)."""
    return (Path(index_dir) / DENSE_DIR / MANIFEST).is_file()


def build_dense_index(
    index_dir: str | os.PathLike[str],
    documents: Iterable[Document | Mapping[str, Any]],
    encoder: PassageEncoder,
    *,
    fields: Fields | None = None,
    progress: Callable[[int], None] | None = None,
) -> DenseRetriever:
    """Embed `documents` with `encoder`, store the vectors under `index_dir/dense/` (replacing any
    there, all or nothing) and return the retriever over them; `progress(done)` during embedding."""
    docs = unique_documents(documents, fields)
    vectors = embed_documents(docs, encoder, progress)
    write_dense_index(index_dir, [doc.id for doc in docs], vectors, encoder)
    return open_dense(index_dir, encoder, documents=docs)


def embed_documents(
    docs: Sequence[Document], encoder: PassageEncoder, progress: Callable[[int], None] | None = None
) -> npt.NDArray[np.float32]:
    """Unit vectors of the documents' title and text, one row per document."""
    vectors = np.asarray(encoder.embed_passages([document_text(doc) for doc in docs], progress))
    dimensions = encoder.identity.get("dimensions")
    if vectors.ndim != 2 or vectors.shape[0] != len(docs) or vectors.shape[1] != dimensions:
        raise InvalidEncoder(
            f"encoder returned shape {vectors.shape} for {len(docs)} documents; expected "
            f"({len(docs)}, {dimensions}) as its identity says"
        )
    if not np.isfinite(vectors).all():
        raise InvalidEncoder("encoder returned a vector with NaN or infinite values; nothing was stored")
    return np.ascontiguousarray(unit_rows(vectors.astype(np.float32, copy=False)))


def write_dense_index(
    index_dir: str | os.PathLike[str],
    ids: Sequence[str],
    vectors: npt.NDArray[np.float32],
    encoder: PassageEncoder,
) -> None:
    """Store unit `vectors` (one row per id) under `index_dir/dense/`, all or nothing."""
    if not np.isfinite(vectors).all():
        raise InvalidEncoder("vectors hold NaN or infinite values; nothing was stored")
    directory = Path(index_dir)
    if directory.exists() and not directory.is_dir():
        raise InvalidIndex(f"index path {str(directory)!r} is a file; pass a directory")
    created = not directory.exists()
    manifest: dict[str, Any] = {
        "format": FORMAT,
        "documents": len(ids),
        "encoder": dict(encoder.identity),
        # How to rebuild the query encoder when none is given (OnnxEncoder records its arguments).
        "settings": getattr(encoder, "settings", None),
    }
    try:
        with StagedDirectory(directory / DENSE_DIR) as staged:
            staging = Path(staged.path)
            np.save(staging / VECTORS, vectors, allow_pickle=False)
            (staging / IDS).write_text(json.dumps(list(ids), ensure_ascii=False), encoding="utf-8")
            (staging / MANIFEST).write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
    except BaseException:
        if created:
            shutil.rmtree(directory, ignore_errors=True)
        raise


def open_dense(
    index_dir: str | os.PathLike[str],
    encoder: PassageEncoder | None = None,
    *,
    documents: Iterable[Document] | None = None,
) -> DenseRetriever:
    """The retriever over the vectors stored in `index_dir`, memory-mapped.

    `encoder` embeds the queries; by default the one the manifest names is rebuilt (the built-in
    model, or an `OnnxEncoder` from the model path it records). Hit payloads come from `documents`,
    else from the Tantivy index in the same directory, else they are empty.
    """
    directory = Path(index_dir)
    manifest_path = directory / DENSE_DIR / MANIFEST
    manifest = _read_manifest(directory, manifest_path)
    if encoder is None:
        encoder = _encoder_from_manifest(manifest, manifest_path)
    _check_identity(manifest["encoder"], dict(encoder.identity), manifest_path)
    ids, vectors = _read_vectors(directory / DENSE_DIR, manifest, manifest_path)
    ordered = _documents(directory, ids, documents)
    try:
        if ordered is None:
            return DenseRetriever(encoder.embed_queries, ids, vectors, normalized=True)
        return DenseRetriever.of_documents(ordered, vectors, encoder.embed_queries, normalized=True)
    except InvalidEncoder as error:  # vectors read from the index: the index is what is damaged
        raise InvalidIndex(f"{directory / DENSE_DIR}: {error}; {_REBUILD}") from None


def _read_manifest(directory: Path, path: Path) -> dict[str, Any]:
    if not path.is_file():
        raise InvalidIndex(
            f"{str(directory)!r} holds no dense vectors (no {DENSE_DIR}/{MANIFEST}); build them with "
            f"`fanfuse index --dense` or build_dense_index(...)"
        )
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError):
        raise InvalidIndex(f"{path}: corrupt manifest (not JSON); {_REBUILD}") from None
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        raise InvalidIndex(f"{path}: unsupported format (this fanfuse reads format {FORMAT}); {_REBUILD}")
    if not isinstance(manifest.get("encoder"), dict):
        raise InvalidIndex(f"{path}: no encoder identity; {_REBUILD}")
    return manifest


def _encoder_from_manifest(manifest: Mapping[str, Any], path: Path) -> PassageEncoder:
    from fanfuse.retrievers.default_encoder import DEFAULT_MODEL_NAME, MODEL_SHA256, default_encoder
    from fanfuse.retrievers.onnx_encoder import OnnxEncoder

    identity, settings = manifest["encoder"], manifest.get("settings")
    if identity.get("name") == DEFAULT_MODEL_NAME and identity.get("model_sha256") == MODEL_SHA256:
        return default_encoder(**({"max_length": settings["max_length"]} if settings else {}))
    if not isinstance(settings, dict):
        raise InvalidEncoder(
            f"{path}: the vectors were made by {identity.get('name')!r}, which fanfuse cannot rebuild; "
            f"pass its encoder to open_dense(..., encoder=...)"
        )
    if not Path(settings["model"]).exists():
        raise InvalidEncoder(
            f"{path}: the vectors were made by the model at {settings['model']!r}, which is not there "
            f"any more; pass encoder=OnnxEncoder(PATH) of the same model, or {_REBUILD}"
        )
    return OnnxEncoder(**settings)


def _describe(identity: Mapping[str, Any]) -> str:
    sha = str(identity.get("model_sha256", ""))[:12]
    return f"{identity.get('name')!r} ({identity.get('dimensions')} dimensions, model sha256 {sha}...)"


def _check_identity(stored: Mapping[str, Any], given: Mapping[str, Any], path: Path) -> None:
    # The name is for people; the same files under another name make the same vectors.
    keys = (stored.keys() | given.keys()) - {"name"}
    differing = sorted(key for key in keys if stored.get(key) != given.get(key))
    if differing:
        raise InvalidEncoder(
            f"{path}: the vectors were made by {_describe(stored)} and cannot be searched with "
            f"{_describe(given)} ({', '.join(differing)} differ); open them with the encoder that made "
            f"them, or {_REBUILD}"
        )


def _read_vectors(
    directory: Path, manifest: Mapping[str, Any], path: Path
) -> tuple[list[str], npt.NDArray[np.float32]]:
    try:
        ids = json.loads((directory / IDS).read_text(encoding="utf-8"))
        vectors = np.load(directory / VECTORS, mmap_mode="r", allow_pickle=False)
    except (OSError, ValueError, UnicodeDecodeError) as error:
        raise InvalidIndex(f"{directory}: unreadable dense vectors ({error}); {_REBUILD}") from None
    expected = (manifest.get("documents"), manifest["encoder"].get("dimensions"))
    if (
        not isinstance(ids, list)
        or not all(isinstance(i, str) for i in ids)
        or vectors.dtype != np.float32
        or vectors.shape != (len(ids), expected[1])
        or len(ids) != expected[0]
    ):
        raise InvalidIndex(
            f"{directory}: {VECTORS} ({vectors.dtype}, {vectors.shape}) and {IDS} do not match the "
            f"{expected[0]} x {expected[1]} float32 vectors {path.name} describes; {_REBUILD}"
        )
    return ids, vectors


def _documents(
    directory: Path, ids: Sequence[str], documents: Iterable[Document] | None
) -> list[Document] | None:
    if documents is None:
        from fanfuse.retrievers.tantivy_index import MANIFEST as INDEX_MANIFEST
        from fanfuse.retrievers.tantivy_index import TantivyRetriever

        if not (directory / INDEX_MANIFEST).is_file():
            return None
        documents = TantivyRetriever(directory).documents()
    by_id = {doc.id: doc for doc in documents}
    missing = [i for i in ids if i not in by_id]
    if missing or len(by_id) != len(ids):
        raise InvalidIndex(
            f"{directory / DENSE_DIR}: the stored vectors are of other documents than the index holds "
            f"({len(missing)} of {len(ids)} ids not found, {len(by_id)} documents); {_REBUILD}"
        )
    return [by_id[i] for i in ids]
