"""Multi-query search end to end: fanfuse's `MultiQueryRetriever` against LangChain's
`MultiQueryRetriever` over an `EnsembleRetriever` and LlamaIndex's `QueryFusionRetriever`.

The same index (fanfuse's Tantivy BM25 and dense retrievers over one passage pool), the same
variants for every question (the original and three more, plain text, fixed beforehand: no LLM
call is timed), `BRANCH_K` hits asked of each (variant, retriever) branch, the top `TOP_K` fused.
The peers get the two retrievers behind their own retriever interfaces, returning their own
Document / Node objects, as an integration would. The dense retriever embeds every query (its
query-vector cache is off), so each framework pays the encoder as it calls it: fanfuse one call
per search for the four variants, the peers one call per variant.

Contracts: LlamaIndex fuses every (variant, retriever) list by RRF with `1 / (p + 60)`, p 0-based,
which is fanfuse's RRF with k = 59 and unit weights: its top ids are checked equal to fanfuse's run
that way (LlamaIndex deduplicates on the node's content hash, fanfuse on the id; the pool has no
two passages with the same text and metadata, so the two agree). LangChain's `MultiQueryRetriever`
does not fuse across variants: it returns the union of the variants' `EnsembleRetriever` results
in the order they came (each an RRF of BM25 and dense), so its order is another contract; only
how many of its first `TOP_K` are in fanfuse's is reported.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from fanfuse.multiquery import MultiQueryRetriever
from fanfuse.retrievers.base import Hit

TOP_K, BRANCH_K = 10, 20


def fanfuse_search(
    retrievers: Mapping[str, Any], variants: Mapping[str, list[str]]
) -> Callable[[str], list[str]]:
    searcher = MultiQueryRetriever(dict(retrievers), rrf_k=59, top_k=TOP_K, branch_k=BRANCH_K)

    def search(question: str) -> list[str]:
        result = searcher.search(question, variants=variants[question][1:], max_variants=4)
        return [hit.id for hit in result.hits]

    return search


def _text(hit: Hit) -> str:
    return str(hit.payload.get("text", ""))


def langchain_search(
    retrievers: Mapping[str, Any], variants: Mapping[str, list[str]]
) -> Callable[[str], list[str]]:
    from langchain_classic.retrievers import EnsembleRetriever
    from langchain_classic.retrievers.multi_query import MultiQueryRetriever as LCMultiQuery
    from langchain_core.documents import Document
    from langchain_core.retrievers import BaseRetriever
    from langchain_core.runnables import RunnableLambda

    class Wrapped(BaseRetriever):
        retriever: Any

        def _get_relevant_documents(self, query: str, **_: Any) -> list[Document]:
            hits = self.retriever.search(query, BRANCH_K)
            return [Document(page_content=_text(h), id=h.id, metadata={"id": h.id}) for h in hits]

    ensemble = EnsembleRetriever(
        retrievers=[Wrapped(retriever=r) for r in retrievers.values()], c=60, id_key="id"
    )
    generated = RunnableLambda(lambda inputs: variants[inputs["question"]][1:])
    multi = LCMultiQuery(retriever=ensemble, llm_chain=generated, include_original=True)

    def search(question: str) -> list[str]:
        return [d.metadata["id"] for d in multi.invoke(question)[:TOP_K]]

    return search


def llamaindex_search(
    retrievers: Mapping[str, Any], variants: Mapping[str, list[str]]
) -> Callable[[str], list[str]]:
    from llama_index.core.llms import MockLLM
    from llama_index.core.retrievers import BaseRetriever, QueryFusionRetriever
    from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode

    class Wrapped(BaseRetriever):
        def __init__(self, retriever: Any) -> None:
            super().__init__()
            self.retriever = retriever

        def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
            hits = self.retriever.search(query_bundle.query_str, BRANCH_K)
            return [NodeWithScore(node=TextNode(id_=h.id, text=_text(h)), score=h.score) for h in hits]

    class FixedVariants(QueryFusionRetriever):
        def _get_queries(self, original_query: str) -> list[QueryBundle]:
            return [QueryBundle(v) for v in variants[original_query][1:]]

    fusion = FixedVariants(
        [Wrapped(r) for r in retrievers.values()],
        llm=MockLLM(),
        mode="reciprocal_rerank",
        similarity_top_k=TOP_K,
        num_queries=4,
    )

    def search(question: str) -> list[str]:
        return [n.node.id_ for n in fusion.retrieve(question)]

    return search


CONTENDERS: dict[str, Callable[[Mapping[str, Any], Mapping[str, list[str]]], Callable[[str], list[str]]]] = {
    "fanfuse": fanfuse_search,
    "LangChain MultiQueryRetriever + EnsembleRetriever": langchain_search,
    "LlamaIndex QueryFusionRetriever": llamaindex_search,
}


def overlap(ours: Sequence[str], theirs: Sequence[str]) -> int:
    return len(set(ours) & set(theirs))
