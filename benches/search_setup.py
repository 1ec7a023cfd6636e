"""The end-to-end search inputs of `peers_report.py`: the MT-RAG clapnq pool as a BM25 + dense index
(built once into .cache/mtrag-indexes, `mtrag_indexes.py`) and each question's plain-text variants
(up to four, the original first), made once by fanfuse's default expander (`fanfuse.open_index`'s),
so that every contender gets the same ones."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fanfuse.index_retriever import default_expander
from fanfuse.multiquery.expand.words import plain_text
from fanfuse.retrievers.dense import DenseRetriever
from fanfuse.retrievers.dense_cache import neural_dense_for_index
from load_service import questions
from mtrag_indexes import pool_index

VARIANTS = 4


def clapnq_setup(data: Path, count: int) -> tuple[dict[str, Any], dict[str, list[str]]]:
    bm25 = pool_index(data, "clapnq")
    dense: DenseRetriever = neural_dense_for_index(bm25)[0]
    dense.query_cache_size = 0  # every search embeds its queries, as the peers' searches do
    expander = default_expander(bm25)
    variants: dict[str, list[str]] = {}
    for question in questions(data / "queries" / "clapnq" / "clapnq_rewrite.jsonl", count):
        made = expander.expand(question, max_variants=VARIANTS).variants
        texts = [v.plain or plain_text(v.text) for v in made]
        variants[question] = texts
    return {"bm25": bm25, "dense": dense}, variants
