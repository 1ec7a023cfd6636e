"""`fanfuse search --index DIR "question"`: the default multi-query retriever (`fanfuse.open_index`)
over an index built by `fanfuse index`, with every setting a flag."""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
from collections.abc import Iterator
from typing import Any

from fanfuse._core import FusionError
from fanfuse.cli import render
from fanfuse.cli._common import int_from
from fanfuse.cli.paths import add_index
from fanfuse.cli.progress import ProgressBar
from fanfuse.default_search import open_index
from fanfuse.multiquery import Expander, LLMExpander
from fanfuse.multiquery.config import DEFAULT_MAX_VARIANTS, MAX_VARIANTS_LIMIT, check_positive_float
from fanfuse.multiquery.fusion import checked
from fanfuse.multiquery.llm import STRATEGIES, check_strategy
from fanfuse.retrievers.tantivy_index import TantivyRetriever

# The fusion flags and the option of `fanfuse.fuse` each sets (checked in this order: --norm is
# judged with the --method given).
FUSION_FLAGS = {
    "method": "--method",
    "norm": "--norm",
    "tie_break": "--tie-break",
    "duplicates": "--duplicates",
}


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "search",
        help="multi-query search of an index built by `fanfuse index`",
        description="Expand the question into query variants, search each with BM25 (and the dense "
        "retriever when the index stores vectors, or with --dense), fuse the lists (RRF unless --method "
        "says otherwise) and print the hits. The same search as fanfuse.open_index(DIR) in Python.",
    )
    parser.add_argument("query", help="the question")
    add_index(parser)
    parser.add_argument(
        "--expander",
        choices=["heuristic", "llm", "none"],
        help="where variants come from: word rewrites (default), a chat model, or none (single query; "
        "default when FANFUSE_QUERY_EXPANSION is off)",
    )
    parser.add_argument(
        "--variants",
        type=int_from(1, MAX_VARIANTS_LIMIT),
        metavar="N",
        help=f"variants per search, the original included (1-{MAX_VARIANTS_LIMIT}; default "
        f"FANFUSE_MAX_QUERY_VARIANTS, else {DEFAULT_MAX_VARIANTS})",
    )
    parser.add_argument("--llm-base-url", metavar="URL", help="OpenAI-compatible API root for --expander llm")
    parser.add_argument("--model", metavar="M", help="chat model name for --expander llm")
    parser.add_argument(
        "--strategy",
        metavar="S",
        help=f"what --expander llm asks for: {', '.join(STRATEGIES)} (default paraphrase)",
    )
    parser.add_argument(
        "--instructions",
        metavar="TEXT",
        help='domain guidance added to the prompt of --expander llm, e.g. "Queries are about Kubernetes"',
    )
    parser.add_argument("--top-k", type=int_from(1), default=10, help="hits to print (default 10)")
    parser.add_argument(
        "--method",
        help="fusion method, any of fanfuse.fuse's: rrf (default), isr, rbc, bordafuse, condorcet, "
        "combsum, combmnz, wsum, dbsf, relative_score, ... (score methods fuse the retrievers' scores)",
    )
    parser.add_argument(
        "--norm", help="score normalisation of score methods: min-max (their default), zmuv, sum, max, ..."
    )
    parser.add_argument("--rrf-k", type=float, default=60.0, help="RRF constant k (default 60)")
    parser.add_argument("--tie-break", help="order of equal fused scores: rank (default) or id")
    parser.add_argument(
        "--duplicates",
        help="an id repeated in one list counts once at its first rank (first, default), by its best "
        "score (max) or summed (sum)",
    )
    parser.add_argument(
        "--filter",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="keep hits whose metadata KEY equals VALUE (JSON or a plain string); repeatable",
    )
    parser.add_argument(
        "--dense",
        action=argparse.BooleanOptionalAction,
        help="hybrid BM25 + dense: on by default where the index stores neural vectors (`fanfuse index "
        "--dense`); --dense without them embeds the documents now and keeps the vectors (fanfuse[embed]), "
        "else fits TF-IDF+SVD (fanfuse[dense]); --no-dense: BM25 only",
    )
    parser.add_argument("--explain", action="store_true", help="show provenance and every branch")
    parser.add_argument("--json", action="store_true", help="print the result as JSON")
    parser.set_defaults(run=run)


