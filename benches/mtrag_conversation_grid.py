"""How the conversation defaults were chosen: the alternatives tried on MT-RAG, each scored against
the same baseline (nDCG@10, paired randomization p, 5,000 sign flips).

Every list a setting fuses is computed once per query (top 20, as a branch of the default is): BM25
(Tantivy), the neural dense retriever and its vector feedback (`DenseFeedback`) over the texts of the
product's own variants (`HistoryExpander`'s topic and joined readings, `FeedbackExpander`,
`HeuristicExpander`); each setting is then a weighted RRF (k = 60, `fanfuse.rrf`) of some of them.
The original question's lists weigh 3, the content-word and feedback variants' 1; those two go to
BM25 alone, their weight on the dense question's lists, as `fanfuse.open_index` routes them
(`DENSE_SKIPPED_SOURCES`). Three groups:

  history   given the earlier user turns, against the default of the last turn alone
  bm25      the same with BM25 alone (`fanfuse search --no-dense`)
  dense     no history; the last turn and the rewrite, against the hybrid's single query

    .venv/bin/python benches/mtrag_conversation_grid.py    # make mtrag-conversation-grid
"""

from __future__ import annotations

import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import fanfuse
from fanfuse.index_retriever import DENSE_SKIPPED_SOURCES
from fanfuse.multiquery import FeedbackExpander, HeuristicExpander, HistoryExpander
from fanfuse.multiquery.expand.words import plain_text
from fanfuse.retrievers import DenseFeedback
from fanfuse.retrievers.tantivy_index import TantivyRetriever
from measuring import run_line, versions
from mtrag_bench import (
    Conversation,
    data_missing,
    data_parser,
    judged_domain,
    per_query_values,
)

BRANCH_K = 20
ITERATIONS = 5_000
# A reading of the question: (its BM25 text, its dense text, its list weight, its `Variant.source`).
Reading = tuple[str, str, float, str]


@dataclass
class Lists:
    """Each retriever's top 20 for a text, computed once."""

    bm25: TantivyRetriever
    dense: object
    feedback: DenseFeedback

    def __post_init__(self) -> None:
        self.memo: dict[tuple[str, str], list[str]] = {}

    def of(self, retriever: str, text: str) -> list[str]:
        if (retriever, text) not in self.memo:
            source = {"bm25": self.bm25, "dense": self.dense, "prf": self.feedback}[retriever]
            query = text if retriever == "bm25" else plain_text(text)
            hits = source.search(query, BRANCH_K) if query.strip() else []  # type: ignore[attr-defined]
            self.memo[(retriever, text)] = [hit.id for hit in hits]
        return self.memo[(retriever, text)]


@dataclass(frozen=True)
class Setting:
    """Which readings are fused, and with what retrievers' weights (`prf` 0: no vector feedback)."""

    readings: Callable[[Conversation, str], list[Reading]]
    dense: float = 1.0
    prf: float = 0.25
    bm25_only: bool = False


class Readings:
    """The product's variants of a conversation's question, as texts."""

    def __init__(self, bm25: TantivyRetriever) -> None:
        self.history = HistoryExpander(bm25)
        self.feedback = FeedbackExpander(bm25)
        self.heuristic = HeuristicExpander()
        self.memo: dict[str, list[tuple[str, Reading]]] = {}

    def base(self, text: str, keep: str = "HF") -> list[Reading]:
        """The question (3), and its feedback (F) and content-word (H) variants (1 each)."""
        if text not in self.memo:
            found: list[tuple[str, Reading]] = []
            for variant in self.feedback.expand(text, max_variants=2).variants[1:]:
                found.append(("F", (variant.text, variant.plain or variant.text, 1.0, variant.source)))
            for words in self.heuristic.candidates(text)[:1]:
                found.append(("H", (words, words, 1.0, "heuristic")))
            self.memo[text] = found
        own = [reading for kind, reading in self.memo[text] if kind in keep]
        return [(text, text, 3.0, "original"), *own]

    def topic(self, c: Conversation, weight: float) -> list[Reading]:
        variant = self.history.topic_variant(c.last, c.history) if c.history else None
        return [(variant.text, variant.plain or variant.text, weight, variant.source)] if variant else []

    def joined(self, c: Conversation, weight: float, turns: int = 1) -> list[Reading]:
        if not c.history:
            return []
        text = " ".join([*c.history[-turns:], c.last])
        return [(text, text, weight, "history")]

    def history_feedback(self, c: Conversation) -> list[Reading]:
        """RM3 feedback of a first pass on the previous turn and the question together."""
        if not c.history:
            return []
        variants = self.feedback.expand(f"{c.history[-1]} {c.last}", max_variants=2).variants[1:]
        return [(v.text, v.plain or v.text, 1.0, v.source) for v in variants]


