"""Retrievers: the protocol every search backend implements, and the built-in backends."""

from fanfuse.retrievers.base import AsyncRetriever, Hit, Retriever

__all__ = ["AsyncRetriever", "Hit", "Retriever"]
