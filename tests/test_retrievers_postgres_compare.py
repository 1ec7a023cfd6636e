"""PostgreSQL full text against the embedded Tantivy index on the same corpus and queries: the real
MT-RAG cloud pool (skips where absent) and its generated twin.

The two rankers differ (BM25 weighs a term by its rarity; `ts_rank_cd` has no IDF and scores term
proximity), so their lists are compared by overlap@10 (shared documents / list length) against
floors measured on this data (docs/retrievers.md has the numbers and how to print them), and the
PostgreSQL side is checked for what must hold exactly: hits contain the query's terms, and the
multi-query result is `fanfuse.fuse` over the branches' own lists.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from statistics import fmean

import pytest

pytest.importorskip("psycopg")
pytest.importorskip("psycopg_pool")

import postgres_server as postgres_server_module
from fanfuse import MultiQueryRetriever, Qrels, Run, evaluate, fuse, read_qrels
from fanfuse.corpus import Fields, read_jsonl
from fanfuse.retrievers.postgres import PostgresFullTextRetriever, create_table, load_documents
from fanfuse.retrievers.tantivy_index import TantivyRetriever
from generated_corpus import corpus, queries
from postgres_server import Server
from psycopg_pool import ConnectionPool

SPEAKER = re.compile(r"\|user\|:\s*")
WORD = re.compile(r"\w+")
# Measured mean overlap@10 (PostgreSQL 16.2 and 15.18 alike, tantivy-py 0.27), rounded down to two
# decimals: MT-RAG 0.2122 / 0.2612 / 0.2362 (the heuristic's content-word variant), generated
# 0.117 / 0.118. Both sides are deterministic,
# so a drop below a floor means a retriever changed what it finds, not noise. The generated text is
# words in random order, where ts_rank_cd's proximity normalization (4) has nothing to go on.
MTRAG_FLOORS = {"single": 0.21, "heuristic": 0.26, "+rewrite": 0.23}
GENERATED_FLOORS = {"single": 0.11, "heuristic": 0.11}


@dataclass
class Comparison:
    """One corpus loaded into both backends, and its queries: (last turn, standalone rewrite)."""

    tantivy: TantivyRetriever
    postgres: PostgresFullTextRetriever
    queries: list[tuple[str, str]]
    qids: list[str]


def overlap(a: list[str], b: list[str]) -> float:
    """Shared documents of two top-10 lists over the longer list's length (1 when both are empty)."""
    return len(set(a) & set(b)) / max(len(a), len(b)) if a or b else 1.0


def strategy_lists(multi: MultiQueryRetriever, strategy: str, lastturn: str, rewrite: str) -> list[str]:
    if strategy == "single":
        return multi.search(rewrite, expansion=False).ids
    if strategy == "heuristic":
        return multi.search(rewrite).ids
    return multi.search(lastturn, variants=[rewrite]).ids  # +rewrite: the turn and its rewrite


def strategy_runs(comparison: Comparison, strategies: list[str]) -> dict[str, tuple[list[list[str]], ...]]:
    """Per strategy, the top-10 lists of PostgreSQL and of Tantivy for every query."""
    with (
        MultiQueryRetriever({"text": comparison.postgres}, top_k=10) as postgres,
        MultiQueryRetriever({"text": comparison.tantivy}, top_k=10) as tantivy,
    ):
        return {
            strategy: tuple(
                [strategy_lists(multi, strategy, *q) for q in comparison.queries]
                for multi in (postgres, tantivy)
            )
            for strategy in strategies
        }


def mean_overlaps(runs: dict[str, tuple[list[list[str]], ...]]) -> dict[str, float]:
    return {strategy: fmean(map(overlap, *lists)) for strategy, lists in runs.items()}


def mean_ndcg10(qids: list[str], lists: list[list[str]], qrels: Qrels) -> float:
    """nDCG@10 (as trec_eval computes it) over every judged query; a query with no hits scores 0."""
    rows = [
        (qid, doc, 10.0 - rank) for qid, ids in zip(qids, lists, strict=True) for rank, doc in enumerate(ids)
    ]
    run = Run.from_columns(*zip(*rows, strict=True)) if rows else None
    judged = set(qrels.qids()) & set(qids)
    if run is None or not judged:
        return 0.0
    _, values = evaluate(run, qrels, metrics=["ndcg@10"])
    return sum(values["ndcg@10"]) / len(judged)


