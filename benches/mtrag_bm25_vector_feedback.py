"""Vector feedback from BM25's first pass: does moving the question's vector toward the stored vectors
of BM25's top documents (the ones RM3 feedback reads) win back, on the dense side, what the RM3
variant gave it before the word-level variants went to BM25 alone?

    q' = q + beta * mean(d_1 .. d_m),   d_i: the stored vectors of BM25's top m for the question

q' ranks every stored vector (no encoder call beyond the question's); its top 20 is fused with the
default's lists (as `mtrag_conversation_heldout.py` fuses them, routed as `open_index` routes) at
weight w. Every (beta, m, w) is scored on both domains, given the last turn alone and given the
history; the one best on one domain's last turns is scored on the other's ("held out"). p: paired
randomization test of nDCG@10 (10,000 sign flips) against the default without it.

    .venv/bin/python benches/mtrag_bm25_vector_feedback.py
"""

from __future__ import annotations

import itertools
import statistics
import sys
from collections.abc import Callable

import numpy as np
from fanfuse.multiquery import HistoryExpander
from fanfuse.multiquery.conversation import check_history
from fanfuse.retrievers.dense import unit_rows
from mtrag_bench import Conversation, compared_cells, per_query_values
from mtrag_conversation_grid import Reading, Setting, fused
from mtrag_conversation_heldout import BUDGET, Domain, held_out_main

BETAS = (0.25, 0.5, 1.0)
DOCS = (3, 5, 10)
WEIGHTS = (1.0, 2.0, 3.0)
BRANCH_K = 20
Key = tuple[float, int, float]


class MovedQuestion:
    """The question's vector moved toward BM25's top documents' stored vectors: its top 20."""

    def __init__(self, d: Domain) -> None:
        self.d = d
        self.dense = d.lists.dense
        self.rows = {doc_id: row for row, doc_id in enumerate(self.dense.ids)}  # type: ignore[attr-defined]
        self.memo: dict[tuple[str, float, int], list[str]] = {}

    def top(self, question: str, beta: float, docs: int) -> list[str]:
        key = (question, beta, docs)
        if key not in self.memo:
            vectors = self.dense.vectors  # type: ignore[attr-defined]
            q = unit_rows(self.dense._queries([question]))[0]  # type: ignore[attr-defined]
            first = [self.rows[hit.id] for hit in self.d.bm25.search(question, docs) if hit.id in self.rows]
            moved = q + beta * vectors[first].mean(axis=0) if first else q
            scores = vectors @ moved
            best = np.argsort(-scores, kind="stable")[:BRANCH_K]
            self.memo[key] = [self.dense.ids[i] for i in best]  # type: ignore[attr-defined]
        return self.memo[key]


def readings_of(d: Domain, given: str) -> Callable[[Conversation], list[Reading]]:
    expander = HistoryExpander(d.bm25)

    def readings(c: Conversation) -> list[Reading]:
        if given == "last turn":
            return d.readings.base(c.last)
        written = expander.expand(c.last, max_variants=BUDGET, history=check_history(list(c.history)))
        history = list(written.variants[1:])
        own = d.readings.base(c.last)[: BUDGET - len(history)]
        return [*own, *((v.text, v.plain or v.text, 3.0 * (v.weight or 0.0), v.source) for v in history)]

    return readings


def scores(d: Domain, moved: MovedQuestion, given: str, key: Key | None) -> list[float]:
    readings = readings_of(d, given)
    setting = Setting(lambda c, text: [])
    run = {}
    for q, c in d.conversations.items():
        extra = None if key is None else (moved.top(c.last, key[0], key[1]), key[2])
        run[q] = fused(d.lists, readings(c), setting, extra)
    return per_query_values(run, d.qrels, list(d.conversations))["ndcg@10"]


def tables(domains: list[Domain]) -> None:
    mean = statistics.fmean
    keys = list(itertools.product(BETAS, DOCS, WEIGHTS))
    table: dict[tuple[str, str], dict[Key | None, list[float]]] = {}
    for d in domains:
        moved = MovedQuestion(d)
        for given in ("last turn", "+ history"):
            table[(d.name, given)] = {key: scores(d, moved, given, key) for key in [None, *keys]}
    print("| beta | m | w | " + " | ".join(f"{n} {g}" for n, g in table) + " |")
    print("|---|---|---|" + "---:|" * len(table))
    for key in keys:
        cells = [f"{mean(v[key]) - mean(v[None]):+.4f}" for v in table.values()]
        print(f"| {key[0]:g} | {key[1]} | {key[2]:g} | " + " | ".join(cells) + " |")
    print("\n| held-out domain | chosen on | beta, m, w | asked | nDCG@10 default | with it | Δ | p |")
    print("|---|---|---|---|---:|---:|---:|---:|")
    for d in domains:
        other = next(o for o in domains if o is not d)
        best = max(keys, key=lambda k: mean(table[(other.name, "last turn")][k]))
        for given in ("last turn", "+ history"):
            base, new = table[(d.name, given)][None], table[(d.name, given)][best]
            print(
                f"| {d.name} | {other.name} | {best[0]:g}, {best[1]}, {best[2]:g} | {given} "
                f"| {compared_cells(base, new)} |"
            )


def main(argv: list[str] | None = None) -> int:
    return held_out_main(__doc__, argv, tables)


if __name__ == "__main__":
    sys.exit(main())