Readings_ = Callable[[Conversation, str], list[Reading]]


def settings(r: Readings) -> dict[str, dict[str, Setting]]:
    """The settings of each group, its baseline first."""

    def last_alone(c: Conversation, text: str) -> list[Reading]:
        return r.base(text)

    def hist(keep: str, *parts: Callable[[Conversation], list[Reading]]) -> Readings_:
        """The question's own variants (`keep` of them, given history), then the history readings."""
        return lambda c, text: [*r.base(text, keep if c.history else "HF"), *(x for p in parts for x in p(c))]

    chosen = hist("F", lambda c: r.topic(c, 1.5), lambda c: r.joined(c, 1.5))
    history = {
        "the last turn alone (the default)": Setting(last_alone),
        "+ topic and joined, 1.5 each, content words left out (chosen)": Setting(chosen),
        "+ topic and joined, 1.5 each, feedback left out": Setting(
            hist("H", lambda c: r.topic(c, 1.5), lambda c: r.joined(c, 1.5))
        ),
        "+ topic and joined, 1.5 each, both kept (5 variants)": Setting(
            hist("HF", lambda c: r.topic(c, 1.5), lambda c: r.joined(c, 1.5))
        ),
        "+ topic and joined, 1 each, content words left out": Setting(
            hist("F", lambda c: r.topic(c, 1.0), lambda c: r.joined(c, 1.0))
        ),
        "+ topic alone, 3": Setting(hist("HF", lambda c: r.topic(c, 3.0))),
        "+ joined alone, 1": Setting(hist("HF", lambda c: r.joined(c, 1.0))),
        "+ joined alone, 3": Setting(hist("HF", lambda c: r.joined(c, 3.0))),
        "+ every earlier turn joined, 3": Setting(hist("HF", lambda c: r.joined(c, 3.0, turns=99))),
        "+ joined 3, RM3 feedback of the joined first pass instead of the question's": Setting(
            hist("H", lambda c: r.joined(c, 3.0), r.history_feedback)
        ),
    }
    without_prf = {
        "the last turn alone, no vector feedback": Setting(last_alone, prf=0.0),
        "+ topic and joined, 1.5 each, content words left out": Setting(chosen, prf=0.0),
    }
    bm25 = {name: Setting(s.readings, bm25_only=True) for name, s in list(history.items())[:5]}
    bm25["+ topic alone, 1.5"] = Setting(hist("HF", lambda c: r.topic(c, 1.5)), bm25_only=True)
    bm25["+ topic alone, 0.75"] = Setting(hist("HF", lambda c: r.topic(c, 0.75)), bm25_only=True)

    def question(c: Conversation, text: str) -> list[Reading]:
        return [(text, text, 1.0, "original")]

    dense = {
        "hybrid, the question alone": Setting(question, prf=0.0),
        "question, feedback, content words, no vector feedback": Setting(last_alone, prf=0.0),
        "+ vector feedback 0.25 (the default)": Setting(last_alone),
        "+ vector feedback 0.5": Setting(last_alone, prf=0.5),
        "+ vector feedback 1": Setting(last_alone, prf=1.0),
        "question and content words, vector feedback 0.5 (RM3 left out)": Setting(
            lambda c, text: r.base(text, "H"), prf=0.5
        ),
        "question, vector feedback 0.5": Setting(lambda c, text: r.base(text, ""), prf=0.5),
        "control: hybrid, dense lists x1.5": Setting(question, dense=1.5, prf=0.0),
        "control: hybrid, dense lists x2": Setting(question, dense=2.0, prf=0.0),
    }
    return {"history": history, "history, no vector feedback": without_prf, "bm25": bm25, "dense": dense}


