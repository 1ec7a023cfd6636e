"""The dense half of hybrid search over a Tantivy index, made once and kept in the index directory.

Two kinds: `neural_dense_for_index` (a sentence-embedding model, `fanfuse[embed]`; vectors stored by
`fanfuse.retrievers.dense_index`) and `dense_for_index` (TF-IDF + SVD, the fallback without that
extra; fitting takes seconds per 10^4 documents, so model and vectors are saved). Everything is
written atomically into the index's current version directory; a rebuilt index is a new
version, so stale vectors cannot survive it.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from fanfuse.errors import InvalidOutput
from fanfuse.output_guard import OutputFile
from fanfuse.retrievers.dense import (
    DenseRetriever,
    TfidfSvdEmbedder,
    document_text,
    unique_documents,
)
from fanfuse.retrievers.dense_index import (
    DENSE_DIR,
    PassageEncoder,
    embed_documents,
    has_dense_index,
    open_dense,
    write_dense_index,
)
from fanfuse.retrievers.tantivy_index import TantivyRetriever

MODEL_FILE = "dense-tfidf-svd.npz"
VECTORS_FILE = "dense-vectors.npz"


def dense_for_index(index: TantivyRetriever, dimensions: int = 256) -> tuple[DenseRetriever, bool]:
    """A `DenseRetriever` over the index's documents, from the cache when present; `(dense, fitted_now)`."""
    documents = list(index.documents())
    by_id = {d.id: d for d in documents}
    model_path, vectors_path = index.data_directory / MODEL_FILE, index.data_directory / VECTORS_FILE
    if model_path.is_file() and vectors_path.is_file():
        try:
            embed = TfidfSvdEmbedder.load(model_path)
            with np.load(vectors_path, allow_pickle=False) as saved:
                ids, vectors = [str(i) for i in saved["ids"]], saved["vectors"]
            if sorted(ids) == sorted(by_id) and vectors.shape[1] == embed.dimensions:
                return DenseRetriever.of_documents([by_id[i] for i in ids], vectors, embed), False
        except (OSError, ValueError, KeyError):
            pass  # unreadable or stale cache: fit again below and overwrite it
    embed = TfidfSvdEmbedder(dimensions).fit([document_text(d) for d in documents])
    dense = DenseRetriever.from_documents(documents, embed)
    try:
        embed.save(model_path)
        with OutputFile(vectors_path) as stream:
            np.savez(stream, ids=np.array(dense.ids), vectors=dense.vectors)
    except (OSError, InvalidOutput):
        pass  # a read-only index still searches; it is just fitted again next time
    return dense, True


def neural_dense_for_index(
    index: TantivyRetriever,
    *,
    encoder: PassageEncoder | None = None,
    progress: Callable[[int], None] | None = None,
) -> tuple[DenseRetriever, bool]:
    """The neural dense retriever over the index's documents; `(dense, embedded_now)`.

    The vectors stored in the index directory when there are (made by `encoder`, else an error),
    otherwise embedded now with `encoder` (default: the built-in model, `fanfuse[embed]`) and stored
    for next time. A read-only index still searches; its vectors are embedded again next time.
    """
    documents = unique_documents(index.documents())
    if has_dense_index(index.data_directory):
        return open_dense(index.data_directory, encoder, documents=documents), False
    if encoder is None:
        from fanfuse.retrievers.default_encoder import default_encoder

        encoder = default_encoder()
    vectors = embed_documents(documents, encoder, progress)
    ids = [doc.id for doc in documents]
    try:
        write_dense_index(index.data_directory, ids, vectors, encoder)
    except OSError:
        return DenseRetriever.of_documents(documents, vectors, encoder.embed_queries, normalized=True), True
    return open_dense(index.data_directory, encoder, documents=documents), True


def where_vectors_went(index: TantivyRetriever) -> str:
    """Where the vectors `neural_dense_for_index` has just embedded for `index` are, as the end of a
    message: kept in the index, or not, why not, and where they would have gone. The index may be
    searched from a temporary copy (read-only, or `private_copy=True`): vectors written there go with
    the copy."""
    if index.private_directory is not None:
        return (
            f"not kept: {index.directory} is searched from a temporary copy (it cannot be written in "
            f"place), which goes when this process ends, so no vectors were written to the index; "
            f"every run embeds them again until `fanfuse index --dense` stores them where the index "
            f"is writable"
        )
    if not has_dense_index(index.data_directory):
        return (
            f"not kept: they could not be written to {index.data_directory / DENSE_DIR}; every run "
            f"embeds them again until `fanfuse index --dense` stores them"
        )
    return f"kept in {index.directory}"
