"""The dense half of hybrid search over a Tantivy index, fitted once and kept beside the index.

`fanfuse search --dense` needs embeddings of every indexed document. Fitting TF-IDF + SVD takes
seconds per 10^4 documents, so the model and the document vectors are saved in the index directory
(written atomically; a rebuilt index is a new directory, so a stale cache cannot survive it).
"""

from __future__ import annotations

import numpy as np

from fanfuse._core import FusionError
from fanfuse.retrievers.atomic_files import write_file_atomically
from fanfuse.retrievers.dense import DenseRetriever, TfidfSvdEmbedder, document_text
from fanfuse.retrievers.tantivy_index import TantivyRetriever

MODEL_FILE = "dense-tfidf-svd.npz"
VECTORS_FILE = "dense-vectors.npz"


def dense_for_index(index: TantivyRetriever, dimensions: int = 256) -> tuple[DenseRetriever, bool]:
    """A `DenseRetriever` over the index's documents, from the cache when present; `(dense, fitted_now)`."""
    documents = list(index.documents())
    payloads = [{**d.metadata, "title": d.title, "text": d.text} for d in documents]
    by_id = {d.id: i for i, d in enumerate(documents)}
    model_path, vectors_path = index.directory / MODEL_FILE, index.directory / VECTORS_FILE
    if model_path.is_file() and vectors_path.is_file():
        try:
            embed = TfidfSvdEmbedder.load(model_path)
            with np.load(vectors_path, allow_pickle=False) as saved:
                ids, vectors = [str(i) for i in saved["ids"]], saved["vectors"]
            if sorted(ids) == sorted(by_id) and vectors.shape[1] == embed.dimensions:
                return DenseRetriever(embed, ids, vectors, [payloads[by_id[i]] for i in ids]), False
        except (FusionError, OSError, ValueError, KeyError):
            pass  # unreadable or stale cache: fit again below and overwrite it
    embed = TfidfSvdEmbedder(dimensions).fit([document_text(d) for d in documents])
    dense = DenseRetriever.from_documents(documents, embed)
    try:
        embed.save(model_path)
        write_file_atomically(
            vectors_path, lambda staging: np.savez(staging, ids=np.array(dense.ids), vectors=dense.vectors)
        )
    except OSError:
        pass  # a read-only index still searches; it is just fitted again next time
    return dense, True
