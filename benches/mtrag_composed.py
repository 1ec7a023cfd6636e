"""Composed history vectors on the dense side, measured against the default (`fanfuse.open_index`) on
real MT-RAG data: nDCG@10 given the history, paired p, and what a search with history costs.

The default embeds the question and both readings of the conversation (`history-topic`, `history`)
in one encoder call. Here the dense side embeds no history text: a history variant's vector is
composed, normalize(q + a * normalize(mean of the earlier user turns' vectors)), q the question's unit
vector. BM25 keeps its text variants unchanged. Four routings of the composed vector:

  both         both history variants' dense lists are searched with the composed vector
  joined       the joined reading's dense list is; the topic words go to BM25 alone
  keep-joined  the topic reading's is; the joined text is embedded as in the default
  keep-topic   the joined reading's is; the topic text is embedded as in the default

An earlier user turn was the question of an earlier request, so a chat service has its vector in
the query-vector cache. The cost is measured both ways, with the cache off (`FANFUSE_QUERY_CACHE_SIZE=0`):
"turns embedded" puts the question and every earlier user turn in the search's one encoder call;
"turns cached" embeds the question alone and takes the turns' vectors from a table filled before
the timed searches. The searches are interleaved with the default's, question by question.

    .venv/bin/python benches/mtrag_composed.py --domains clapnq cloud
    .venv/bin/python benches/mtrag_composed.py --limit 20 --cost-only   # a quick cost run
"""

from __future__ import annotations

import copy
import statistics
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import fanfuse
import numpy as np
import numpy.typing as npt
from fanfuse import MultiQueryRetriever
from fanfuse.index_retriever import DENSE_SKIPPED_SOURCES, default_retrievers, open_index
from fanfuse.multiquery.expand.history import TOPIC_SOURCE
from fanfuse.multiquery.plain_text import PlainTextQueries
from fanfuse.retrievers.dense_feedback import DenseFeedback
from fanfuse.retrievers.tantivy_index import TantivyRetriever
from measuring import markdown_table
from mtrag_bench import (
    Conversation,
    data_missing,
    data_parser,
    default_search_over,
    interleaved_seconds,
    judged_domain,
    per_query_values,
    query_cache_off,
    report,
)

ALPHAS = (0.5, 1.0)
ROUTINGS = ("both", "joined", "keep-joined", "keep-topic")