def parse_filters(items: list[str]) -> dict[str, Any]:
    """`["lang=en", "year=2020"]` -> `{"lang": "en", "year": 2020}`: JSON values, else strings."""
    filters: dict[str, Any] = {}
    for item in items:
        key, sep, raw = item.partition("=")
        if not sep or not key:
            raise FusionError(f"--filter {item!r}: expected KEY=VALUE, e.g. --filter lang=en")
        try:
            filters[key] = json.loads(raw)
        except ValueError:
            filters[key] = raw
    return filters


def make_expander(args: argparse.Namespace) -> Expander | None:
    """The LLM expander for `--expander llm`; None keeps the default (or no expansion at all)."""
    if args.expander != "llm":
        if args.strategy is not None or args.instructions is not None:
            flag = "--strategy" if args.strategy is not None else "--instructions"
            raise FusionError(f"{flag} sets what --expander llm asks the model for; add --expander llm")
        return None
    if args.strategy is not None:
        with flag_named("--strategy", "strategy"):
            check_strategy(args.strategy)
    return LLMExpander(
        base_url=args.llm_base_url,
        model=args.model,
        strategy=args.strategy or "paraphrase",
        instructions=args.instructions,
    )


def expansion_switch(expander: str | None) -> bool | None:
    """``--expander none`` turns expansion off, another ``--expander`` on; without the flag the
    environment decides (``FANFUSE_QUERY_EXPANSION``, default on)."""
    return None if expander is None else expander != "none"


def fusion_options(args: argparse.Namespace) -> dict[str, Any]:
    """The fusion flags given, each checked by the core and named by its flag when refused."""
    check_positive_float(args.rrf_k, "--rrf-k")
    options: dict[str, Any] = {"k": args.rrf_k}
    for name, flag in FUSION_FLAGS.items():
        value = getattr(args, name)
        if value is None:
            continue
        options[name] = value
        with flag_named(flag, name):
            checked(options, weighted=False)
    return options


@contextlib.contextmanager
def flag_named(flag: str, name: str) -> Iterator[None]:
    """Re-raises the library's FusionError about option `name` as one about the command-line `flag`."""
    try:
        yield
    except FusionError as error:
        message = str(error)
        if message.startswith(f"{name} "):
            raise FusionError(flag + message[len(name) :]) from None
        raise FusionError(f"{flag}: {message}") from None


def run(args: argparse.Namespace) -> int:
    try:
        fusion = fusion_options(args)
        filters = parse_filters(args.filter)
        expander = make_expander(args)
        index = TantivyRetriever(args.index)
        overrides: dict[str, Any] = {"expander": expander} if expander is not None else {}
        bar = ProgressBar("embedding the documents (once; the vectors are kept in the index)", len(index))
        embedded = [0]

        def progress(done: int) -> None:
            embedded[0] = done
            bar(done)

        try:
            retriever = open_index(
                index,
                dense=args.dense,
                progress=progress,
                top_k=args.top_k,
                expansion=expansion_switch(args.expander),
                max_variants=args.variants,
                **fusion,
                **overrides,
            )
        finally:
            bar.close()
        if embedded[0]:
            print(f"embedded {embedded[0]} documents, kept in {index.directory}", file=sys.stderr)
        with retriever:
            result = retriever.search(args.query, filter=filters or None)
    except ImportError as error:
        print(f"fanfuse search: error: {error}", file=sys.stderr)
        return 2
    if args.json:
        print(render.as_json(result))
        return 0
    lines = [*render.variant_lines(result), "", *render.hit_table(result)]
    if args.explain:
        lines += ["", *render.explain_lines(result)]
    lines += ["", "time: " + render.timing_line(result)]
    print("\n".join(lines))
    return 0
