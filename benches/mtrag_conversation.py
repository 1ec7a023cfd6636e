"""Conversational questions on real MT-RAG data: the last turn alone, with its history, and the human
rewrite (the ceiling), each searched by the same retrievers; nDCG@10, Recall@10, latency, and paired p.

Each judged query of a domain is the last user turn of a conversation (`questions` file: every user
turn so far, oldest first; all but the last line are the history a chat sends with it). Rows:

  the last turn alone   BM25 single and its default (`--no-dense`); hybrid (BM25 + dense) single; the
                        default's retrievers with no variants, and the default (`fanfuse.open_index`)
  with its history      BM25's default; the default's retrievers with one history variant alone
                        (topic words / the previous turn joined); the default (`search(q, history=...)`)
  the human rewrite     BM25 single, hybrid single, the default: the standalone question, the ceiling

p: the two-sided paired randomization test of per-query nDCG@10 (10,000 sign flips, seed 0) against
the row named in "against": the same retrievers and variants given the last turn alone, or, for the
default, the hybrid's single query. "gap closed": the default with history's gain over the last turn
alone, as a share of the rewrite's. `--llm-base-url URL --llm-model M --strategy S` adds a row of
`LLMExpander` given the history (with the default's retrievers); `conversation_rows(...,
extra={"name": expander})` adds one for any `Expander`.

    .venv/bin/python benches/mtrag_conversation.py             # make mtrag-conversation
    .venv/bin/python benches/mtrag_conversation.py --limit 5   # a quick smoke run
"""

from __future__ import annotations

import argparse
import statistics
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import fanfuse
from fanfuse import MultiQueryRetriever
from fanfuse.index_retriever import default_retrievers, open_index
from fanfuse.multiquery import Expander, Expansion, HistoryExpander, LLMExpander
from fanfuse.multiquery.conversation import History, user_turns
from fanfuse.multiquery.expand.expanders import assemble_variants
from fanfuse.retrievers.tantivy_index import TantivyRetriever
from measuring import markdown_table, p95
from mtrag_bench import (
    HISTORY,
    LAST,
    REWRITE,
    answer,
    data_parser,
    judged_domain,
    per_query_values,
    report_domains,
)


@dataclass(frozen=True)
class Row:
    """One row: which retrievers and variants, what it is given, and the row it is tested against."""

    retrievers: str
    variants: str
    given: str  # LAST, HISTORY or REWRITE
    make: Callable[[], MultiQueryRetriever]
    against: tuple[str, str, str] | None


class OneReading(Expander):
    """`HistoryExpander`'s topic-words variant alone, or its joined-turns variant alone."""

    name = "history"

    def __init__(self, index: TantivyRetriever, which: str) -> None:
        self.history, self.which = HistoryExpander(index), which

    def expand(
        self, query: str, *, max_variants: int, strategy: str | None = None, history: History = ()
    ) -> Expansion:
        earlier = user_turns(history)
        variant = None
        if earlier:
            reading = self.history.topic_variant if self.which == "topic" else self.history.joined_variant
            variant = reading(query, earlier)
        return Expansion(assemble_variants(query, [variant] if variant else [], max_variants, "history"))


def conversation_rows(
    bm25: TantivyRetriever, extra: Mapping[str, Expander] | None = None, dense: bool = True
) -> list[Row]:
    """The table's rows over one domain's index (its stored vectors make the hybrid, unless not
    `dense`)."""
    vectors = {k: v for k, v in default_retrievers(bm25, None if dense else False).items() if k == "dense"}
    hybrid = {"bm25": bm25, **vectors}

    def single(retrievers: dict[str, Any]) -> Callable[[], MultiQueryRetriever]:
        return lambda: MultiQueryRetriever(retrievers, expansion=False, top_k=10)

    def default(**overrides: Any) -> Callable[[], MultiQueryRetriever]:
        return lambda: open_index(bm25, **{"dense": None if dense else False, "top_k": 10, **overrides})

    last_alone = ("default", "no variants", LAST)
    rows = [
        Row("BM25", "single", LAST, single({"bm25": bm25}), None),
        Row("BM25", "default", LAST, default(dense=False), ("BM25", "single", LAST)),
        Row("BM25+dense", "single", LAST, single(hybrid), None),
        Row("default", "no variants", LAST, default(expansion=False), None),
        Row("default", "default", LAST, default(), ("BM25+dense", "single", LAST)),
        Row("BM25", "default", HISTORY, default(dense=False), ("BM25", "default", LAST)),
        *(
            Row("default", f"{how} alone", HISTORY, default(expander=OneReading(bm25, how)), last_alone)
            for how in ("topic", "joined")
        ),
        Row("default", "default", HISTORY, default(), ("default", "default", LAST)),
    ]
    for name, expander in (extra or {}).items():
        rows.append(Row("default", name, HISTORY, default(expander=expander), ("default", "default", LAST)))
    return [
        *rows,
        Row("BM25", "single", REWRITE, single({"bm25": bm25}), ("BM25", "single", LAST)),
        Row("BM25+dense", "single", REWRITE, single(hybrid), ("BM25+dense", "single", LAST)),
        Row("default", "default", REWRITE, default(), ("BM25+dense", "single", REWRITE)),
    ]


