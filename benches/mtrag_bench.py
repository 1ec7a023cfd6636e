"""What the MT-RAG benches share: their command line (where the data is, which domains, how many
questions, where the indexes are kept), a domain's judged conversations over its indexed passage
pool, each question asked in one of the three ways, searches timed side by side, the default's
settings over other retrievers, its routing and its query-vector cache, a held-out comparison's
cells, and the report of a run. What every bench uses to measure and report is measuring.py's."""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import statistics
import sys
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import fanfuse
from fanfuse import MultiQueryRetriever, index_retriever
from fanfuse.index_retriever import (
    DEFAULT_RETRIEVER_WEIGHTS,
    DEFAULT_VARIANT_WEIGHTS,
    DENSE_SKIPPED_SOURCES,
    default_expander,
)
from fanfuse.retrievers.base import Retriever
from fanfuse.retrievers.dense import DenseRetriever
from fanfuse.retrievers.tantivy_index import TantivyRetriever
from measuring import run_line, versions
from mtrag_indexes import CACHE_DIR, neural_dense, pool_index

DEFAULT_DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "mtrag"
# The queries carry a speaker tag ("|user|: how ..."); it is markup, not part of the question.
SPEAKER = re.compile(r"\|user\|:\s*")
# The three ways a conversation's question is asked: its last turn alone, the last turn with the
# turns before it, and the benchmark's human rewrite (a standalone question: the ceiling).
LAST, HISTORY, REWRITE = "last turn", "+ history", "rewrite"
# The query sets of the single-question benches: the last turn as typed, the benchmark's rewrite.
QUERY_SETS = ("lastturn", "rewrite")
METRICS = ("ndcg@10", "recall@10")
# What every bench searches before it measures: no question of the data, so that none is cached.
WARM_UP_QUESTION = "a warm up question about nothing in particular"


@dataclass(frozen=True)
class Conversation:
    history: tuple[str, ...]
    last: str
    rewrite: str


@dataclass(frozen=True)
class JudgedDomain:
    """A domain's indexed pool (and its stored vectors, when asked for), its qrels, and its judged
    conversations by query id."""

    bm25: TantivyRetriever
    dense: DenseRetriever | None
    qrels: fanfuse.Qrels
    conversations: dict[str, Conversation]


def read_conversations(data: Path, domain: str, judged: set[str]) -> dict[str, Conversation]:
    def lines(name: str) -> dict[str, str]:
        path = data / "queries" / domain / f"{domain}_{name}.jsonl"
        with path.open(encoding="utf-8") as rows:
            return {r["_id"]: r["text"] for r in map(json.loads, rows)}

    questions, rewrites = lines("questions"), lines("rewrite")
    out = {}
    for qid, text in questions.items():
        if qid not in judged:
            continue
        turns = [SPEAKER.sub("", t).strip() for t in text.split("\n") if t.strip()]
        out[qid] = Conversation(tuple(turns[:-1]), turns[-1], SPEAKER.sub("", rewrites[qid]).strip())
    return out


def load_queries(path: Path) -> dict[str, str]:
    queries = {}
    with path.open(encoding="utf-8") as lines:
        for line in lines:
            record = json.loads(line)
            queries[record["_id"]] = SPEAKER.sub("", record["text"]).strip()
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


def judged_domain(
    data: Path, domain: str, index_dir: Path = CACHE_DIR, limit: int | None = None, *, dense: bool = True
) -> JudgedDomain:
    """The domain's pool indexed (from the cache), its vectors embedded and stored once unless not
    `dense`, and its first `limit` judged conversations."""
    bm25 = pool_index(data, domain, index_dir)
    vectors = neural_dense(bm25)[0] if dense else None
    qrels = fanfuse.read_qrels(str(data / "qrels" / domain / "dev.tsv"))
    conversations = read_conversations(data, domain, set(qrels.qids()))
    kept = {q: conversations[q] for q in list(conversations)[:limit]}
    return JudgedDomain(bm25, vectors, qrels, kept)


def ask(retriever: MultiQueryRetriever, conversation: Conversation, given: str) -> list[str]:
    """The ids `retriever` answers for the conversation's question asked as `given` says."""
    if given == REWRITE:
        return retriever.search(conversation.rewrite).ids
    history = list(conversation.history) if given == HISTORY else None
    return retriever.search(conversation.last, history=history).ids


def answer(
    retriever: MultiQueryRetriever,
    conversations: Mapping[str, Conversation],
    given: str,
    clock: Callable[[], float] = time.perf_counter,
) -> tuple[dict[str, list[str]], list[float]]:
    """Every conversation asked as `given`, one after another: the run, and the milliseconds each
    question took on `clock` (`time.process_time` for the CPU time of every thread)."""
    retriever.search(WARM_UP_QUESTION)  # sessions, threads
    run, milliseconds = {}, []
    for qid, conversation in conversations.items():
        begin = clock()
        run[qid] = ask(retriever, conversation, given)
        milliseconds.append((clock() - begin) * 1e3)
    return run, milliseconds


def interleaved_seconds(
    searches: Mapping[str, Callable[[Conversation], object]],
    conversations: Sequence[Conversation],
    warm_up: int = 5,
) -> dict[str, list[float]]:
    """Each of `searches` timed on each conversation, interleaved question by question, their order
    alternating (so that each sees the same load), after each has searched the first `warm_up`
    (sessions, threads): the seconds of each search, by name."""
    for c in conversations[:warm_up]:
        for search in searches.values():
            search(c)
    seconds: dict[str, list[float]] = {name: [] for name in searches}
    names = list(searches)
    for i, c in enumerate(conversations):
        for name in names if i % 2 else names[::-1]:
            begin = time.perf_counter()
            searches[name](c)
            seconds[name].append(time.perf_counter() - begin)
    return seconds


