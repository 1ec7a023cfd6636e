"""Leave one domain out: every history setting chosen on one MT-RAG domain and scored on the other.

The candidates are the settings of `HistoryExpander`'s per-question reading: `max_own_words` (a
question with at most that many content words of its own, or a referring word, depends on its
history and gets the history readings at full weight) and `independent_weight` (the share any other
question gets; 1 reads every follow-up alike, with no per-question reading). The one chosen on
a domain is the best mean nDCG@10 there (ties: the larger share, the fewer knobs); it is then scored
on the other domain, which chose nothing: "held out: yes". The default is the setting whose smaller
gain of the two domains is the largest (it looked at both: "held out: no").

Every setting fuses the same per-question lists (top 20 of BM25, dense and dense-feedback for the
texts of the product's own variants, `mtrag_conversation_grid.Lists`) by the default's weighted RRF,
with the variants the product's `HistoryExpander` writes for the setting. Rows per held-out domain:
the last turn alone, the chosen setting given the history, the human rewrite; Δ and p (paired
randomization test of nDCG@10, 10,000 sign flips) against the last turn alone; "gap closed": the
gain as a share of the rewrite's; "standalone Δ": the mean change on the questions whose rewrite is
the last turn as typed. `--tried` adds the other evidence measured for the per-question reading
(specificity in the index, cosine to the previous turn, agreement of first-pass lists), on both
domains.

    .venv/bin/python benches/mtrag_conversation_heldout.py            # make mtrag-conversation-heldout
    .venv/bin/python benches/mtrag_conversation_heldout.py --tried    # + the evidence that did not carry
"""

from __future__ import annotations

import math
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import fanfuse
from fanfuse.index_retriever import DEFAULT_VARIANT_WEIGHTS
from fanfuse.multiquery import HistoryExpander
from fanfuse.multiquery.conversation import check_history
from fanfuse.multiquery.expand.history import (
    DEFAULT_INDEPENDENT_WEIGHT,
    DEFAULT_MAX_OWN_WORDS,
)
from fanfuse.multiquery.expand.words import content_words
from fanfuse.retrievers import DenseFeedback
from fanfuse.retrievers.tantivy_index import TantivyRetriever
from measuring import run_line, versions
from mtrag_bench import (
    Conversation,
    data_parser,
    judged_domain,
    parse_leave_one_out,
    per_query_values,
)
from mtrag_conversation_grid import Lists, Reading, Readings, Setting, fused

ITERATIONS = 10_000
BUDGET = 4  # the default's variants per search
OWN_WORDS = (1, 2, 3)
SHARES = (0.0, 0.25, 0.5, 0.75, 1.0)
TRIED_SHARE = 0.5  # the share the other evidence gives a question it reads as independent
Key = tuple[int, float]  # (max_own_words, independent_weight)


@dataclass
class Domain:
    """One domain's lists and questions."""

    name: str
    bm25: TantivyRetriever
    lists: Lists
    readings: Readings
    qrels: fanfuse.Qrels
    conversations: dict[str, Conversation]

    def ndcg(self, readings: Callable[[Conversation], list[Reading]]) -> list[float]:
        """Per-question nDCG@10 of the default's fusion of `readings` (the question's first)."""
        setting = Setting(lambda c, text: [])
        run = {q: fused(self.lists, readings(c), setting) for q, c in self.conversations.items()}
        return per_query_values(run, self.qrels, list(self.conversations))["ndcg@10"]

    def alone(self, given: str = "last") -> list[float]:
        """The question alone (the last turn, or the rewrite) with the default's own variants."""
        return self.ndcg(lambda c: self.readings.base(c.rewrite if given == "rewrite" else c.last))

    def with_history(
        self, expander: HistoryExpander, share: Callable[[Conversation], float] | None = None
    ) -> list[float]:
        """The default given the history: the question, the variants `expander` writes from it (their
        weights times `share(conversation)`, if given), then the question's own variants to the
        budget (RM3 feedback, then content words)."""

        def readings(c: Conversation) -> list[Reading]:
            return self.history_readings(expander, c, share(c) if share is not None and c.history else 1.0)

        return self.ndcg(readings)

    def history_readings(
        self, expander: HistoryExpander, c: Conversation, factor: float = 1.0
    ) -> list[Reading]:
        """The question's readings given its history, as the default search makes them: the
        question, its own variants to the budget, the variants `expander` writes (their weights
        times `factor`)."""
        written = expander.expand(c.last, max_variants=BUDGET, history=check_history(list(c.history)))
        history = list(written.variants[1:]) if factor > 0 else []
        own = self.readings.base(c.last)[: BUDGET - len(history)]
        weight = DEFAULT_VARIANT_WEIGHTS[0] * factor
        return [*own, *((v.text, v.plain or v.text, weight * (v.weight or 0.0), v.source) for v in history)]


