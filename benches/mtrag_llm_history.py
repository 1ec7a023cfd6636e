"""The conversation with a model on real MT-RAG data: `condense` (a standalone rewrite of the last
turn from the earlier ones) by a chat model, against the last turn alone and the human rewrite.

For each query of `<domain>_questions.jsonl` the last line is the question and the lines before it
are the history (the user turns of the conversation, oldest first); `lastturn` and `rewrite` are the
same query's last turn alone and its human standalone rewrite (the ceiling). Rows, on BM25 and on the
hybrid (BM25 + the MiniLM dense side as plain text), searched with `MultiQueryRetriever`:

  last turn alone     the question, no variants (the single query)
  condense (MODEL)    the question + the model's standalone rewrites, given the history (the
                      original's lists weighing 3, the rewrites' 1, as the default weighs variants)
  human rewrite       the rewrite alone, no variants (the ceiling)

nDCG@10 and Recall@10 are fanfuse's evaluator over every judged query; p is the two-sided paired
randomization test of nDCG@10 (10,000 sign flips, seed 0) against the last turn alone on the same
retrievers; latency is per query (one warm-up first). The condensed rewrites are asked once per query
and shared by the BM25 and hybrid rows (a VariantCache): the BM25 row's latency includes the model,
the hybrid row's does not (its expansion comes from the cache), and the model's own time per query is
printed apart.

The model is any OpenAI-compatible server; for SmolLM2-135M (`make llm-model`):

    .venv/bin/python -m llama_cpp.server --model MODEL.gguf --model_alias smollm2 --host 127.0.0.1 --port 8431
    .venv/bin/python benches/mtrag_llm_history.py --llm-base-url http://127.0.0.1:8431/v1 --model smollm2
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import fanfuse
from fanfuse import MultiQueryRetriever
from fanfuse.index_retriever import DEFAULT_VARIANT_WEIGHTS
from fanfuse.multiquery import LLMExpander, VariantCache
from fanfuse.multiquery.plain_text import PlainTextQueries
from measuring import markdown_table, p95
from mtrag_bench import data_parser, load_queries, per_query_values, report_domains
from mtrag_indexes import neural_dense, pool_index

# Each user turn of a `questions` record starts a line with this tag.
_TURN = re.compile(r"(?:^|\n)\|user\|:\s*")


def conversations(data: Path, domain: str) -> dict[str, tuple[list[str], str]]:
    """Query id -> (the earlier user turns, the last turn), from the `questions` file."""
    out = {}
    path = data / "queries" / domain / f"{domain}_questions.jsonl"
    with path.open(encoding="utf-8") as lines:
        for line in lines:
            record = json.loads(line)
            turns = [t.strip() for t in _TURN.split(record["text"]) if t.strip()]
            out[record["_id"]] = (turns[:-1], turns[-1])
    return out


def searched(
    retriever: MultiQueryRetriever,
    qids: list[str],
    query_of: dict[str, str],
    history_of: dict[str, list[str]],
) -> tuple[dict[str, list[str]], list[float], int]:
    """The run, the latency of each query, and how many expansions fell back."""
    retriever.search(query_of[qids[0]], history=history_of.get(qids[0]) or None)  # warm-up
    run, latencies, fallbacks = {}, [], 0
    for qid in qids:
        begin = time.perf_counter()
        result = retriever.search(query_of[qid], history=history_of.get(qid) or None)
        latencies.append((time.perf_counter() - begin) * 1e3)
        run[qid] = result.ids
        fallbacks += result.diagnostics.expansion.fallback_reason is not None
    return run, latencies, fallbacks


def run_domain(data: Path, domain: str, args: argparse.Namespace) -> list[dict[str, Any]]:
    bm25 = pool_index(data, domain, args.index_dir)
    dense = PlainTextQueries(neural_dense(bm25)[0])
    qrels = fanfuse.read_qrels(str(data / "qrels" / domain / "dev.tsv"))
    judged = set(qrels.qids())
    talks = conversations(data, domain)
    qids = [q for q in talks if q in judged][: args.limit]
    last = {q: talks[q][1] for q in qids}
    history = {q: talks[q][0] for q in qids}
    rewrite = load_queries(data / "queries" / domain / f"{domain}_rewrite.jsonl")
    llm = LLMExpander(
        args.llm_base_url,
        model=args.model,
        strategy=args.strategy,
        temperature=0.0,
        max_tokens=args.max_tokens,
        timeout=args.timeout,
    )
    cache = VariantCache(maxsize=100_000)
    rows: list[dict[str, Any]] = []
    for retrievers, searchers in (("BM25", {"bm25": bm25}), ("BM25+minilm", {"bm25": bm25, "dense": dense})):
        scored: dict[str, list[float]] = {}
        cases = [
            ("last turn alone", MultiQueryRetriever(searchers, expansion=False, top_k=10), last, {}),
            (
                f"{args.strategy} ({args.model})",
                MultiQueryRetriever(
                    searchers,
                    expander=llm,
                    top_k=10,
                    max_variants=args.max_variants,
                    variant_weights=list(DEFAULT_VARIANT_WEIGHTS),
                    cache=cache,
                ),
                last,
                history,
            ),
            ("human rewrite", MultiQueryRetriever(searchers, expansion=False, top_k=10), rewrite, {}),
        ]
        for name, retriever, query_of, history_of in cases:
            with retriever:
                run, latencies, fallbacks = searched(retriever, qids, query_of, history_of)
            values = per_query_values(run, qrels, qids)
            scored[name] = values["ndcg@10"]
            rows.append(
                {
                    "domain": domain,
                    "retrievers": retrievers,
                    "variants": name,
                    "n": len(qids),
                    **{m: statistics.fmean(v) for m, v in values.items()},
                    "p": fanfuse.randomization_test(
                        values["ndcg@10"], scored["last turn alone"], iterations=args.iterations
                    ),
                    "ms_mean": statistics.fmean(latencies),
                    "ms_p95": p95(latencies),
                    "fallbacks": fallbacks,
                }
            )
    return rows


def markdown(rows: list[dict[str, Any]]) -> str:
    columns = (
        "domain | retrievers | variants | n | nDCG@10=ndcg@10:.4f | p vs last turn=p:.4f "
        "| Recall@10=recall@10:.4f | ms/query mean=ms_mean:.1f | p95=ms_p95:.1f | fallbacks"
    )
    # The last turn alone is what the others are tested against.
    shown = ({**r, "p": None if r["variants"] == "last turn alone" else r["p"]} for r in rows)
    return markdown_table(columns, "lllrrrrrrr", shown)


def main(argv: list[str] | None = None) -> int:
    parser = data_parser(__doc__, index_dir=True, iterations=True, json_rows=True)
    parser.add_argument("--llm-base-url", required=True, metavar="URL")
    parser.add_argument("--model", required=True)
    parser.add_argument("--strategy", default="condense")
    parser.add_argument("--max-variants", type=int, default=2, help="the question and N-1 model variants")
    parser.add_argument("--max-tokens", type=int, default=64)
    parser.add_argument("--timeout", type=float, default=60.0)
    return report_domains(
        parser, argv, lambda args: lambda domain: run_domain(args.data, domain, args), markdown
    )


if __name__ == "__main__":
    sys.exit(main())
