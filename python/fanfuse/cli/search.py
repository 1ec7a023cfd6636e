"""`fanfuse search --index DIR "question"`: multi-query retrieval over an index built by `fanfuse index`."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from fanfuse._core import FusionError
from fanfuse.cli import render
from fanfuse.cli._common import int_from
from fanfuse.multiquery import Expander, HeuristicExpander, LLMExpander, MultiQueryRetriever
from fanfuse.multiquery.config import DEFAULT_MAX_VARIANTS, MAX_VARIANTS_LIMIT, check_positive_float
from fanfuse.retrievers.tantivy_index import TantivyRetriever


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "search",
        help="multi-query search of an index built by `fanfuse index`",
        description="Expand the question into query variants, search each with BM25 (and a dense "
        "retriever with --dense), fuse the lists by Reciprocal Rank Fusion and print the hits.",
    )
    parser.add_argument("query", help="the question")
    parser.add_argument("--index", required=True, metavar="DIR", help="index directory (`fanfuse index`)")
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
    parser.add_argument("--top-k", type=int_from(1), default=10, help="hits to print (default 10)")
    parser.add_argument("--rrf-k", type=float, default=60.0, help="RRF constant k (default 60)")
    parser.add_argument(
        "--filter",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="keep hits whose metadata KEY equals VALUE (JSON or a plain string); repeatable",
    )
    parser.add_argument(
        "--dense",
        action="store_true",
        help="hybrid: add a TF-IDF+SVD dense retriever fitted on the index's documents (the first time "
        "~15 s per 6.5k documents on 2 cores, then kept in the index directory; needs scikit-learn)",
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
    if args.expander == "llm":
        return LLMExpander(base_url=args.llm_base_url, model=args.model)
    if args.expander in ("heuristic", None):
        return HeuristicExpander(max_variants=MAX_VARIANTS_LIMIT)
    return None


def expansion_switch(expander: str | None) -> bool | None:
    """``--expander none`` turns expansion off, another ``--expander`` on; without the flag the
    environment decides (``FANFUSE_QUERY_EXPANSION``, default on)."""
    return None if expander is None else expander != "none"


def check_numbers(args: argparse.Namespace) -> None:
    """The float flag, checked under its own name (argparse checks the int ones)."""
    check_positive_float(args.rrf_k, "--rrf-k")


def make_retrievers(index: TantivyRetriever, dense: bool) -> dict[str, Any]:
    retrievers: dict[str, Any] = {"bm25": index}
    if dense:
        from fanfuse.retrievers.dense_cache import dense_for_index

        retrievers["dense"], fitted = dense_for_index(index)
        if fitted:
            print(f"fitted TF-IDF+SVD on {len(index)} documents, saved in {index.directory}", file=sys.stderr)
    return retrievers


def run(args: argparse.Namespace) -> int:
    try:
        check_numbers(args)
        filters = parse_filters(args.filter)
        index = TantivyRetriever(args.index)
        expander = make_expander(args)
        with MultiQueryRetriever(
            make_retrievers(index, args.dense),
            expander=expander,
            k=args.rrf_k,
            top_k=args.top_k,
            expansion=expansion_switch(args.expander),
            max_variants=args.variants,
        ) as retriever:
            result = retriever.search(args.query, filter=filters or None)
    except (FusionError, ImportError) as error:
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
