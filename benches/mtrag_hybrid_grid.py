"""How the hybrid default was chosen: what the dense side searches and how much its lists weigh.

For every query of both query sets of each domain, the BM25 lists (top 20, as a multi-query branch
is) of the original query, the content-word variant and the feedback variant, and the neural dense
lists of the original, of each variant's plain text, and of the feedback variant written as text
(the question followed by its feedback terms, `FeedbackExpander(weighted=False)`), are computed once
and fused by RRF (k = 60, top 10) under every setting:

  original list weight   {1, 2, 3}      the original query's lists; every variant's list weighs 1
  dense weight           {1, 2, 3}      the dense retriever's lists, times the above (BM25: 1)
  dense variants         all            the original and both variants' plain text
                         original       the original only
                         content        the original and the content-word variant
                         feedback text  the original, the content words, the feedback variant as text

Each setting is scored against the single query on the same retrievers with the same weights
(BM25 + dense, the original alone: are the variants a gain there?) and against single-query BM25
(p: paired randomization test, 2,000 sign flips). The indexes and vectors are benches/mtrag_indexes.py's.

    .venv/bin/python benches/mtrag_hybrid_grid.py [--data ../shared/data/mtrag]   # ~3 min once embedded
"""

from __future__ import annotations

import itertools
import statistics
import sys
from collections.abc import Callable, Sequence

import fanfuse
from fanfuse.multiquery import FeedbackExpander, HeuristicExpander
from fanfuse.multiquery.expand.words import plain_text
from fanfuse.retrievers.base import Hit
from mtrag_bench import QUERY_SETS, data_missing, data_parser, load_queries, per_query_values
from mtrag_indexes import neural_dense, pool_index

BRANCH_K = 20
LIST_WEIGHTS = (1.0, 2.0, 3.0)
DENSE_WEIGHTS = (1.0, 2.0, 3.0)
# Which dense lists each choice fuses, besides the BM25 lists of the original and both variants.
DENSE_VARIANTS = {
    "all": ("original", "content", "feedback"),
    "original": ("original",),
    "content": ("original", "content"),
    "feedback text": ("original", "content", "feedback text"),
}
Setting = tuple[float, float, str]


def fused(lists: dict[str, list[str]], setting: Setting) -> list[str]:
    list_weight, dense_weight, dense_variants = setting
    names = [f"bm25 {v}" for v in ("original", "content", "feedback")]
    names += [f"dense {v}" for v in DENSE_VARIANTS[dense_variants]]
    branches = [lists[n] for n in names if n in lists]
    weights = [
        (list_weight if n.endswith(" original") else 1.0) * (dense_weight if n.startswith("dense") else 1.0)
        for n in names
        if n in lists
    ]
    return list(fanfuse.rrf(branches, weights=weights, top_k=10).ids)


def main(argv: list[str] | None = None) -> int:
    parser = data_parser(__doc__, index_dir=True)
    parser.add_argument(
        "--first-pass",
        choices=["bm25", "hybrid"],
        default="bm25",
        help="where feedback takes its documents: BM25's top, or BM25 and dense fused (RRF)",
    )
    args = parser.parse_args(argv)
    if data_missing(args.data):
        return 2
    settings: list[Setting] = list(itertools.product(LIST_WEIGHTS, DENSE_WEIGHTS, DENSE_VARIANTS))
    results: dict[tuple[Setting, str, str], tuple[float, float, float]] = {}
    for domain in args.domains:
        bm25 = pool_index(args.data, domain, args.index_dir)
        dense = neural_dense(bm25)[0]
        heuristic, feedback = HeuristicExpander(), FeedbackExpander(bm25)
        as_text = FeedbackExpander(bm25, weighted=False)
        qrels = fanfuse.read_qrels(str(args.data / "qrels" / domain / "dev.tsv"))
        judged = set(qrels.qids())
        for query_set in QUERY_SETS:
            queries = load_queries(args.data / "queries" / domain / f"{domain}_{query_set}.jsonl")
            qids = [q for q in queries if q in judged][: args.limit]
            per_query = {}
            for qid in qids:
                question = queries[qid]
                first_pass = bm25.search(question, feedback.feedback_docs)
                if args.first_pass == "hybrid":
                    first_pass = hybrid_first_pass(first_pass, dense.search(question, feedback.feedback_docs))
                texts = {"original": question, "content": next(iter(heuristic.candidates(question)), None)}
                texts["feedback"] = feedback.feedback_query(question, first_pass)[0]
                lists = {}
                for name, text in texts.items():
                    if text:
                        lists[f"bm25 {name}"] = [h.id for h in bm25.search(text, BRANCH_K)]
                        lists[f"dense {name}"] = [h.id for h in dense.search(plain_text(text), BRANCH_K)]
                text_variant = as_text.feedback_query(question, first_pass)[0]
                if text_variant:
                    lists["dense feedback text"] = [h.id for h in dense.search(text_variant, BRANCH_K)]
                per_query[qid] = lists

            for setting in settings:
                results[(setting, domain, query_set)] = score(setting, per_query, qrels, qids)
        print(f"{domain}: scored", file=sys.stderr)
    report(settings, results, args.domains)
    return 0