def open_domain(data: Path, name: str, index_dir: Path, limit: int | None) -> Domain:
    judged = judged_domain(data, name, index_dir, limit)
    bm25, dense = judged.bm25, judged.dense
    assert dense is not None
    lists = Lists(bm25, dense, DenseFeedback(dense))
    return Domain(name, bm25, lists, Readings(bm25), judged.qrels, judged.conversations)


def held_out_main(
    description: str | None,
    argv: list[str] | None,
    tables: Callable[[list[Domain]], None],
) -> int:
    """A bench that chooses on one domain what it scores on the other: its arguments, its two domains
    opened, `tables` printed, then the run's line on stderr; 2 where the data is missing."""
    args = parse_leave_one_out(data_parser(description, index_dir=True), argv)
    if args is None:
        return 2
    started = time.perf_counter()
    tables([open_domain(args.data, name, args.index_dir, args.limit) for name in args.domains])
    print("\n" + run_line(started, *versions("tantivy")), file=sys.stderr)
    return 0


def candidates(bm25: TantivyRetriever) -> dict[Key, HistoryExpander]:
    """Every setting of the per-question reading; share 1 once (its own-words bound changes nothing)."""
    keys = [(k, s) for k in OWN_WORDS for s in SHARES if s < 1] + [(DEFAULT_MAX_OWN_WORDS, 1.0)]
    return {(k, s): HistoryExpander(bm25, max_own_words=k, independent_weight=s) for k, s in keys}


def label(key: Key) -> str:
    own, share = key
    if share == 1:
        return "every follow-up at full weight (no per-question reading)"
    return f"full weight with a referring word or <= {own} own content words, else {share:g}"


def newest_word(d: Domain) -> Callable[[Conversation], float]:
    """The largest BM25 idf of a word of the question that no earlier turn has (0: none)."""
    documents = len(d.bm25)

    def idf(term: str) -> float:
        found = d.bm25.document_frequency(term)
        return math.log(1 + (documents - found + 0.5) / (found + 0.5)) if found else 0.0

    def terms(text: str) -> set[str]:
        return {term for word in content_words(text).words for _, term in d.bm25.analyze(word)}

    def largest(c: Conversation) -> float:
        earlier = set().union(*map(terms, c.history))
        return max((idf(t) for t in terms(c.last) - earlier), default=0.0)

    return largest


def fixed_evidence(d: Domain) -> dict[str, Callable[[Conversation], float]]:
    """Specificity and cosine, each a rule with its threshold fixed: a question it reads as
    independent gets `TRIED_SHARE`."""
    from fanfuse.retrievers.default_encoder import default_encoder

    encoder, newest = default_encoder(), newest_word(d)
    referring = HistoryExpander(max_own_words=0)  # depends: a referring word, or no content word

    def new_specific(c: Conversation) -> float:
        return TRIED_SHARE if newest(c) >= 6 else 1.0

    def cosine(c: Conversation) -> float:
        last, previous = encoder.embed_queries([c.last, c.history[-1]])
        similarity = float(last @ previous) / (math.hypot(*last) * math.hypot(*previous) or 1.0)
        return 1.0 if similarity >= 0.3 or referring.depends(c.last) else TRIED_SHARE

    return {
        "independent if a word has idf >= 6 and no earlier turn has it": new_specific,
        "independent if cosine to the previous turn < 0.3 and no referring word": cosine,
    }


