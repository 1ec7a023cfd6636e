"""`fanfuse demo`: the main job end to end on a corpus every machine has, with no server and no key.

Indexes the installed Python standard library's documentation with Tantivy (once; later runs reuse
the cached index), then answers example questions single-query and multi-query side by side, with
the variants, which variants found each hit, and the timings.
"""

from __future__ import annotations

import argparse
import platform
import sys
import time
from typing import Any

from fanfuse._core import FusionError
from fanfuse.cli import render
from fanfuse.cli._common import int_from
from fanfuse.cli.progress import ProgressBar
from fanfuse.multiquery import HeuristicExpander, MultiQueryRetriever, SearchResult
from fanfuse.multiquery.config import MAX_VARIANTS_LIMIT
from fanfuse.stdlib_corpus import cache_root, stdlib_index

QUESTIONS = [
    "how do I run a shell command and capture its output",
    "split a file path into the directory and the file name",
    "read a CSV file into dictionaries",
    "wait for several threads to finish",
    "what does the with statement do",
]
COLUMN = 40  # width of one side of the side-by-side table


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "demo",
        help="multi-query retrieval over the Python standard library's documentation",
        description="Index the installed Python standard library's documentation (cached), then answer "
        "example questions single-query and multi-query side by side.",
    )
    parser.add_argument("questions", nargs="*", help="your own questions (default: built-in examples)")
    parser.add_argument("--top-k", type=int_from(1), default=5, help="hits per question (default 5)")
    parser.add_argument(
        "--variants",
        type=int_from(1, MAX_VARIANTS_LIMIT),
        default=4,
        help=f"variants, the original included (1-{MAX_VARIANTS_LIMIT})",
    )
    parser.add_argument("--cache-dir", help="where to keep the index (default: the user cache dir)")
    parser.add_argument("--rebuild", action="store_true", help="rebuild the cached index")
    parser.set_defaults(run=run)


def side_by_side(single: SearchResult, multi: SearchResult) -> list[str]:
    """Two rankings in columns; `+` marks a multi-query hit that the single query did not return."""
    left, right = "single query (BM25)", "multi-query (BM25 x variants, RRF)"
    lines = [f"{'':>3} {left:<{COLUMN}}   {right:<{COLUMN}} found by"]
    single_ids = set(single.ids)
    for rank in range(max(len(single.hits), len(multi.hits))):
        left = render.clip(single.hits[rank].id, COLUMN) if rank < len(single.hits) else ""
        right, mark, via = "", " ", ""
        if rank < len(multi.hits):
            hit = multi.hits[rank]
            right, via = render.clip(hit.id, COLUMN), render.found_by(hit)
            mark = " " if hit.id in single_ids else "+"
        lines.append(f"{rank + 1:>3} {left:<{COLUMN}} {mark} {right:<{COLUMN}} {via}")
    return lines


def run(args: argparse.Namespace) -> int:
    started = time.perf_counter()
    progress = ProgressBar("indexing the standard library docs")
    try:
        index, built = stdlib_index(args.cache_dir, rebuild=args.rebuild, progress=progress)
    except FusionError as error:
        print(f"fanfuse demo: error: {error}", file=sys.stderr)
        return 2
    finally:
        progress.close()
    ready = time.perf_counter() - started
    how = "built" if built else "reused from cache"
    print(
        f"Multi-query retrieval over the documentation of Python {platform.python_version()}'s standard "
        f"library\nindex: {len(index)} documents, {how} in {ready:.2f} s ({index.directory})\n"
    )
    if not built:
        print(f"(delete {cache_root()} or pass --rebuild to index again)")
    print(
        "Each question is searched as typed (single query) and as several variants fused by RRF.\n"
        "found by = the variants that ranked the hit; + = not in the single query's top "
        f"{args.top_k}.\n"
    )
    expander = HeuristicExpander(max_variants=5)
    try:
        with MultiQueryRetriever({"bm25": index}, expander=expander, top_k=args.top_k) as retriever:
            for question in args.questions or QUESTIONS:
                single = retriever.search(question, expansion=False)
                multi = retriever.search(question, max_variants=args.variants)
                print(f"Q: {question}")
                print("\n".join(render.variant_lines(multi)))
                print("\n".join(side_by_side(single, multi)))
                print(
                    f"time: single {single.diagnostics.total_ms:.2f} ms; multi: {render.timing_line(multi)}\n"
                )
    except FusionError as error:
        print(f"fanfuse demo: error: {error}", file=sys.stderr)
        return 2
    print(f"demo finished in {time.perf_counter() - started:.2f} s")
    return 0