@pytest.fixture(scope="module")
def mtrag_cloud(
    mtrag_dir: Path, postgres_server: Server, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Comparison]:
    documents = list(read_jsonl(mtrag_dir / "passages" / "cloud_pool.jsonl.gz", Fields(id="document_id")))
    texts = {}
    for strategy in ("lastturn", "rewrite"):
        with (mtrag_dir / "queries" / "cloud" / f"cloud_{strategy}.jsonl").open(encoding="utf-8") as lines:
            for line in lines:
                record = json.loads(line)
                texts.setdefault(record["_id"], {})[strategy] = SPEAKER.sub("", record["text"]).strip()
    pairs = [(q["lastturn"], q["rewrite"]) for q in texts.values()]
    yield from _loaded(documents, pairs, list(texts), postgres_server, tmp_path_factory.mktemp("cloud"))


@pytest.fixture(scope="module")
def generated(postgres_server: Server, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Comparison]:
    pairs = [(q, q) for q in queries(100)]
    qids = [str(i) for i in range(len(pairs))]
    yield from _loaded(corpus(2000), pairs, qids, postgres_server, tmp_path_factory.mktemp("generated"))


def _loaded(
    documents: list[object], pairs: list[tuple[str, str]], qids: list[str], server: Server, directory: Path
) -> Iterator[Comparison]:
    tantivy = TantivyRetriever.build(documents, directory / "index")  # type: ignore[arg-type]
    with (
        postgres_server_module.database(server) as conninfo,
        ConnectionPool(conninfo, max_size=4, open=True) as pool,
    ):
        create_table(pool)
        load_documents(pool, documents)  # type: ignore[arg-type]
        yield Comparison(tantivy, PostgresFullTextRetriever(pool), pairs, qids)


def stems(pool: ConnectionPool, words: list[str]) -> set[str]:
    """The English stems of `words` (stopwords have none), as the server's dictionary makes them."""
    with pool.connection() as conn:
        rows = conn.execute(
            "SELECT unnest(ts_lexize('english_stem', w)) FROM unnest(%s::text[]) AS w", [words]
        )
        return {row[0] for row in rows.fetchall()}


def test_mtrag_full_text_hits_contain_query_terms(mtrag_cloud: Comparison) -> None:
    for _, rewrite in mtrag_cloud.queries:
        query_stems = stems(mtrag_cloud.postgres.pool, WORD.findall(rewrite.lower()))
        hits = mtrag_cloud.postgres.search(rewrite, 10)
        assert hits or not query_stems, rewrite
        for hit in hits:
            text = f"{hit.payload['title']} {hit.payload['text']}".lower()
            # A stem is a prefix of its word but for a changed last letter (policy -> polici).
            assert any(stem[:-1] in text for stem in query_stems), (rewrite, hit.id)


def test_mtrag_overlap_with_tantivy(mtrag_cloud: Comparison, mtrag_dir: Path) -> None:
    runs = strategy_runs(mtrag_cloud, list(MTRAG_FLOORS))
    measured = mean_overlaps(runs)
    qrels = read_qrels(str(mtrag_dir / "qrels" / "cloud" / "dev.tsv"))
    print(f"\nMT-RAG cloud, {len(mtrag_cloud.queries)} queries: mean overlap@10 PostgreSQL/Tantivy, nDCG@10")
    for strategy, (postgres, tantivy) in runs.items():
        ndcg = [mean_ndcg10(mtrag_cloud.qids, lists, qrels) for lists in (postgres, tantivy)]
        scores = f"nDCG@10 PostgreSQL {ndcg[0]:.4f} Tantivy {ndcg[1]:.4f}"
        print(f"{strategy:>10}: overlap {measured[strategy]:.4f}, {scores}")
    for strategy, floor in MTRAG_FLOORS.items():
        assert measured[strategy] >= floor, strategy


def test_generated_overlap_with_tantivy(generated: Comparison) -> None:
    measured = mean_overlaps(strategy_runs(generated, list(GENERATED_FLOORS)))
    print(f"\ngenerated, {len(generated.queries)} queries, mean overlap@10 PostgreSQL/Tantivy: {measured}")
    for strategy, floor in GENERATED_FLOORS.items():
        assert measured[strategy] >= floor, strategy


@pytest.mark.parametrize("data", ["mtrag_cloud", "generated"])
def test_fused_result_is_fuse_over_the_branch_lists(data: str, request: pytest.FixtureRequest) -> None:
    comparison: Comparison = request.getfixturevalue(data)
    with MultiQueryRetriever({"text": comparison.postgres, "bm25": comparison.tantivy}, top_k=10) as multi:
        for lastturn, rewrite in comparison.queries[:25]:
            result = multi.search(lastturn, variants=[rewrite])
            variants = [v.text for v in result.diagnostics.variants]
            lists = [
                [h.id for h in retriever.search(variant, 20)]
                for variant in variants
                for retriever in (comparison.postgres, comparison.tantivy)
            ]
            expected = fuse(lists, method="rrf", k=60, top_k=10)
            assert result.ids == expected.ids
            assert [h.score for h in result.hits] == pytest.approx(expected.scores)