def words_unless_new(d: Domain, own: int, specific: float) -> Callable[[Conversation], float]:
    """The own-words rule, except that a question with a word of idf >= `specific` that no earlier
    turn has is independent even with a referring word ("How can I get my FICO score then?")."""
    words, newest = HistoryExpander(max_own_words=own), newest_word(d)

    def read(c: Conversation) -> float:
        return 1.0 if words.depends(c.last) and newest(c) < specific else TRIED_SHARE

    return read


def agreement(d: Domain, shared: int, share: float) -> Callable[[Conversation], float]:
    """`share` when the BM25 top 10 of the last turn and of the previous turn joined to it have at
    least `shared` documents in common (the history changes little of what the question finds)."""

    def read(c: Conversation) -> float:
        alone, joined = (set(d.lists.of("bm25", t)[:10]) for t in (c.last, f"{c.history[-1]} {c.last}"))
        return share if len(alone & joined) >= shared else 1.0

    return read


def report_row(
    d: Domain, setting: str, held_out: str, values: list[float], last: list[float], rewrite: list[float]
) -> str:
    mean = statistics.fmean
    gain, ceiling = mean(values) - mean(last), mean(rewrite) - mean(last)
    p = "" if values is last else f"{fanfuse.randomization_test(values, last, iterations=ITERATIONS):.4f}"
    standalone = [i for i, c in enumerate(d.conversations.values()) if c.rewrite == c.last]
    delta = f"{mean([values[i] - last[i] for i in standalone]):+.4f}" if standalone else ""
    closed = f"{gain / ceiling:.0%}" if ceiling > 0 and values is not last else ""
    return (
        f"| {d.name} | {setting} | {held_out} | {mean(values):.4f} | {gain:+.4f} | {p} | {closed} | {delta} |"
    )


HEADER = (
    "| domain | setting | held out | nDCG@10 | Δ vs the last turn alone | p | gap closed | standalone Δ |\n"
    "|---|---|---|---:|---:|---:|---:|---:|"
)


def against(domain: str, name: str, values: list[float], other: list[float], other_name: str) -> str:
    """A row of `values` tested against `other` (paired, per question) instead of the last turn."""
    p = fanfuse.randomization_test(values, other, iterations=ITERATIONS)
    delta = statistics.fmean(values) - statistics.fmean(other)
    return f"| {domain} | {name}, against {other_name} | | | {delta:+.4f} | {p:.4f} | | |"


def chosen_on(scores: dict[str, dict[Key, list[float]]]) -> dict[str, Key]:
    """Each domain's best setting by mean nDCG@10 (ties: the larger share, then the smaller bound)."""
    mean = statistics.fmean
    return {
        name: max(by_key, key=lambda key, b=by_key: (round(mean(b[key]), 6), key[1], -key[0]))  # type: ignore[misc]
        for name, by_key in scores.items()
    }


