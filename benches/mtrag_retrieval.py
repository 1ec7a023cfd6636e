"""Multi-query retrieval on real MT-RAG data: Recall@10, nDCG@10 and latency per query.

For each domain the passage pool is indexed with Tantivy (BM25) and embedded with TF-IDF + SVD
(the dense side, fitted on the pool). The `lastturn` queries are then answered

  single     the last user turn as one query (expansion off)
  heuristic  the last turn plus HeuristicExpander variants (key terms, OR, phrase), fused by RRF
  +rewrite   the last turn plus the benchmark's rewritten standalone question as a given variant
  +rewrite x2  the same with the rewrite's lists weighted 2 (variant_weights=[1, 2])
  rewrite    the rewrite alone, single query (a reference row, not a multi-query strategy)

each with BM25 alone and with BM25 + dense in one MultiQueryRetriever. Metrics follow pytrec_eval
(`recall_10`, `ndcg_cut_10`), averaged over every query of the qrels (a query with no hits scores 0).
The run handed to pytrec_eval scores hits by their fused rank, so it evaluates fanfuse's own order,
ties included, rather than re-sorting equal RRF scores by id.

    .venv/bin/python benches/mtrag_retrieval.py            # both domains, prints a Markdown table
    .venv/bin/python benches/mtrag_retrieval.py --limit 5  # a quick smoke run
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import pytrec_eval
from fanfuse import MultiQueryRetriever
from fanfuse.corpus import Fields, read_jsonl
from fanfuse.retrievers.dense import DenseRetriever, TfidfSvdEmbedder, document_text
from fanfuse.retrievers.tantivy_index import TantivyRetriever

DEFAULT_DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "mtrag"
STRATEGIES = ["single", "heuristic", "+rewrite", "+rewrite x2", "rewrite"]
# The queries carry a speaker tag ("|user|: how ..."); it is markup, not part of the question.
_SPEAKER = re.compile(r"\|user\|:\s*")


def load_queries(path: Path) -> dict[str, str]:
    queries = {}
    with path.open(encoding="utf-8") as lines:
        for line in lines:
            record = json.loads(line)
            queries[record["_id"]] = _SPEAKER.sub("", record["text"]).strip()
    return queries


def load_qrels(path: Path) -> dict[str, dict[str, int]]:
    qrels: dict[str, dict[str, int]] = {}
    with path.open(encoding="utf-8") as lines:
        next(lines)  # header: query-id corpus-id score
        for line in lines:
            query_id, doc_id, score = line.rstrip("\n").split("\t")
            qrels.setdefault(query_id, {})[doc_id] = int(score)
    return qrels


def search(retriever: MultiQueryRetriever, strategy: str, lastturn: str, rewrite: str) -> list[str]:
    if strategy == "single":
        return retriever.search(lastturn, expansion=False).ids
    if strategy == "heuristic":
        return retriever.search(lastturn).ids
    if strategy == "+rewrite":
        return retriever.search(lastturn, variants=[rewrite]).ids
    if strategy == "+rewrite x2":
        return retriever.search(lastturn, variants=[rewrite], variant_weights=[1.0, 2.0]).ids
    return retriever.search(rewrite, expansion=False).ids


def evaluate(qrels: dict[str, dict[str, int]], run: dict[str, list[str]]) -> tuple[float, float]:
    # Rank-derived scores: pytrec_eval sorts by score, so this keeps fanfuse's order exactly.
    scored = {q: {d: float(len(ids) - r) for r, d in enumerate(ids)} for q, ids in run.items() if ids}
    per_query = pytrec_eval.RelevanceEvaluator(qrels, {"recall_10", "ndcg_cut_10"}).evaluate(scored)
    recall = sum(per_query.get(q, {}).get("recall_10", 0.0) for q in qrels) / len(qrels)
    ndcg = sum(per_query.get(q, {}).get("ndcg_cut_10", 0.0) for q in qrels) / len(qrels)
    return recall, ndcg


def run_domain(data: Path, domain: str, limit: int | None, dims: int, workdir: Path) -> list[dict[str, Any]]:
    started = time.perf_counter()
    passages = list(read_jsonl(data / "passages" / f"{domain}_pool.jsonl.gz", Fields(id="document_id")))
    bm25 = TantivyRetriever.build(passages, workdir / domain)
    embed = TfidfSvdEmbedder(dimensions=dims).fit([document_text(p) for p in passages])
    dense = DenseRetriever.from_documents(passages, embed)
    print(
        f"{domain}: {len(passages)} passages indexed in {time.perf_counter() - started:.1f} s",
        file=sys.stderr,
    )

    lastturn = load_queries(data / "queries" / domain / f"{domain}_lastturn.jsonl")
    rewrite = load_queries(data / "queries" / domain / f"{domain}_rewrite.jsonl")
    qrels = load_qrels(data / "qrels" / domain / "dev.tsv")
    query_ids = [q for q in lastturn if q in qrels][:limit]
    qrels = {q: qrels[q] for q in query_ids}

    rows = []
    for name, retrievers in [("BM25", {"bm25": bm25}), ("BM25+dense", {"bm25": bm25, "dense": dense})]:
        with MultiQueryRetriever(retrievers, top_k=10) as retriever:
            for strategy in STRATEGIES:
                run, latencies = {}, []
                for query_id in query_ids:
                    begin = time.perf_counter()
                    run[query_id] = search(retriever, strategy, lastturn[query_id], rewrite[query_id])
                    latencies.append((time.perf_counter() - begin) * 1e3)
                recall, ndcg = evaluate(qrels, run)
                rows.append(
                    {
                        "domain": domain,
                        "retrievers": name,
                        "strategy": strategy,
                        "queries": len(query_ids),
                        "recall@10": recall,
                        "ndcg@10": ndcg,
                        "ms_mean": statistics.fmean(latencies),
                        "ms_p95": statistics.quantiles(latencies, n=20)[-1]
                        if len(latencies) > 1
                        else latencies[0],
                    }
                )
    return rows


def markdown(rows: list[dict[str, Any]]) -> str:
    lines = [
        "| domain | retrievers | queries from lastturn | n | Recall@10 | nDCG@10 | ms/query mean | p95 |",
        "|---|---|---|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        lines.append(
            f"| {r['domain']} | {r['retrievers']} | {r['strategy']} | {r['queries']} | {r['recall@10']:.4f} "
            f"| {r['ndcg@10']:.4f} | {r['ms_mean']:.2f} | {r['ms_p95']:.2f} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--data", type=Path, default=DEFAULT_DATA, help="the MT-RAG folder (shared/data/mtrag)"
    )
    parser.add_argument("--domains", nargs="+", default=["clapnq", "cloud"])
    parser.add_argument("--limit", type=int, help="evaluate only the first N queries per domain")
    parser.add_argument("--dims", type=int, default=256, help="SVD dimensions of the dense side")
    parser.add_argument("--json", type=Path, help="also write the rows as JSON here")
    args = parser.parse_args(argv)
    if not args.data.is_dir():
        print(f"MT-RAG data not found at {args.data} (pass --data)", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="fanfuse-mtrag-") as workdir:
        rows = [
            row
            for d in args.domains
            for row in run_domain(args.data, d, args.limit, args.dims, Path(workdir))
        ]
    print(markdown(rows))
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
