"""How the multi-query defaults were chosen: a grid over the variants, the feedback settings and the
fusion weight of the original query's list, on both MT-RAG domains and query sets (BM25).

Grid: variants {heuristic, feedback, heuristic+feedback} x feedback documents {5, 10, 20} x feedback
terms {10, 20, 40} x original weight inside the feedback query {0.8, 0.9} x fusion weight of the
original query's list {1, 1.5, 2, 3} (the variants' lists weigh 1). Every setting is scored on the
same queries as the table in docs/mtrag-retrieval.md; the p-values are the same paired randomization
test against single-query BM25 (2,000 sign flips here). Printed: how many settings gain on all four
query sets and how many with p < 0.05 on all four (by variants and list weight); heuristic+feedback
at the chosen list weight (3) for every feedback setting; and a cross-domain check, the setting chosen on one
domain scored on the other.

    .venv/bin/python benches/mtrag_feedback_grid.py [--data ../shared/data/mtrag]   # ~2 min
"""

from __future__ import annotations

import itertools
import statistics
import sys
import tempfile
from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path

import fanfuse
from fanfuse.corpus import Fields, read_jsonl
from fanfuse.multiquery import FeedbackExpander, HeuristicExpander
from fanfuse.retrievers.base import Hit
from fanfuse.retrievers.tantivy_index import TantivyRetriever
from mtrag_bench import QUERY_SETS, data_missing, data_parser, load_queries, per_query_values
from mtrag_retrieval import ORIGINAL_LIST_WEIGHT

FEEDBACK = list(itertools.product((5, 10, 20), (10, 20, 40), (0.8, 0.9)))
LIST_WEIGHTS = (1.0, 1.5, 2.0, 3.0)
VARIANTS = ("heuristic", "feedback", "heuristic+feedback")
BRANCH_K = 20
Setting = tuple[str, tuple[int, int, float] | None, float]


class AnalyzedOnce:
    """The index with its analyzer's answers kept: every feedback setting reads the same documents."""

    def __init__(self, index: TantivyRetriever) -> None:
        self.index = index
        self.analyze = lru_cache(maxsize=None)(index.analyze)

    def search(self, query: str, k: int) -> Sequence[Hit]:
        return self.index.search(query, k)


def lists(
    index: TantivyRetriever, question: str, expanders: dict[object, FeedbackExpander]
) -> dict[object, list[str]]:
    def found(text: str | None) -> list[str]:
        return [hit.id for hit in index.search(text, BRANCH_K)] if text else []

    heuristic = HeuristicExpander().candidates(question)
    first_pass = index.search(question, max(docs for docs, _, _ in FEEDBACK))
    out: dict[object, list[str]] = {
        "original": found(question),
        "heuristic": found(next(iter(heuristic), None)),
    }
    for setting, expander in expanders.items():
        out[setting] = found(expander.feedback_query(question, first_pass)[0])
    return out


def scores(
    setting: Setting, per_query: dict[str, dict[object, list[str]]], qrels: fanfuse.Qrels
) -> list[float]:
    variants, feedback, weight = setting
    run = {}
    for qid, found in per_query.items():
        branches, weights = [found["original"]], [weight]
        for name in variants.split("+"):
            branches.append(found[feedback if name == "feedback" else "heuristic"])
            weights.append(1.0)
        run[qid] = list(fanfuse.rrf(branches, weights=weights, top_k=10).ids)
    return per_query_values(run, qrels, list(per_query))["ndcg@10"]


