"""RRF of one query's ranked lists by fanfuse and by every peer, each in the input form it takes.

Each contender is `prepare(lists) -> state` (outside the timing: building a framework's Document or
Node objects, or a ranx Run, is what its caller has already done) and `fuse(state) -> ids`, the top
`TOP_K` ids best first. Three input forms: str ids, (id, score) pairs, int64 NumPy arrays; a peer
appears in the forms it accepts. `rankings_agree` checks a peer's ids against fanfuse's ranking
(`test_peer_fusion.py` runs it for every contender).

Where a peer's RRF is written with another constant it is given fanfuse's equivalent: LlamaIndex's
`1 / (p + 60)` with a 0-based p is fanfuse's k = 59 (docs/fusion-methods.md), so its ranking is
checked against `fanfuse.rrf(lists, k=59)`; so is rankops' `rrf_multi(k=60)`, which adds
`1 / (k + p)` with a 0-based p too (its scores equal fanfuse's k = 59 to float32 rounding).
Haystack (k = 61 with 0-based ranks, then rescaled) and LangChain (1-based, 60) rank as k = 60.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import fanfuse
import numpy as np
from numpy_rrf import rrf_numpy
from workloads import TOP_K

FORMS = ("str ids", "(id, score) pairs", "int64 arrays")


@dataclass(frozen=True)
class Contender:
    name: str
    form: str
    prepare: Callable[[list[Any]], Any]
    fuse: Callable[[Any], list[Any]]
    k: float = 60.0  # the fanfuse constant this contender's ranking equals


def scored(lists: list[list[Any]]) -> list[list[tuple[Any, float]]]:
    """Each list as (id, score) pairs, scores descending with the rank (what a retriever returns)."""
    return [[(doc, 1.0 - rank / 1000) for rank, doc in enumerate(lst)] for lst in lists]


def plain_python(lists: Sequence[Sequence[Any]], k: float = 60.0, top_k: int = TOP_K) -> list[Any]:
    """The dict + heapq RRF a user writes (a repeated id counts at each occurrence)."""
    scores: dict[Any, float] = {}
    for lst in lists:
        for rank, doc in enumerate(lst, start=1):
            scores[doc] = scores.get(doc, 0.0) + 1.0 / (k + rank)
    return [doc for doc, _ in heapq.nlargest(top_k, scores.items(), key=lambda item: item[1])]


def _fanfuse_ids(lists: Any) -> list[Any]:
    return fanfuse.rrf(lists, top_k=TOP_K).ids


def _fanfuse_pairs(runs: Any) -> list[Any]:
    return fanfuse.fuse(runs, top_k=TOP_K).ids


def _numpy(lists: Any) -> list[Any]:
    return rrf_numpy(lists, top_k=TOP_K)[0]


def _rankops(runs: Any) -> list[Any]:
    import rankops

    return [doc for doc, _ in rankops.rrf_multi(runs, k=60, top_k=TOP_K)]


def _ranx_prepare(runs: list[list[tuple[str, float]]]) -> Any:
    from ranx import Run

    return [Run({"q": dict(run)}, name=f"run{i}") for i, run in enumerate(runs)]


def _ranx(runs: Any, norm: str | None = "min-max") -> list[Any]:
    """ranx's RRF; `norm` its normalisation of the scores first (min-max unless told: RRF reads
    only the ranks, so `norm=None` is the like-for-like call, both are timed)."""
    from ranx import fuse

    fused = fuse(runs, norm=norm, method="rrf", params={"k": 60}).to_dict()["q"]
    return sorted(fused, key=fused.__getitem__, reverse=True)[:TOP_K]


def _ranx_unnormalised(runs: Any) -> list[Any]:
    return _ranx(runs, norm=None)


def _langchain_prepare(runs: list[list[tuple[str, float]]]) -> Any:
    from langchain_classic.retrievers import EnsembleRetriever
    from langchain_core.documents import Document
    from langchain_core.retrievers import BaseRetriever

    class Lists(BaseRetriever):  # never called: EnsembleRetriever wants retrievers to weigh
        def _get_relevant_documents(self, query: str, **_: Any) -> list[Document]:
            return []

    ensemble = EnsembleRetriever(retrievers=[Lists() for _ in runs], c=60, id_key="id")
    documents = [[Document(page_content="", metadata={"id": doc}) for doc, _ in run] for run in runs]
    return ensemble, documents


def _langchain(state: Any) -> list[Any]:
    ensemble, documents = state
    return [d.metadata["id"] for d in ensemble.weighted_reciprocal_rank(documents)[:TOP_K]]


def _llamaindex_prepare(runs: list[list[tuple[str, float]]]) -> Any:
    from llama_index.core.llms import MockLLM
    from llama_index.core.retrievers import BaseRetriever, QueryFusionRetriever
    from llama_index.core.schema import NodeWithScore, TextNode

    class Lists(BaseRetriever):  # never called: the fusion step is timed alone
        def _retrieve(self, query_bundle: Any) -> list[NodeWithScore]:
            return []

    fusion = QueryFusionRetriever(
        [Lists()], llm=MockLLM(), mode="reciprocal_rerank", num_queries=1, similarity_top_k=TOP_K
    )
    nodes = {doc: TextNode(id_=doc, text=doc) for run in runs for doc, _ in run}
    results = {
        ("q", i): [NodeWithScore(node=nodes[doc], score=score) for doc, score in run]
        for i, run in enumerate(runs)
    }
    return fusion, results


def _llamaindex(state: Any) -> list[Any]:
    fusion, results = state
    return [n.node.id_ for n in fusion._reciprocal_rerank_fusion(results)[:TOP_K]]


def _haystack_prepare(runs: list[list[tuple[str, float]]]) -> Any:
    from haystack import Document
    from haystack.components.joiners import DocumentJoiner

    joiner = DocumentJoiner(join_mode="reciprocal_rank_fusion", top_k=TOP_K)
    return joiner, [[Document(id=doc, content=doc, score=score) for doc, score in run] for run in runs]


def _haystack(state: Any) -> list[Any]:
    joiner, documents = state
    return [d.id for d in joiner.run(documents=documents)["documents"]]


def _same(lists: Any) -> Any:
    return lists


def contenders() -> list[Contender]:
    """Every contender of every form, fanfuse first in each."""
    return [
        Contender("fanfuse", "str ids", _same, _fanfuse_ids),
        Contender("NumPy RRF", "str ids", _same, _numpy),
        Contender("plain Python", "str ids", _same, plain_python),
        Contender("fanfuse", "(id, score) pairs", scored, _fanfuse_pairs),
        Contender("rankops", "(id, score) pairs", scored, _rankops, k=59.0),
        Contender("ranx fuse", "(id, score) pairs", lambda q: _ranx_prepare(scored(q)), _ranx),
        Contender("ranx fuse, norm=None", "(id, score) pairs", lambda q: _ranx_prepare(scored(q)),
                  _ranx_unnormalised),
        Contender("LangChain EnsembleRetriever", "(id, score) pairs", lambda q: _langchain_prepare(scored(q)),
                  _langchain),
        Contender("LlamaIndex QueryFusionRetriever", "(id, score) pairs",
                  lambda q: _llamaindex_prepare(scored(q)), _llamaindex, k=59.0),
        Contender("Haystack DocumentJoiner", "(id, score) pairs", lambda q: _haystack_prepare(scored(q)),
                  _haystack),
        Contender("plain Python", "(id, score) pairs", scored,
                  lambda runs: plain_python([[doc for doc, _ in run] for run in runs])),
        Contender("fanfuse", "int64 arrays", _same, _fanfuse_ids),
        Contender("NumPy RRF", "int64 arrays", _same, _numpy),
        Contender("plain Python", "int64 arrays", _same,
                  lambda lists: plain_python([a.tolist() for a in lists])),
    ]  # fmt: skip


def rankings_agree(lists: list[Any], ids: Sequence[Any], k: float = 60.0) -> bool:
    """Whether `ids` is fanfuse's top `TOP_K` for `lists`: at every position the id has the fused
    score of fanfuse's id there (equal scores may come in another order, or be cut elsewhere)."""
    plain = [list(np.asarray(lst).tolist()) for lst in lists]
    full = fanfuse.rrf(plain, k=k)
    score = dict(zip(full.ids, full.scores, strict=True))
    expected = full.scores[:TOP_K]
    ids = [i.item() if isinstance(i, np.generic) else i for i in ids]
    if len(ids) != len(expected) or any(i not in score for i in ids) or len(set(ids)) != len(ids):
        return False
    return all(abs(score[i] - s) <= 1e-12 * s for i, s in zip(ids, expected, strict=True))