def main(argv: list[str] | None = None) -> int:
    parser = data_parser(__doc__, index_dir=True)
    parser.add_argument("--tried", action="store_true", help="also the evidence that did not carry")
    args = parse_leave_one_out(parser, argv)
    if args is None:
        return 2
    started, mean = time.perf_counter(), statistics.fmean
    domains = [open_domain(args.data, name, args.index_dir, args.limit) for name in args.domains]
    other = {d.name: next(o.name for o in domains if o is not d) for d in domains}
    last = {d.name: d.alone() for d in domains}
    rewrite = {d.name: d.alone("rewrite") for d in domains}
    scores = {d.name: {key: d.with_history(e) for key, e in candidates(d.bm25).items()} for d in domains}
    gains = {
        key: [mean(scores[d.name][key]) - mean(last[d.name]) for d in domains]
        for key in scores[domains[0].name]
    }
    chosen = chosen_on(scores)
    # Where the domains choose differently: the setting whose smaller gain of the two is the largest.
    widest = max(gains, key=lambda key: (round(min(gains[key]), 6), key[1], -key[0]))
    default = (DEFAULT_MAX_OWN_WORDS, DEFAULT_INDEPENDENT_WEIGHT)
    print("\nEvery candidate (nDCG@10 given the history, Δ vs the last turn alone):\n")
    print(f"| setting | {' | '.join(d.name for d in domains)} |\n|---|{'---:|' * len(domains)}")
    for key, gain in gains.items():
        cells = " | ".join(
            f"{mean(scores[d.name][key]):.4f} ({g:+.4f})" for d, g in zip(domains, gain, strict=True)
        )
        print(f"| {label(key)} | {cells} |")
    print(f"\nHeld out (10,000 sign flips; standalone: rewrite = last turn):\n\n{HEADER}")
    for test in domains:
        train = other[test.name]
        rows = [
            ("the last turn alone", "-", last[test.name]),
            (f"chosen on {train}: {label(chosen[train])}", "yes", scores[test.name][chosen[train]]),
            (
                f"the default: {label(default)}",
                "yes" if default == chosen[train] else "no",
                scores[test.name][default],
            ),
            (
                f"the largest smaller gain of the two: {label(widest)}",
                "yes" if widest == chosen[train] else "no",
                scores[test.name][widest],
            ),
            (label((0, 1.0)), "no", scores[test.name][(DEFAULT_MAX_OWN_WORDS, 1.0)]),
            ("the human rewrite", "-", rewrite[test.name]),
        ]
        for setting, held_out, values in rows:
            print(report_row(test, setting, held_out, values, last[test.name], rewrite[test.name]))
        ungated = scores[test.name][(DEFAULT_MAX_OWN_WORDS, 1.0)]
        print(against(test.name, "the default", scores[test.name][default], ungated, "every follow-up alike"))
    if args.tried:
        print(
            "\nThe other evidence (p against the last turn alone; for agreement held out, also"
            f" against the own-words rule held out):\n\n{HEADER}"
        )
        for d in domains:
            ungated = HistoryExpander(d.bm25, independent_weight=1.0)
            for name, share in fixed_evidence(d).items():
                values = d.with_history(ungated, share)
                print(
                    report_row(
                        d, f"{name}: share {TRIED_SHARE:g}", "no", values, last[d.name], rewrite[d.name]
                    )
                )
        # Agreement as a family of its own, chosen on one domain and scored on the other.
        agreed = {
            d.name: {
                (n, s): d.with_history(HistoryExpander(d.bm25, independent_weight=1.0), agreement(d, n, s))
                for n in (3, 4, 5, 6, 7)
                for s in SHARES[:-1]
            }
            for d in domains
        }
        picked = chosen_on(agreed)
        for d in domains:
            n, s = picked[other[d.name]]
            values, words = agreed[d.name][(n, s)], scores[d.name][chosen[other[d.name]]]
            setting = f"agreement chosen on {other[d.name]}: independent if >= {n} of 10 shared: share {s:g}"
            print(report_row(d, setting, "yes", values, last[d.name], rewrite[d.name]))
            print(against(d.name, "the same", values, words, "the own-words rule held out"))
        # The own-words rule overruled by a new specific word: one more knob, chosen the same way.
        overruled = {
            d.name: {
                (k, t): d.with_history(
                    HistoryExpander(d.bm25, independent_weight=1.0), words_unless_new(d, k, t)
                )
                for k in OWN_WORDS[:2]
                for t in (5.0, 6.0, 7.0)
            }
            for d in domains
        }
        picked = chosen_on(overruled)
        for d in domains:
            k, t = picked[other[d.name]]
            values, words = overruled[d.name][(k, t)], scores[d.name][chosen[other[d.name]]]
            setting = (
                f"own words chosen on {other[d.name]}, <= {k}, overruled by a new word of idf >= {t:g}: "
                f"share {TRIED_SHARE:g}"
            )
            print(report_row(d, setting, "yes", values, last[d.name], rewrite[d.name]))
            print(against(d.name, "the same", values, words, "the own-words rule held out"))
    print(f"\nthe default: {label(default)}; the largest smaller gain: {label(widest)}")
    print(run_line(started, *versions("tantivy")))
    return 0


if __name__ == "__main__":
    sys.exit(main())
