"""Retrievers: the protocol every search backend implements, and the built-in backends.

`TantivyRetriever` (embedded BM25) and `DenseRetriever` (exact cosine over any embedding) are built
in; `fanfuse.retrievers.langchain` (extra `langchain`) adapts LangChain retrievers both ways.
"""

from fanfuse.retrievers.base import AsyncRetriever, Hit, Retriever
from fanfuse.retrievers.dense import DenseRetriever, TfidfSvdEmbedder
from fanfuse.retrievers.tantivy_index import TantivyRetriever

__all__ = ["AsyncRetriever", "DenseRetriever", "Hit", "Retriever", "TantivyRetriever", "TfidfSvdEmbedder"]