def hybrid_first_pass(bm25_hits: Sequence[Hit], dense_hits: Sequence[Hit]) -> list[Hit]:
    """The two lists fused by RRF, each hit with its fused score (feedback weighs documents by it)."""
    by_id = {h.id: h for h in [*dense_hits, *bm25_hits]}
    fused = fanfuse.rrf([[h.id for h in bm25_hits], [h.id for h in dense_hits]], top_k=len(bm25_hits))
    return [Hit(i, score, by_id[i].payload) for i, score in zip(fused.ids, fused.scores, strict=True)]


def score(
    setting: Setting, per_query: dict[str, dict[str, list[str]]], qrels: fanfuse.Qrels, qids: list[str]
) -> tuple[float, float, float]:
    """Relative nDCG@10 gain over single-query BM25; absolute gain over the single query on the same
    retrievers and weights, and its p-value."""

    def ndcg(lists_of: Callable[[dict[str, list[str]]], list[str]]) -> list[float]:
        return per_query_values({q: lists_of(ls) for q, ls in per_query.items()}, qrels, qids)["ndcg@10"]

    bm25_single = ndcg(lambda lists: lists["bm25 original"][:10])
    values = ndcg(lambda lists: fused(lists, setting))
    twin = ndcg(lambda lists: fused({k: v for k, v in lists.items() if k.endswith(" original")}, setting))
    mean, base = statistics.fmean(values), statistics.fmean(bm25_single)
    p = fanfuse.randomization_test(values, twin, iterations=2000)
    return (mean - base) / base, mean - statistics.fmean(twin), p


def report(
    settings: list[Setting],
    results: dict[tuple[Setting, str, str], tuple[float, float, float]],
    domains: list[str],
) -> None:
    cells = [(d, q) for d in domains for q in QUERY_SETS]
    print(
        "Per setting and query set: nDCG@10 vs single-query BM25 (relative); vs the single query on "
        "BM25 + dense with the same weights (absolute, p)\n"
    )
    print(
        "| original list weight | dense weight | dense variants | "
        + " | ".join(f"{d} {q}" for d, q in cells)
        + " |"
    )
    print("|---:|---:|---|" + "---:|" * len(cells))
    for setting in settings:
        row = " | ".join("{:+.1%}; {:+.4f} ({:.3f})".format(*results[(setting, d, q)]) for d, q in cells)
        print(f"| {setting[0]:g} | {setting[1]:g} | {setting[2]} | {row} |")
    both = [
        s
        for s in settings
        if all(
            results[(s, d, q)][0] >= 0.25 and results[(s, d, q)][1] > 0 and results[(s, d, q)][2] < 0.05
            for d, q in cells
        )
    ]
    print(f"\nSettings meeting both targets on all {len(cells)} query sets: {both or 'none'}")


if __name__ == "__main__":
    sys.exit(main())