def fused(
    lists: Lists, readings: list[Reading], s: Setting, extra: tuple[list[str], float] | None = None
) -> list[str]:
    """The default's weighted RRF of the readings' lists, routed as `fanfuse.open_index` routes them:
    BM25 searches every reading, the dense side the question and the readings whose source it does
    not skip (`DENSE_SKIPPED_SOURCES`); a skipped reading's weight goes to the dense question's list.
    `extra`: one more list and its weight, fused with them."""
    skipped = sum(weight for _, _, weight, source in readings[1:] if source in DENSE_SKIPPED_SOURCES)
    runs, weights = [], []
    for i, (bm25_text, dense_text, weight, source) in enumerate(readings):
        runs.append(lists.of("bm25", bm25_text))
        weights.append(weight)
        if s.bm25_only or (i > 0 and source in DENSE_SKIPPED_SOURCES):
            continue
        for retriever, factor in (("dense", s.dense), ("prf", s.prf)):
            if factor:
                runs.append(lists.of(retriever, dense_text))
                weights.append((weight + (skipped if i == 0 else 0.0)) * factor)
    if extra is not None:
        runs.append(extra[0])
        weights.append(extra[1])
    return list(fanfuse.rrf(runs, weights=weights, top_k=10).ids)


def run_domain(data: Path, domain: str, index_dir: Path, limit: int | None) -> None:
    judged = judged_domain(data, domain, index_dir, limit)
    bm25, dense, qrels, conversations = judged.bm25, judged.dense, judged.qrels, judged.conversations
    assert dense is not None
    lists = Lists(bm25, dense, DenseFeedback(dense))
    qids = list(conversations)
    readings = Readings(bm25)

    def scores(s: Setting, given: str) -> list[float]:
        run = {}
        for q in qids:
            c = conversations[q]
            text = c.rewrite if given == "rewrite" else c.last
            if given == "last turn":
                c = Conversation((), c.last, c.rewrite)
            run[q] = fused(lists, s.readings(c, text), s)
        return per_query_values(run, qrels, qids)["ndcg@10"]

    print(f"\n{domain} ({len(qids)} questions)\n")
    print("| group | given | setting | nDCG@10 | vs the group's first | p |\n|---|---|---|---:|---:|---:|")
    for group, named in settings(readings).items():
        for given in ("rewrite", "last turn") if group == "dense" else ("+ history",):
            baseline: list[float] | None = None
            for name, setting in named.items():
                values = scores(setting, given)
                mean = statistics.fmean(values)
                if baseline is None:
                    baseline, delta, p = values, "", ""
                else:
                    delta = f"{mean - statistics.fmean(baseline):+.4f}"
                    p = f"{fanfuse.randomization_test(values, baseline, iterations=ITERATIONS):.4f}"
                shown = "last turn" if name.startswith("the last turn") else given
                print(f"| {group} | {shown} | {name} | {mean:.4f} | {delta} | {p} |")


def main(argv: list[str] | None = None) -> int:
    parser = data_parser(__doc__, index_dir=True)
    args = parser.parse_args(argv)
    if data_missing(args.data):
        return 2
    started = time.perf_counter()
    for domain in args.domains:
        run_domain(args.data, domain, args.index_dir, args.limit)
    print("\n" + run_line(started, *versions("tantivy")))
    return 0


if __name__ == "__main__":
    sys.exit(main())