def default_search_over(bm25: TantivyRetriever, retrievers: Mapping[str, Retriever]) -> MultiQueryRetriever:
    """The default's search (`fanfuse.open_index`: its expander, variant and retriever weights) over
    other retrievers, top 10: a variant of the default a bench measures against it."""
    return MultiQueryRetriever(
        dict(retrievers),
        expander=default_expander(bm25),
        variant_weights=list(DEFAULT_VARIANT_WEIGHTS),
        retriever_weights={n: w for n, w in DEFAULT_RETRIEVER_WEIGHTS.items() if n in retrievers},
        top_k=10,
    )


def add_routing_flag(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--dense-skipped",
        type=lambda text: tuple(s for s in text.split(",") if s),
        help="comma-separated variant sources the default's dense side leaves to BM25 "
        f"(default: {','.join(DENSE_SKIPPED_SOURCES)}, the library's)",
    )


@contextlib.contextmanager
def route(skipped: tuple[str, ...] | None) -> Iterator[None]:
    """The default built inside leaves `skipped` to BM25 (None: the library's routing)."""
    before = index_retriever.DENSE_SKIPPED_SOURCES
    if skipped is not None:
        index_retriever.DENSE_SKIPPED_SOURCES = skipped
    try:
        yield
    finally:
        index_retriever.DENSE_SKIPPED_SOURCES = before


@contextlib.contextmanager
def query_cache_off() -> Iterator[None]:
    """The query-vector cache off for the retrievers made inside; the environment as it was after."""
    name, before = "FANFUSE_QUERY_CACHE_SIZE", os.environ.get("FANFUSE_QUERY_CACHE_SIZE")
    os.environ[name] = "0"
    try:
        yield
    finally:
        if before is None:
            del os.environ[name]
        else:
            os.environ[name] = before


def compared_cells(base: Sequence[float], new: Sequence[float], iterations: int = 10_000) -> str:
    """`mean of base | mean of new | Δ | p` of per-query scores, p the two-sided paired
    randomization test."""
    mean = statistics.fmean
    p = fanfuse.randomization_test(list(new), list(base), iterations=iterations)
    return f"{mean(base):.4f} | {mean(new):.4f} | {mean(new) - mean(base):+.4f} | {p:.4f}"


def data_parser(
    description: str | None, *, index_dir: bool = False, iterations: bool = False, json_rows: bool = False
) -> argparse.ArgumentParser:
    """The options every MT-RAG script takes: where the data is, which domains, how many queries;
    and, as asked, where the indexes are kept, the randomization test's sign flips, a JSON copy."""
    parser = argparse.ArgumentParser(
        description=description, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--data", type=Path, default=DEFAULT_DATA, help="the MT-RAG folder (shared/data/mtrag)"
    )
    parser.add_argument("--domains", nargs="+", default=["clapnq", "cloud"])
    parser.add_argument("--limit", type=int, help="only the first N queries of each query set")
    if index_dir:
        parser.add_argument(
            "--index-dir", type=Path, default=CACHE_DIR, help="where the indexes and vectors are kept"
        )
    if iterations:
        parser.add_argument(
            "--iterations", type=int, default=10_000, help="sign flips of the randomization test"
        )
    if json_rows:
        parser.add_argument("--json", type=Path, help="also write the rows as JSON here")
    return parser


def parse_leave_one_out(parser: argparse.ArgumentParser, argv: list[str] | None) -> argparse.Namespace | None:
    """The arguments of a bench that scores on one domain what it chose on the other (so: exactly two
    domains); None, said on stderr, where the data is missing."""
    args = parser.parse_args(argv)
    if data_missing(args.data):
        return None
    if len(args.domains) != 2:
        parser.error("--domains: leaving one domain out needs exactly two")
    return args


def data_missing(data: Path) -> bool:
    if data.is_dir():
        return False
    print(f"MT-RAG data not found at {data} (pass --data)", file=sys.stderr)
    return True


def report_domains(
    parser: argparse.ArgumentParser,
    argv: list[str] | None,
    rows_for: Callable[[argparse.Namespace], Callable[[str], list[dict[str, Any]]]],
    markdown: Callable[[list[dict[str, Any]]], str],
) -> int:
    """A bench measured domain by domain: its arguments parsed, then the rows of each of
    `--domains` (`rows_for(args)(domain)`) measured in turn and reported; the exit status (2 where
    the data is missing)."""
    args = parser.parse_args(argv)
    if data_missing(args.data):
        return 2
    rows_of = rows_for(args)
    started = time.perf_counter()
    rows = [row for domain in args.domains for row in rows_of(domain)]
    report(rows, markdown(rows), started, args.json)
    return 0


def report(rows: list[dict[str, Any]], table: str, started: float, json_path: Path | None) -> None:
    """The machine, the load while the rows were measured, the table; the rows as JSON if asked."""
    print(run_line(started, *versions("tantivy")) + "\n")
    print(table)
    if json_path:
        json_path.write_text(json.dumps(rows, indent=2) + "\n", encoding="utf-8")
