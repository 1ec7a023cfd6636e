"""Multi-query retrieval on real MT-RAG data: nDCG@10, Recall@10, latency, and paired p-values of
each row against single-query BM25 and against the single query on the same retrievers.

For each domain the passage pool is indexed with Tantivy (BM25) and, for the dense rows, embedded with
the default encoder (all-MiniLM-L6-v2 int8, `fanfuse[embed]`); both are kept in `--index-dir`
(benches/mtrag_indexes.py), so only the first run embeds. Each query set (`lastturn`: the user's
last turn as typed; `rewrite`: the benchmark's standalone rewrite of it) is answered by one
`MultiQueryRetriever` per row:

  BM25     single, heuristic (+ the content-word variant), feedback (+ the RM3 variant of the top
           BM25 documents), heuristic+feedback (+ both)
  dense    single: the neural retriever alone
  hybrid   BM25 + dense: single, and `fanfuse.open_index(index)` itself, the default of `fanfuse
           search` (heuristic+feedback, the dense side given each variant as plain text)

Multi-query rows weigh the original query's lists 3 and the variants' 1 (the default,
`--original-list-weight` changes it). `--dense-weight` and `--dense-variants original` (the dense
side searches the original query only) are the hybrid options tried when choosing the default;
`--dense tfidf` puts TF-IDF + SVD in the neural model's place, `--dense none` leaves dense out.
Metrics are fanfuse's evaluator (pytrec_eval's `ndcg_cut_10` and `recall_10`) over every query of
the qrels (a query with no hits scores 0), on the run in fanfuse's own fused order. p is the two-sided
paired randomization test of nDCG@10 (10,000 sign flips, seed 0). Latency is per query, one warm-up
query per row first, on the same process and machine.

    .venv/bin/python benches/mtrag_retrieval.py            # the table (make mtrag-retrieval)
    .venv/bin/python benches/mtrag_retrieval.py --limit 5  # a quick smoke run
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import fanfuse
from fanfuse import MultiQueryRetriever
from fanfuse.index_retriever import DEFAULT_VARIANT_WEIGHTS, open_index
from fanfuse.multiquery import CombinedExpander, Expander, FeedbackExpander, HeuristicExpander
from fanfuse.multiquery.expand.feedback import (
    DEFAULT_FEEDBACK_DOCS,
    DEFAULT_FEEDBACK_TERMS,
    DEFAULT_ORIGINAL_WEIGHT,
)
from fanfuse.multiquery.plain_text import PlainTextQueries
from fanfuse.retrievers.base import Hit, Retriever
from fanfuse.retrievers.tantivy_index import TantivyRetriever
from measuring import markdown_table, p95
from mtrag_bench import QUERY_SETS, data_parser, load_queries, per_query_values, report_domains
from mtrag_indexes import neural_dense, pool_index

# The fusion weight of the original query's lists (the variants' weigh 1), as `fanfuse search` has it.
ORIGINAL_LIST_WEIGHT = DEFAULT_VARIANT_WEIGHTS[0]
DEFAULT_ROW = "default (fanfuse search)"


@dataclass(frozen=True)
class Settings:
    feedback_docs: int
    feedback_terms: int
    original_weight: float
    original_list_weight: float
    iterations: int
    dense_weight: float = 1.0
    dense_variants: str = "all"


def _heuristic(bm25: TantivyRetriever, s: Settings) -> Expander:
    return HeuristicExpander()


def _feedback(bm25: TantivyRetriever, s: Settings) -> Expander:
    return FeedbackExpander(
        bm25,
        feedback_docs=s.feedback_docs,
        feedback_terms=s.feedback_terms,
        original_weight=s.original_weight,
    )


def _both(bm25: TantivyRetriever, s: Settings) -> Expander:
    return CombinedExpander([_heuristic(bm25, s), _feedback(bm25, s)])


# Variant strategies: name -> the expander (None: the query alone).
STRATEGIES: dict[str, Callable[[TantivyRetriever, Settings], Expander] | None] = {
    "single": None,
    "heuristic": _heuristic,
    "feedback": _feedback,
    "heuristic+feedback": _both,
}


def _tfidf(bm25: TantivyRetriever) -> Retriever:
    from fanfuse.retrievers.dense_cache import dense_for_index

    return dense_for_index(bm25)[0]


def _minilm(bm25: TantivyRetriever) -> Retriever:
    return neural_dense(bm25)[0]


# Dense retrievers the table can add: name -> the retriever over the index's passages.
DENSE_ENCODERS: dict[str, Callable[[TantivyRetriever], Retriever]] = {"minilm": _minilm, "tfidf": _tfidf}


class OriginalOnly:
    """A retriever searched with the questions themselves only: another variant finds nothing."""

    def __init__(self, retriever: Retriever, questions: set[str]) -> None:
        self.retriever, self.questions = retriever, questions

    def search(self, query: str, k: int, filter: Mapping[str, Any] | None = None) -> Sequence[Hit]:
        return self.retriever.search(query, k, filter) if query in self.questions else []


@dataclass(frozen=True)
class Row:
    """One row of the table: how to make its retriever, and which row is its single-query twin."""

    retrievers: str
    variants: str
    make: Callable[[], MultiQueryRetriever]
    twin: tuple[str, str]


def answer(
    retriever: MultiQueryRetriever, queries: dict[str, str], qids: list[str]
) -> tuple[dict[str, list[str]], list[float]]:
    retriever.search(queries[qids[0]])  # warm-up: sessions, caches, threads
    run, latencies = {}, []
    for qid in qids:
        begin = time.perf_counter()
        result = retriever.search(queries[qid])
        latencies.append((time.perf_counter() - begin) * 1e3)
        run[qid] = result.ids
    return run, latencies


def rows_of_domain(
    bm25: TantivyRetriever, dense: Retriever | None, label: str, s: Settings, questions: set[str]
) -> list[Row]:
    weights = [s.original_list_weight, 1.0]
    rows = []
    for name, make in STRATEGIES.items():
        expander = make(bm25, s) if make is not None else None
        rows.append(Row("BM25", name, _factory({"bm25": bm25}, expander, weights), ("BM25", "single")))
    if dense is None:
        return rows
    plain = PlainTextQueries(dense)
    side = OriginalOnly(plain, questions) if s.dense_variants == "original" else plain
    hybrid, r_weights = f"BM25+{label}", {"bm25": 1.0, "dense": s.dense_weight}
    rows.append(Row(label, "single", _factory({"dense": plain}, None, weights), (label, "single")))
    rows.append(
        Row(
            hybrid,
            "single",
            _factory({"bm25": bm25, "dense": plain}, None, weights, r_weights),
            (hybrid, "single"),
        )
    )
    tuned = s != Settings(
        DEFAULT_FEEDBACK_DOCS,
        DEFAULT_FEEDBACK_TERMS,
        DEFAULT_ORIGINAL_WEIGHT,
        ORIGINAL_LIST_WEIGHT,
        s.iterations,
    )
    if label == "minilm" and not tuned:
        # The stored vectors make the index's default hybrid: exactly what `fanfuse search` answers.
        rows.append(Row(hybrid, DEFAULT_ROW, lambda: open_index(bm25, top_k=10), (hybrid, "single")))
    else:
        expander = _both(bm25, s)
        rows.append(
            Row(
                hybrid,
                "heuristic+feedback",
                _factory({"bm25": bm25, "dense": side}, expander, weights, r_weights),
                (hybrid, "single"),
            )
        )
    return rows


def _factory(
    retrievers: dict[str, Any],
    expander: Expander | None,
    weights: list[float],
    retriever_weights: dict[str, float] | None = None,
) -> Callable[[], MultiQueryRetriever]:
    def make() -> MultiQueryRetriever:
        if expander is None:
            return MultiQueryRetriever(
                retrievers, expansion=False, top_k=10, retriever_weights=retriever_weights
            )
        return MultiQueryRetriever(
            retrievers,
            expander=expander,
            top_k=10,
            variant_weights=weights,
            retriever_weights=retriever_weights,
        )

    return make


def run_domain(data: Path, domain: str, args: argparse.Namespace, settings: Settings) -> list[dict[str, Any]]:
    bm25 = pool_index(data, domain, args.index_dir)
    dense = DENSE_ENCODERS[args.dense](bm25) if args.dense != "none" else None
    qrels = fanfuse.read_qrels(str(data / "qrels" / domain / "dev.tsv"))
    judged = set(qrels.qids())
    out = []
    for query_set in args.query_sets:
        queries = load_queries(data / "queries" / domain / f"{domain}_{query_set}.jsonl")
        qids = [q for q in queries if q in judged][: args.limit]
        scored: dict[tuple[str, str], list[float]] = {}
        for row in rows_of_domain(bm25, dense, args.dense, settings, {queries[q] for q in qids}):
            with row.make() as retriever:
                run, latencies = answer(retriever, queries, qids)
            values = per_query_values(run, qrels, qids)
            scored[(row.retrievers, row.variants)] = values["ndcg@10"]
            flips = settings.iterations
            out.append(
                {
                    "domain": domain,
                    "queries": query_set,
                    "retrievers": row.retrievers,
                    "variants": row.variants,
                    "n": len(qids),
                    **{m: statistics.fmean(v) if v else 0.0 for m, v in values.items()},
                    "p": fanfuse.randomization_test(
                        values["ndcg@10"], scored[("BM25", "single")], iterations=flips
                    ),
                    "p_twin": fanfuse.randomization_test(
                        values["ndcg@10"], scored[row.twin], iterations=flips
                    ),
                    "ms_mean": statistics.fmean(latencies),
                    "ms_p95": p95(latencies),
                }
            )
    return out


def markdown(rows: list[dict[str, Any]]) -> str:
    columns = (
        "domain | queries | retrievers | variants | n | nDCG@10=ndcg@10:.4f | vs single BM25=gain:+.1% "
        "| p:.4f | p vs single, same retrievers=p_twin:.4f | Recall@10=recall@10:.4f "
        "| ms/query mean=ms_mean:.2f | p95=ms_p95:.2f"
    )
    base: dict[tuple[str, str], float] = {}
    shown = []
    for r in rows:
        key = (r["domain"], r["queries"])
        base.setdefault(key, r["ndcg@10"])
        single = r["variants"] == "single"
        shown.append(
            {
                **r,
                "gain": (r["ndcg@10"] - base[key]) / base[key] if base[key] else 0.0,
                "p": None if r["retrievers"] == "BM25" and single else r["p"],
                "p_twin": None if single else r["p_twin"],
            }
        )
    return markdown_table(columns, "llllrrrrrrrr", shown)


def main(argv: list[str] | None = None) -> int:
    parser = data_parser(__doc__, index_dir=True, iterations=True, json_rows=True)
    parser.add_argument("--query-sets", nargs="+", choices=QUERY_SETS, default=list(QUERY_SETS))
    parser.add_argument(
        "--dense", choices=["none", *DENSE_ENCODERS], default="minilm", help="the dense rows' retriever"
    )
    parser.add_argument(
        "--dense-weight", type=float, default=1.0, help="fusion weight of the dense lists (BM25: 1)"
    )
    parser.add_argument(
        "--dense-variants",
        choices=["all", "original"],
        default="all",
        help="what the dense side searches in multi-query rows",
    )
    parser.add_argument("--feedback-docs", type=int, default=DEFAULT_FEEDBACK_DOCS)
    parser.add_argument("--feedback-terms", type=int, default=DEFAULT_FEEDBACK_TERMS)
    parser.add_argument("--original-weight", type=float, default=DEFAULT_ORIGINAL_WEIGHT)
    parser.add_argument(
        "--original-list-weight",
        type=float,
        default=ORIGINAL_LIST_WEIGHT,
        help="fusion weight of the original query's lists in multi-query rows (variants: 1)",
    )

    def rows_for(args: argparse.Namespace) -> Callable[[str], list[dict[str, Any]]]:
        settings = Settings(
            args.feedback_docs,
            args.feedback_terms,
            args.original_weight,
            args.original_list_weight,
            args.iterations,
            args.dense_weight,
            args.dense_variants,
        )
        return lambda domain: run_domain(args.data, domain, args, settings)

    return report_domains(parser, argv, rows_for, markdown)


if __name__ == "__main__":
    sys.exit(main())
