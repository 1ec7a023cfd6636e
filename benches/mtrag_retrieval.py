"""Multi-query retrieval on real MT-RAG data: nDCG@10, Recall@10, latency, and the paired p-value of
each row against single-query BM25 on the same queries.

For each domain the passage pool is indexed with Tantivy (BM25). Each query set (`lastturn`: the
user's last turn as typed; `rewrite`: the benchmark's standalone rewrite of it) is answered by one
`MultiQueryRetriever` per row:

  single              the query alone (expansion off)
  heuristic           + HeuristicExpander's variant (the content words)
  feedback            + FeedbackExpander's variant (RM3 terms from the top BM25 documents)
  heuristic+feedback  + both

Multi-query rows weigh the original query's lists by `--original-list-weight` (default 3; the
variants 1 each).
`--dense tfidf` adds a dense retriever (TF-IDF + SVD fitted on the pool) alone, and BM25 + dense with
and without the variants; another encoder is one more entry in DENSE_ENCODERS.
Metrics are fanfuse's evaluator (pytrec_eval's `ndcg_cut_10` and `recall_10`) over every query of
the qrels (a query with no hits scores 0), on the run in fanfuse's own fused order. p is the two-sided
paired randomization test of nDCG@10 against the single BM25 row (10,000 sign flips, seed 0).

    .venv/bin/python benches/mtrag_retrieval.py            # both domains and query sets, BM25
    .venv/bin/python benches/mtrag_retrieval.py --limit 5  # a quick smoke run
"""

from __future__ import annotations

import argparse
import json
import platform
import re
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import fanfuse
from fanfuse import MultiQueryRetriever
from fanfuse.corpus import Document, Fields, read_jsonl
from fanfuse.multiquery import CombinedExpander, Expander, FeedbackExpander, HeuristicExpander
from fanfuse.multiquery.feedback import DEFAULT_FEEDBACK_DOCS, DEFAULT_FEEDBACK_TERMS, DEFAULT_ORIGINAL_WEIGHT
from fanfuse.retrievers.base import Retriever
from fanfuse.retrievers.tantivy_index import TantivyRetriever

DEFAULT_DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "mtrag"
QUERY_SETS = ("lastturn", "rewrite")
METRICS = ("ndcg@10", "recall@10")
# The queries carry a speaker tag ("|user|: how ..."); it is markup, not part of the question.
_SPEAKER = re.compile(r"\|user\|:\s*")


@dataclass(frozen=True)
class Settings:
    feedback_docs: int
    feedback_terms: int
    original_weight: float
    original_list_weight: float
    iterations: int


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
MULTI_QUERY_DEFAULT = "heuristic+feedback"
# The fusion weight of the original query's lists (the variants' weigh 1): variant_weights=[3, 1].
# Chosen with benches/mtrag_feedback_grid.py.
ORIGINAL_LIST_WEIGHT = 3.0


def _tfidf(passages: Sequence[Document], dims: int) -> Retriever:
    from fanfuse.retrievers.dense import DenseRetriever, TfidfSvdEmbedder, document_text

    embed = TfidfSvdEmbedder(dimensions=dims).fit([document_text(p) for p in passages])
    return DenseRetriever.from_documents(passages, embed)


# Dense encoders the table can add as rows: name -> (passages, dimensions) -> retriever.
DENSE_ENCODERS: dict[str, Callable[[Sequence[Document], int], Retriever]] = {"tfidf": _tfidf}


def load_queries(path: Path) -> dict[str, str]:
    queries = {}
    with path.open(encoding="utf-8") as lines:
        for line in lines:
            record = json.loads(line)
            queries[record["_id"]] = _SPEAKER.sub("", record["text"]).strip()
    return queries


def per_query_values(
    run: dict[str, list[str]], qrels: fanfuse.Qrels, qids: list[str]
) -> dict[str, list[float]]:
    """Each metric for each of `qids` in order; a query without hits scores 0."""
    columns: tuple[list[str], list[str], list[float]] = ([], [], [])
    for qid, ids in run.items():
        for rank, doc in enumerate(ids):
            columns[0].append(qid)
            columns[1].append(doc)
            columns[2].append(float(len(ids) - rank))  # rank-derived: keeps fanfuse's order, ties included
    values = {m: [0.0] * len(qids) for m in METRICS}
    if not columns[0]:
        return values
    evaluated, scores = fanfuse.evaluate(fanfuse.Run.from_columns(*columns), qrels, metrics=list(METRICS))
    position = {qid: i for i, qid in enumerate(qids)}
    for j, qid in enumerate(evaluated):
        for metric in METRICS:
            values[metric][position[qid]] = scores[metric][j]
    return values


def answer(
    retriever: MultiQueryRetriever, queries: dict[str, str], qids: list[str], multi: bool, weight: float
) -> tuple[dict[str, list[str]], list[float]]:
    run, latencies = {}, []
    for qid in qids:
        begin = time.perf_counter()
        if multi:
            result = retriever.search(queries[qid], variant_weights=[weight, 1.0])
        else:
            result = retriever.search(queries[qid], expansion=False)
        latencies.append((time.perf_counter() - begin) * 1e3)
        run[qid] = result.ids
    return run, latencies


