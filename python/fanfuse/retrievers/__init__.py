"""Retrievers: the protocol every search backend implements, and the built-in backends.

`TantivyRetriever` (embedded BM25) and `DenseRetriever` (exact cosine over any embedding) are built
in; `OnnxEncoder` embeds with any ONNX sentence-embedding model (`default_encoder()`: the built-in
one) and `build_dense_index` / `open_dense` keep its vectors in an index directory (extra `embed`;
onnxruntime is imported only when an encoder is made). The framework adapters (LangChain,
LlamaIndex, Haystack) are in `fanfuse.integrations`.
"""

from typing import TYPE_CHECKING

from fanfuse import _renamed
from fanfuse.retrievers.base import AsyncRetriever, Hit, Retriever
from fanfuse.retrievers.default_encoder import default_encoder
from fanfuse.retrievers.dense import DenseRetriever, TfidfSvdEmbedder
from fanfuse.retrievers.dense_feedback import DenseFeedback
from fanfuse.retrievers.dense_index import build_dense_index, open_dense
from fanfuse.retrievers.onnx_encoder import OnnxEncoder
from fanfuse.retrievers.tantivy_index import TantivyRetriever

__all__ = [
    "AsyncRetriever",
    "DenseFeedback",
    "DenseRetriever",
    "Hit",
    "OnnxEncoder",
    "Retriever",
    "TantivyRetriever",
    "TfidfSvdEmbedder",
    "build_dense_index",
    "default_encoder",
    "open_dense",
]

if not TYPE_CHECKING:  # at run time only: a type checker still refuses any name the module lacks
    __getattr__ = _renamed.module_getattr(__name__)  # an old name is refused naming its new spelling