def main(argv: list[str] | None = None) -> int:
    args = data_parser(__doc__).parse_args(argv)
    if data_missing(args.data):
        return 2
    settings: list[Setting] = [("heuristic", None, w) for w in LIST_WEIGHTS]
    settings += [(v, f, w) for v in VARIANTS[1:] for f in FEEDBACK for w in LIST_WEIGHTS]
    gains: dict[tuple[Setting, str, str], tuple[float, float]] = {}
    with tempfile.TemporaryDirectory(prefix="fanfuse-grid-") as workdir:
        for domain in args.domains:
            passages = read_jsonl(
                args.data / "passages" / f"{domain}_pool.jsonl.gz", Fields(id="document_id")
            )
            index = TantivyRetriever.build(passages, Path(workdir) / domain)
            cached = AnalyzedOnce(index)
            expanders = {
                (d, t, w): FeedbackExpander(cached, feedback_docs=d, feedback_terms=t, original_weight=w)
                for d, t, w in FEEDBACK
            }
            qrels = fanfuse.read_qrels(str(args.data / "qrels" / domain / "dev.tsv"))
            judged = set(qrels.qids())
            for query_set in QUERY_SETS:
                queries = load_queries(args.data / "queries" / domain / f"{domain}_{query_set}.jsonl")
                qids = [q for q in queries if q in judged][: args.limit]
                per_query = {q: lists(index, queries[q], expanders) for q in qids}
                single = per_query_values({q: f["original"][:10] for q, f in per_query.items()}, qrels, qids)
                base = single["ndcg@10"]
                for setting in settings:
                    values = scores(setting, per_query, qrels)
                    p = fanfuse.randomization_test(values, base, iterations=2000)
                    gains[(setting, domain, query_set)] = (
                        statistics.fmean(values) - statistics.fmean(base),
                        p,
                    )
            print(f"{domain}: scored", file=sys.stderr)
    report(settings, gains, args.domains)
    return 0


def report(
    settings: list[Setting], gains: dict[tuple[Setting, str, str], tuple[float, float]], domains: list[str]
) -> None:
    cells = [(d, q) for d in domains for q in QUERY_SETS]
    positive = [s for s in settings if all(gains[(s, d, q)][0] > 0 for d, q in cells)]
    significant = [s for s in positive if all(gains[(s, d, q)][1] < 0.05 for d, q in cells)]
    print(
        f"{len(settings)} settings; {len(positive)} gain nDCG@10 on all {len(cells)} query sets; "
        f"{len(significant)} with p < 0.05 on all {len(cells)}, by variants and list weight:\n"
    )
    print("| variants | " + " | ".join(f"list weight {w:g}" for w in LIST_WEIGHTS) + " |")
    print("|---|" + "---:|" * len(LIST_WEIGHTS))
    for variants in VARIANTS:
        counts = []
        for weight in LIST_WEIGHTS:
            group = [s for s in settings if s[0] == variants and s[2] == weight]
            counts.append(f"{sum(1 for s in group if s in significant)} of {len(group)}")
        print(f"| {variants} | " + " | ".join(counts) + " |")
    print(
        f"\nheuristic+feedback, original list weight {ORIGINAL_LIST_WEIGHT:g}: "
        "nDCG@10 gain (p) per query set\n"
    )
    print("| feedback docs | terms | original weight | " + " | ".join(f"{d} {q}" for d, q in cells) + " |")
    print("|---:|---:|---:|" + "---:|" * len(cells))
    for feedback in FEEDBACK:
        setting = ("heuristic+feedback", feedback, ORIGINAL_LIST_WEIGHT)
        row = " | ".join(
            f"{gains[(setting, d, q)][0]:+.4f} ({gains[(setting, d, q)][1]:.3f})" for d, q in cells
        )
        print(f"| {feedback[0]} | {feedback[1]} | {feedback[2]} | {row} |")
    print("\nChosen on one domain (largest mean gain over its two query sets), scored on the other:\n")
    for train, test in itertools.permutations(domains, 2):
        best = max(settings, key=lambda s: sum(gains[(s, train, q)][0] for q in QUERY_SETS))
        held = ", ".join(
            f"{q} {gains[(best, test, q)][0]:+.4f} (p {gains[(best, test, q)][1]:.3f})" for q in QUERY_SETS
        )
        print(f"- chosen on {train}: {best} -> {test}: {held}")


if __name__ == "__main__":
    sys.exit(main())