def run_domain(
    data: Path,
    domain: str,
    index_dir: Path,
    limit: int | None,
    iterations: int,
    extra: Mapping[str, Expander],
    dense: bool = True,
) -> list[dict[str, Any]]:
    judged = judged_domain(data, domain, index_dir, limit, dense=dense)  # vectors: the default is hybrid
    bm25, qrels, conversations = judged.bm25, judged.qrels, judged.conversations
    qids = list(conversations)
    scored: dict[tuple[str, str, str], list[float]] = {}
    out = []
    for row in conversation_rows(bm25, extra, dense):
        with row.make() as retriever:
            run, latencies = answer(retriever, conversations, row.given)
        values = per_query_values(run, qrels, qids)
        key = (row.retrievers, row.variants, row.given)
        scored[key] = values["ndcg@10"]
        against = scored.get(row.against) if row.against else None
        out.append(
            {
                "domain": domain,
                "retrievers": row.retrievers,
                "variants": row.variants,
                "given": row.given,
                "n": len(qids),
                "with history": sum(bool(c.history) for c in conversations.values()),
                **{m: statistics.fmean(v) for m, v in values.items()},
                "against": " ".join(row.against) if row.against else "",
                "delta": statistics.fmean(values["ndcg@10"]) - statistics.fmean(against) if against else None,
                "p": fanfuse.randomization_test(values["ndcg@10"], against, iterations=iterations)
                if against
                else None,
                "ms_mean": statistics.fmean(latencies),
                "ms_p95": p95(latencies),
            }
        )
    _gap_closed(out)
    return out


def _gap_closed(rows: list[dict[str, Any]]) -> None:
    """The default with history's gain over the last turn alone, as a share of the rewrite's."""
    ndcg = {(r["variants"], r["given"]): r["ndcg@10"] for r in rows if r["retrievers"] == "default"}
    last, rewrite = ndcg[("default", LAST)], ndcg[("default", REWRITE)]
    for r in rows:
        the_default = (r["retrievers"], r["variants"], r["given"]) == ("default", "default", HISTORY)
        closed = (r["ndcg@10"] - last) / (rewrite - last) if rewrite != last else None
        r["gap closed"] = closed if the_default else None


def markdown(rows: Sequence[dict[str, Any]]) -> str:
    columns = (
        "domain | given | retrievers | variants | n | nDCG@10=ndcg@10:.4f | Recall@10=recall@10:.4f "
        "| against | Δ nDCG@10=delta:+.4f | p:.4f | gap closed:.0% | ms/query mean=ms_mean:.2f "
        "| p95=ms_p95:.2f"
    )
    return markdown_table(columns, "llllrrrlrrrrr", rows)


def main(argv: list[str] | None = None) -> int:
    parser = data_parser(__doc__, index_dir=True, iterations=True, json_rows=True)
    parser.add_argument(
        "--no-dense", dest="dense", action="store_false", help="BM25 only (no vectors embedded or searched)"
    )
    parser.add_argument("--llm-base-url", metavar="URL", help="adds a row of LLMExpander given the history")
    parser.add_argument("--llm-model", metavar="M", help="the LLM row's chat model")
    parser.add_argument("--strategy", metavar="S", default="paraphrase", help="the LLM row's strategy")

    def rows_for(args: argparse.Namespace) -> Callable[[str], list[dict[str, Any]]]:
        extra: dict[str, Expander] = {}
        if args.llm_base_url:
            llm = LLMExpander(base_url=args.llm_base_url, model=args.llm_model, strategy=args.strategy)
            extra[f"LLM {args.strategy} ({args.llm_model})"] = llm
        return lambda domain: run_domain(
            args.data, domain, args.index_dir, args.limit, args.iterations, extra, args.dense
        )

    return report_domains(parser, argv, rows_for, markdown)


if __name__ == "__main__":
    sys.exit(main())