def unit(v: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
    return v / max(float(np.linalg.norm(v)), 1e-12)


class ComposedQueries:
    """Stands in for a `DenseRetriever`'s query vectors: the question's text is embedded, every other
    text of the search (a history reading) gets the composed vector. The conversation is set before
    each search (`ask`); the bench searches one question at a time."""

    def __init__(self, inner: Any, alpha: float, routing: str) -> None:
        self.inner = inner
        self.alpha = alpha
        self.routing = routing
        self.embedded_as_text = 0  # the history texts embedded as they are (a check on `kept`)
        self.question = ""
        self.turns: tuple[str, ...] = ()
        self.cached: dict[str, npt.NDArray[np.float32]] | None = None

    def ask(self, question: str, turns: Sequence[str]) -> None:
        self.question, self.turns = question, tuple(turns)

    def kept(self, text: str) -> bool:
        """Whether this history text is embedded as it is (the routing keeps one reading's text)."""
        joined = bool(self.turns) and text == f"{self.turns[-1]} {self.question}"
        return (self.routing == "keep-joined" and joined) or (self.routing == "keep-topic" and not joined)

    def __call__(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        if all(t == self.question for t in texts) or not self.turns:
            return np.asarray(self.inner(texts), dtype=np.float32)
        own = [self.question, *(t for t in texts if t != self.question and self.kept(t))]
        self.embedded_as_text += len(own) - 1
        if self.cached is not None:
            rows = self.inner(own)
            turn_rows = np.stack([self.cached[t] for t in self.turns])
        else:  # one encoder call: the question, the texts kept, the earlier turns
            every = self.inner([*own, *self.turns])
            rows, turn_rows = every[: len(own)], every[len(own) :]
        vectors = {text: unit(row) for text, row in zip(own, rows, strict=True)}
        topic = unit(np.mean([unit(r) for r in turn_rows], axis=0))
        composed = unit(vectors[self.question] + self.alpha * topic)
        return np.stack([vectors.get(t, composed) for t in texts]).astype(np.float32)


def composed_retriever(bm25: TantivyRetriever, alpha: float, routing: str) -> tuple[MultiQueryRetriever, Any]:
    base = default_retrievers(bm25)
    dense = copy.copy(base["dense"].retriever)
    queries = ComposedQueries(dense._queries, alpha, routing)
    dense._queries = queries
    skipped = DENSE_SKIPPED_SOURCES + ((TOPIC_SOURCE,) if routing == "joined" else ())
    retrievers = {
        "bm25": bm25,
        "dense": PlainTextQueries(dense, skipped_sources=skipped),
        "dense-feedback": PlainTextQueries(DenseFeedback(dense), skipped_sources=skipped),
    }
    return default_search_over(bm25, retrievers), queries


def search(retriever: MultiQueryRetriever, queries: Any, c: Conversation) -> list[str]:
    if queries is not None:
        queries.ask(c.last, c.history)
    return retriever.search(c.last, history=list(c.history) or None).ids


def quality(
    data: Path, domain: str, limit: int | None, iterations: int, index_dir: Path
) -> list[dict[str, Any]]:
    judged = judged_domain(data, domain, index_dir, limit)
    bm25, qrels, conversations = judged.bm25, judged.qrels, judged.conversations
    qids = list(conversations)
    with open_index(bm25, top_k=10) as default:
        run = {q: search(default, None, conversations[q]) for q in qids}
    base = per_query_values(run, qrels, qids)["ndcg@10"]
    rows = []
    for routing in ROUTINGS:
        for alpha in ALPHAS:
            retriever, queries = composed_retriever(bm25, alpha, routing)
            with retriever:
                run = {q: search(retriever, queries, conversations[q]) for q in qids}
            values = per_query_values(run, qrels, qids)["ndcg@10"]
            # Every question with earlier turns has a joined reading (not always topic words).
            if routing == "keep-joined" and not queries.embedded_as_text:
                raise RuntimeError(f"{routing}: no joined text was embedded as it is")
            rows.append(
                {
                    "domain": domain,
                    "n": len(qids),
                    "routing": routing,
                    "a": alpha,
                    "default": statistics.fmean(base),
                    "composed": statistics.fmean(values),
                    "delta": statistics.fmean(values) - statistics.fmean(base),
                    "p": fanfuse.randomization_test(values, base, iterations=iterations),
                }
            )
            print(rows[-1], file=sys.stderr, flush=True)
    return rows


def cost(
    data: Path, domain: str, limit: int | None, index_dir: Path, alpha: float, routing: str
) -> dict[str, Any]:
    judged = judged_domain(data, domain, index_dir)
    bm25 = judged.bm25
    conversations = [c for c in judged.conversations.values() if c.history][:limit]
    with query_cache_off():
        default = open_index(bm25, top_k=10)
        composed, queries = composed_retriever(bm25, alpha, routing)
        cached, cached_queries = composed_retriever(bm25, alpha, routing)
        turns = sorted({t for c in conversations for t in c.history})
        cached_queries.cached = {t: row for t, row in zip(turns, cached_queries.inner(turns), strict=True)}
        with default, composed, cached:
            searches = {
                "alone": lambda c: default.search(c.last),
                "default": lambda c: search(default, None, c),
                "turns embedded": lambda c: search(composed, queries, c),
                "turns cached": lambda c: search(cached, cached_queries, c),
            }
            seconds = interleaved_seconds(searches, conversations)
    total = {n: sum(s) for n, s in seconds.items()}
    return {
        "domain": domain,
        "n": len(conversations),
        "a": alpha,
        "routing": routing,
        **{f"{n} ms": 1e3 * statistics.fmean(s) for n, s in seconds.items()},
        **{f"{n} / alone": total[n] / total["alone"] for n in list(seconds)[1:]},
    }


def main(argv: list[str] | None = None) -> int:
    parser = data_parser(__doc__, index_dir=True, iterations=True)
    parser.add_argument("--cost-only", action="store_true", help="measure the cost alone")
    parser.add_argument("--quality-only", action="store_true", help="measure nDCG@10 alone")
    parser.add_argument("--alpha", type=float, default=0.5, help="the composed vector's a for the cost run")
    parser.add_argument("--routing", choices=ROUTINGS, default="both", help="the routing for the cost run")
    args = parser.parse_args(argv)
    if data_missing(args.data):
        return 2
    started = time.perf_counter()
    lines = []
    rows: list[dict[str, Any]] = []
    if not args.cost_only:
        q = [
            r
            for d in args.domains
            for r in quality(args.data, d, args.limit, args.iterations, args.index_dir)
        ]
        rows += q
        columns = (
            "domain | n | routing | a:g | nDCG@10 default=default:.4f | composed:.4f | delta:+.4f | p:.3f"
        )
        lines.append(markdown_table(columns, "lrlrrrrr", q))
    if not args.quality_only:
        c = [cost(args.data, d, args.limit, args.index_dir, args.alpha, args.routing) for d in args.domains]
        rows += c
        names = ("alone", "default", "turns embedded", "turns cached")
        columns = " | ".join(
            [
                "domain | questions with history=n",
                *(f"ms {n}={n} ms:.1f" for n in names),
                *(f"{n} / alone:.2f" for n in names[1:]),
            ]
        )
        lines.append("\n" + markdown_table(columns, "lrrrrrrrr", c))
    report(rows, "\n".join(lines), started, None)
    return 0


if __name__ == "__main__":
    sys.exit(main())