def run_domain(
    data: Path, domain: str, args: argparse.Namespace, settings: Settings, workdir: Path
) -> list[dict[str, Any]]:
    started = time.perf_counter()
    passages = list(read_jsonl(data / "passages" / f"{domain}_pool.jsonl.gz", Fields(id="document_id")))
    bm25 = TantivyRetriever.build(passages, workdir / domain)
    setups: list[tuple[str, dict[str, Any], list[str]]] = [("BM25", {"bm25": bm25}, list(STRATEGIES))]
    if args.dense != "none":
        dense = DENSE_ENCODERS[args.dense](passages, args.dims)
        hybrid = {"bm25": bm25, "dense": dense}
        setups += [(args.dense, {"dense": dense}, ["single"])]
        setups += [(f"BM25+{args.dense}", hybrid, ["single", MULTI_QUERY_DEFAULT])]
    print(
        f"{domain}: {len(passages)} passages indexed in {time.perf_counter() - started:.1f} s",
        file=sys.stderr,
    )
    qrels_path = data / "qrels" / domain / "dev.tsv"
    qrels = fanfuse.read_qrels(str(qrels_path))
    judged = set(qrels.qids())
    rows = []
    for query_set in args.query_sets:
        queries = load_queries(data / "queries" / domain / f"{domain}_{query_set}.jsonl")
        qids = [q for q in queries if q in judged][: args.limit]
        baseline: list[float] | None = None
        for label, retrievers, strategies in setups:
            for strategy in strategies:
                make = STRATEGIES[strategy]
                expander = make(bm25, settings) if make is not None else None
                with MultiQueryRetriever(retrievers, expander=expander, top_k=10) as retriever:
                    weight = settings.original_list_weight
                    run, latencies = answer(retriever, queries, qids, make is not None, weight)
                values = per_query_values(run, qrels, qids)
                if baseline is None:
                    baseline = values["ndcg@10"]
                p = fanfuse.randomization_test(values["ndcg@10"], baseline, iterations=settings.iterations)
                rows.append(
                    {
                        "domain": domain,
                        "queries": query_set,
                        "retrievers": label,
                        "variants": strategy,
                        "n": len(qids),
                        **{m: statistics.fmean(v) if v else 0.0 for m, v in values.items()},
                        "p": p,
                        "ms_mean": statistics.fmean(latencies),
                        "ms_p95": statistics.quantiles(latencies, n=20)[-1]
                        if len(latencies) > 1
                        else latencies[0],
                    }
                )
    return rows


def markdown(rows: list[dict[str, Any]]) -> str:
    lines = [
        "| domain | queries | retrievers | variants | n | nDCG@10 | vs single BM25 | p | Recall@10 "
        "| ms/query mean | p95 |",
        "|---|---|---|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    base: dict[tuple[str, str], float] = {}
    for r in rows:
        key = (r["domain"], r["queries"])
        base.setdefault(key, r["ndcg@10"])
        gain = r["ndcg@10"] - base[key]
        p = "" if r["retrievers"] == "BM25" and r["variants"] == "single" else f"{r['p']:.4f}"
        lines.append(
            f"| {r['domain']} | {r['queries']} | {r['retrievers']} | {r['variants']} | {r['n']} "
            f"| {r['ndcg@10']:.4f} | {gain:+.4f} | {p} | {r['recall@10']:.4f} "
            f"| {r['ms_mean']:.2f} | {r['ms_p95']:.2f} |"
        )
    return "\n".join(lines)


def machine() -> str:
    cpu = platform.processor() or platform.machine()
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.is_file():
        names = [
            ln.split(":", 1)[1].strip()
            for ln in cpuinfo.read_text().splitlines()
            if ln.startswith("model name")
        ]
        cpu = f"{len(names)} x {names[0]}" if names else cpu
    import tantivy

    return f"{cpu}; Python {platform.python_version()}; tantivy-py {tantivy.__version__}"


def data_parser(description: str | None) -> argparse.ArgumentParser:
    """The options every MT-RAG script takes: where the data is, which domains, how many queries."""
    parser = argparse.ArgumentParser(
        description=description, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--data", type=Path, default=DEFAULT_DATA, help="the MT-RAG folder (shared/data/mtrag)"
    )
    parser.add_argument("--domains", nargs="+", default=["clapnq", "cloud"])
    parser.add_argument("--limit", type=int, help="only the first N queries of each query set")
    return parser


def data_missing(data: Path) -> bool:
    if data.is_dir():
        return False
    print(f"MT-RAG data not found at {data} (pass --data)", file=sys.stderr)
    return True


def main(argv: list[str] | None = None) -> int:
    parser = data_parser(__doc__)
    parser.add_argument("--query-sets", nargs="+", choices=QUERY_SETS, default=list(QUERY_SETS))
    parser.add_argument("--dense", choices=["none", *DENSE_ENCODERS], default="none", help="add dense rows")
    parser.add_argument("--dims", type=int, default=256, help="dimensions of the TF-IDF + SVD encoder")
    parser.add_argument("--feedback-docs", type=int, default=DEFAULT_FEEDBACK_DOCS)
    parser.add_argument("--feedback-terms", type=int, default=DEFAULT_FEEDBACK_TERMS)
    parser.add_argument("--original-weight", type=float, default=DEFAULT_ORIGINAL_WEIGHT)
    parser.add_argument(
        "--original-list-weight",
        type=float,
        default=ORIGINAL_LIST_WEIGHT,
        help="fusion weight of the original query's lists in multi-query rows (variants: 1)",
    )
    parser.add_argument("--iterations", type=int, default=10_000, help="sign flips of the randomization test")
    parser.add_argument("--json", type=Path, help="also write the rows as JSON here")
    args = parser.parse_args(argv)
    if data_missing(args.data):
        return 2
    settings = Settings(
        args.feedback_docs,
        args.feedback_terms,
        args.original_weight,
        args.original_list_weight,
        args.iterations,
    )
    with tempfile.TemporaryDirectory(prefix="fanfuse-mtrag-") as workdir:
        rows = [row for d in args.domains for row in run_domain(args.data, d, args, settings, Path(workdir))]
    print(f"machine: {machine()}\n")
    print(markdown(rows))
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
