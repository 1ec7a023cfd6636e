"""The vector feedback's list weight (`DEFAULT_RETRIEVER_WEIGHTS["dense-feedback"]`) chosen on one
MT-RAG domain and scored on the other, with the word-level variants routed to BM25 alone.

Every weight in `WEIGHTS` fuses the same per-question lists as `mtrag_conversation_heldout.py` (the
default's weighted RRF, routed as `fanfuse.open_index` routes), given the last turn alone, the last
turn with its history (the library's `HistoryExpander`) and the human rewrite. The weight with the
best mean nDCG@10 over the three sets of a domain is scored on the other domain ("held out"),
against the library's weight: Δ and p (paired randomization test of nDCG@10, 10,000 sign flips).

    .venv/bin/python benches/mtrag_vector_feedback_heldout.py
"""

from __future__ import annotations

import statistics
import sys

from fanfuse.index_retriever import DEFAULT_RETRIEVER_WEIGHTS
from fanfuse.multiquery import HistoryExpander
from mtrag_bench import compared_cells, per_query_values
from mtrag_conversation_grid import Setting, fused
from mtrag_conversation_heldout import Domain, held_out_main

WEIGHTS = (0.0, 0.25, 0.5, 1.0)
SETS = ("last turn", "+ history", "rewrite")


def scores(d: Domain, weight: float) -> dict[str, list[float]]:
    """Per-question nDCG@10 of each set with the vector feedback's lists at `weight`."""
    setting, expander = Setting(lambda c, text: [], prf=weight), HistoryExpander(d.bm25)
    readings = {
        "last turn": lambda c: d.readings.base(c.last),
        "+ history": lambda c: d.history_readings(expander, c),
        "rewrite": lambda c: d.readings.base(c.rewrite),
    }
    qids = list(d.conversations)
    return {
        name: per_query_values(
            {q: fused(d.lists, read(c), setting) for q, c in d.conversations.items()}, d.qrels, qids
        )["ndcg@10"]
        for name, read in readings.items()
    }


def tables(domains: list[Domain]) -> None:
    mean, library = statistics.fmean, DEFAULT_RETRIEVER_WEIGHTS["dense-feedback"]
    table = {d.name: {w: scores(d, w) for w in sorted({*WEIGHTS, library})} for d in domains}
    print(f"| weight | {' | '.join(f'{d.name} {s}' for d in domains for s in SETS)} |")
    print(f"|---:|{'---:|' * (len(domains) * len(SETS))}")
    for w in table[domains[0].name]:
        cells = " | ".join(f"{mean(table[d.name][w][s]):.4f}" for d in domains for s in SETS)
        print(f"| {w:g} | {cells} |")
    print(
        "\n| held-out domain | weight chosen on the other | asked | nDCG@10 at the library's "
        "| at the chosen | Δ | p |"
    )
    print("|---|---:|---|---:|---:|---:|---:|")
    for d in domains:
        other = next(o for o in domains if o is not d)
        best = max(table[other.name], key=lambda w: mean([x for s in SETS for x in table[other.name][w][s]]))
        for s in SETS:
            base, new = table[d.name][library][s], table[d.name][best][s]
            print(f"| {d.name} | {best:g} | {s} | {compared_cells(base, new)} |")


def main(argv: list[str] | None = None) -> int:
    return held_out_main(__doc__, argv, tables)


if __name__ == "__main__":
    sys.exit(main())
