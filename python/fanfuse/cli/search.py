"""`fanfuse search --index DIR "question"`: the default multi-query retriever (`fanfuse.open_index`)
over an index built by `fanfuse index`, with every setting a flag."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from fanfuse._core import METHODS, NORMS, TIE_BREAKS
from fanfuse.cli import explain, llm_options, render
from fanfuse.cli._common import number_option
from fanfuse.cli.conversation import add_history_flags, history_of
from fanfuse.cli.flags import add_search_top_k, search_top_k
from fanfuse.cli.fusion_options import DEFAULTS
from fanfuse.cli.paths import add_index, add_stdout
from fanfuse.cli.progress import ProgressBar
from fanfuse.errors import InvalidFilter
from fanfuse.index_retriever import open_index
from fanfuse.multiquery.config import DEFAULT_MAX_VARIANTS
from fanfuse.multiquery.fusion import checked
from fanfuse.multiquery.mmr import DEFAULT_MMR_LAMBDA, RERANKS
from fanfuse.retrievers.filters import filter_from_flags
from fanfuse.retrievers.tantivy_index import TantivyRetriever

# The fusion flags whose dest is the search option they set, as `--rrf-k` sets rrf_k.
FUSION_FLAG_OPTIONS = ("method", "norm", "tie_break")


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
    add_history_flags(parser)
    llm_options.add_arguments(parser)
    number_option(
        parser,
        "--max-variants",
        "max_variants",
        "the most query variants per search, the original included (default "
        f"FANFUSE_MAX_QUERY_VARIANTS, else {DEFAULT_MAX_VARIANTS})",
        metavar="N",
    )
    add_search_top_k(parser, "hits to print", 10)
    parser.add_argument(
        "--method",
        help=f"fusion method (default rrf; score methods fuse the retrievers' scores; those without a "
        f"weighted form fuse every list with weight 1): {', '.join(METHODS)}",
    )
    parser.add_argument(
        "--norm", help=f"score normalisation of score methods (their default min-max): {', '.join(NORMS)}"
    )
    number_option(parser, "--rrf-k", "k", f"RRF constant k (default {DEFAULTS.k:g})")
    parser.add_argument(
        "--tie-break", help=f"order of equal fused scores: {' (default) or '.join(TIE_BREAKS)}"
    )
    parser.add_argument(
        "--filter",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="keep hits whose metadata KEY equals VALUE, or holds it in a list; VALUE is read as JSON "
        'when it is JSON (true, 3, 2.5, "007", a list: any of its values), else as text. Repeated: '
        "different keys must all match, the values of one key are alternatives (any of them)",
    )
    parser.add_argument(
        "--dense",
        action=argparse.BooleanOptionalAction,
        help="hybrid BM25 + dense: on by default where the index stores neural vectors (`fanfuse index "
        "--dense`); --dense without them embeds the documents now and keeps the vectors (fanfuse[embed]), "
        "else fits TF-IDF+SVD (fanfuse[dense]); --no-dense: BM25 only",
    )
    parser.add_argument(
        "--rerank",
        choices=RERANKS,
        help="reorder the fused hits: mmr, maximal marginal relevance over the index's stored vectors "
        "(fewer near-duplicates in the top hits; needs the dense half)",
    )
    number_option(
        parser,
        "--mmr-lambda",
        "mmr_lambda",
        f"with --rerank mmr: relevance's weight against novelty (default {DEFAULT_MMR_LAMBDA:g}; 1 keeps "
        "the fused order)",
    )
    parser.add_argument(
        "--explain",
        action="store_true",
        help="show each hit's provenance and every branch, as the search page of `fanfuse serve` does",
    )
    parser.add_argument("--json", action="store_true", help="print the result as JSON")
    add_stdout(parser)
    parser.set_defaults(run=run)


def fusion_options(args: argparse.Namespace) -> dict[str, Any]:
    """The fusion flags given, checked by the core at once (a refusal names its flag: `named_by_flags`)."""
    given = {"rrf_k": args.rrf_k, **{name: getattr(args, name) for name in FUSION_FLAG_OPTIONS}}
    options = {name: value for name, value in given.items() if value is not None}
    checked(options)
    return options


def run(args: argparse.Namespace) -> int:
    try:
        top_k = search_top_k(args.top_k)
        fusion = fusion_options(args)
        filters = filter_from_flags(args.filter)
        history = history_of(args)
        expander = llm_options.make_expander(args)
        index = TantivyRetriever(args.index)
        overrides: dict[str, Any] = {"expander": expander} if expander is not None else {}
        bar = ProgressBar("embedding the documents", len(index))
        embedded = [0]

        def progress(done: int) -> None:
            embedded[0] = done
            bar(done)

        try:
            retriever = open_index(
                index,
                dense=args.dense,
                progress=progress,
                top_k=top_k,
                expansion=llm_options.expansion_switch(args.expander),
                max_variants=args.max_variants,
                rerank=args.rerank,
                mmr_lambda=args.mmr_lambda,
                **fusion,
                **overrides,
            )
        finally:
            bar.close()
        if embedded[0]:
            from fanfuse.retrievers.dense_cache import where_vectors_went

            print(f"embedded {embedded[0]} documents, {where_vectors_went(index)}", file=sys.stderr)
        with retriever:
            try:
                result = retriever.search(args.query, filter=filters or None, history=history)
            except InvalidFilter as error:  # a key the index's documents do not have
                raise InvalidFilter(f"--filter: {error}") from None
    except ImportError as error:
        print(f"fanfuse search: error: {error}", file=sys.stderr)
        return 2
    if args.json:
        print(render.as_json(result))
        return 0
    if args.explain:  # the sections of the search page of `fanfuse serve`
        lines = explain.explain_lines(result)
    else:
        lines = [*render.variant_lines(result), "", *render.hit_table(result)]
    lines += ["", "time: " + render.timing_line(result)]
    print("\n".join(lines))
    return 0
