"""Which query variants earn their place on Tantivy? Each kind of variant, measured on MT-RAG.

For every query of both query sets (`lastturn`, `rewrite`) of each domain, every kind below is
searched on its own (BM25, top 20, as a multi-query branch is) and its list is compared with the
others. Per kind: how many queries it is produced for, how often its list is empty, how often it
equals another kind's list exactly (same ids, same order: the variant only counts that list twice),
and nDCG@10 of the original query fused with it alone (RRF, equal weights) with the paired p-value
against the original alone.

  original        the query as typed
  content words   HeuristicExpander's variant: stopwords dropped (subjects, acronyms, code kept)
  OR-joined       the content words joined by OR (HeuristicExpander(default_operator="and"))
  full phrase     the whole question as one quoted phrase
  bigram phrases  the content words plus each pair of adjacent content words as a phrase, ^0.3
  title boost     the content words, in the title field boosted x2, plus in any field
  longest phrase  the longest run of adjacent content words as one quoted phrase
  feedback        FeedbackExpander's variant (RM3 terms of the top 10 documents)

    .venv/bin/python benches/mtrag_variants.py [--data ../shared/data/mtrag] [--limit N]
"""

from __future__ import annotations

import itertools
import statistics
import sys
import tempfile
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import fanfuse
from fanfuse.corpus import Fields, read_jsonl
from fanfuse.multiquery import FeedbackExpander, HeuristicExpander
from fanfuse.multiquery.expand.words import content_words, query_term
from fanfuse.retrievers.tantivy_index import TantivyRetriever
from mtrag_bench import QUERY_SETS, data_missing, data_parser, load_queries, per_query_values

BRANCH_K = 20  # what MultiQueryRetriever asks of each branch for a top 10


def _variant(expander: HeuristicExpander | FeedbackExpander, query: str) -> str | None:
    variants = expander.expand(query, max_variants=2).variants
    return variants[1].text if len(variants) > 1 else None


def _runs(query: str) -> list[list[str]]:
    """Runs of adjacent plain content words (code symbols and quoted spans end a run)."""
    runs: list[list[str]] = [[]]
    kept = set(content_words(query).words)
    for word in query.replace("?", " ").split():
        word = word.strip(".,;:!")
        if word in kept and word.isalnum():
            runs[-1].append(word)
        elif runs[-1]:
            runs.append([])
    return [r for r in runs if len(r) >= 2]


def _content(query: str) -> str:
    return " ".join(query_term(w) for w in content_words(query).words) or query


def _bigrams(query: str) -> str | None:
    pairs = [f'"{a} {b}"^0.3' for run in _runs(query) for a, b in itertools.pairwise(run)]
    return f"{_content(query)} {' '.join(pairs)}" if pairs else None


def _longest_phrase(query: str) -> str | None:
    runs = _runs(query)
    return '"' + " ".join(max(runs, key=len)) + '"' if runs else None


def kinds(index: TantivyRetriever) -> dict[str, Callable[[str], str | None]]:
    heuristic, joined, feedback = (
        HeuristicExpander(),
        HeuristicExpander(default_operator="and"),
        FeedbackExpander(index),
    )
    return {
        "original": lambda q: q,
        "content words": lambda q: _variant(heuristic, q),
        "OR-joined": lambda q: next((v for v in joined.candidates(q) if " OR " in v), None),
        "full phrase": lambda q: '"' + " ".join(q.replace('"', " ").split()) + '"',
        "bigram phrases": _bigrams,
        "title boost": lambda q: f"title:({_content(q)})^2 {_content(q)}",
        "longest phrase": _longest_phrase,
        "feedback": lambda q: _variant(feedback, q),
    }


def measure(data: Path, domain: str, limit: int | None, workdir: Path) -> list[str]:
    passages = read_jsonl(data / "passages" / f"{domain}_pool.jsonl.gz", Fields(id="document_id"))
    index = TantivyRetriever.build(passages, workdir / domain)
    qrels = fanfuse.read_qrels(str(data / "qrels" / domain / "dev.tsv"))
    judged = set(qrels.qids())
    lines = []
    for query_set in QUERY_SETS:
        queries = load_queries(data / "queries" / domain / f"{domain}_{query_set}.jsonl")
        qids = [q for q in queries if q in judged][:limit]
        makers = kinds(index)
        lists: dict[str, dict[str, list[str]]] = {kind: {} for kind in makers}
        for qid in qids:
            for kind, make in makers.items():
                text = make(queries[qid])
                if text is not None:
                    lists[kind][qid] = [hit.id for hit in index.search(text, BRANCH_K)]
        original = lists["original"]
        single = per_query_values({q: original[q][:10] for q in qids}, qrels, qids)["ndcg@10"]
        for kind, found in lists.items():
            empty = sum(1 for ids in found.values() if not ids)
            twins = Counter(
                other
                for q, ids in found.items()
                if ids
                for other in lists
                if other != kind and lists[other].get(q) == ids
            )
            same = sum(1 for q, ids in found.items() if ids and any(lists[o].get(q) == ids for o in twins))
            most = (
                f" (most often {twins.most_common(1)[0][0]}: {twins.most_common(1)[0][1]})" if twins else ""
            )
            fused = {
                q: list(fanfuse.rrf([original[q], found.get(q, [])], top_k=10).ids)
                if kind != "original"
                else original[q][:10]
                for q in qids
            }
            ndcg = per_query_values(fused, qrels, qids)["ndcg@10"]
            p = "" if kind == "original" else f"{fanfuse.randomization_test(ndcg, single):.4f}"
            lines.append(
                f"| {domain} | {query_set} | {kind} | {len(found)} | {empty} | {same}{most} "
                f"| {statistics.fmean(ndcg):.4f} | {p} |"
            )
    return lines


def main(argv: list[str] | None = None) -> int:
    args = data_parser(__doc__).parse_args(argv)
    if data_missing(args.data):
        return 2
    lines = [
        "| domain | queries | variant kind | produced | empty list | list equals another's "
        "| nDCG@10 fused with the original | p |",
        "|---|---|---|---:|---:|---:|---:|---:|",
    ]
    with tempfile.TemporaryDirectory(prefix="fanfuse-variants-") as workdir:
        for domain in args.domains:
            lines += measure(args.data, domain, args.limit, Path(workdir))
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
