"""`fanfuse demo`: the main job end to end on a corpus every machine has, with no server and no key.

Indexes the installed Python standard library's documentation with Tantivy and embeds it with the
built-in sentence model (once; later runs reuse both from the cache), then answers questions two
ways side by side: one BM25 query as typed, and the default of `fanfuse search` / `fanfuse.open_index`
(BM25 + neural dense, several query variants, fused by RRF), with which variants and retrievers
found each hit, and the timings. Last, a follow-up question of a conversation, searched by the
default alone and with the turn before it (`search(question, history=[...])`).
"""

from __future__ import annotations

import argparse
import platform
import time
from typing import Any

from fanfuse.cli import render
from fanfuse.cli._common import number_option
from fanfuse.cli.flags import add_search_top_k, search_top_k
from fanfuse.cli.paths import add_output_directory, add_stdout
from fanfuse.cli.progress import ProgressBar
from fanfuse.index_retriever import EMBED_HINT, open_index
from fanfuse.multiquery import MultiQueryRetriever, SearchResult
from fanfuse.multiquery.planning import check_query
from fanfuse.retrievers.default_encoder import embed_extra_installed
from fanfuse.retrievers.tantivy_index import TantivyRetriever
from fanfuse.stdlib_corpus import stdlib_index

# The first question that starts with "How" in each of the seven sections of the Python Library and
# Extension FAQ (Doc/faq/library.rst in CPython), verbatim: a rule fixed before any answer was seen,
# so the questions are neither picked nor reworded for the result.
QUESTIONS = [
    "How do I find a module or application to perform task X?",
    "How do I test a Python program or component?",
    "How do I program using threads?",
    "How do I delete a file? (And other file questions...)",
    "How do I send mail from a Python script?",
    "How do you implement persistent objects in Python?",
    "How do I generate random numbers in Python?",
]
# A follow-up to the last FAQ question, written before any answer was seen: alone, "the same ones"
# could be anything; after the question before it, it is random numbers.
CONVERSATION = (["How do I generate random numbers in Python?"], "How do I get the same ones every time?")
# Passages are embedded cut to their first 48 tokens (the title and the lead of the docstring): the
# whole corpus in about 85 CPU-seconds instead of 155 at the library's 128 (docs/retrievers.md).
DEMO_MAX_TOKENS = 48
COLUMN = 38  # width of one side of the side-by-side table


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "demo",
        help="multi-query retrieval over the Python standard library's documentation",
        description="Index and embed the installed Python standard library's documentation (cached), "
        "then answer questions single-query BM25 and with the default hybrid multi-query search side "
        "by side.",
    )
    parser.add_argument(
        "questions", nargs="*", help="your own questions (default: seven from the Python FAQ)"
    )
    add_search_top_k(parser, "hits per question", 5)
    number_option(
        parser,
        "--max-variants",
        "max_variants",
        "the most query variants per search, the original included (default: as `fanfuse search`)",
    )
    parser.add_argument(
        "--dense",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="the neural dense half (default, with fanfuse[embed]); --no-dense: BM25 only, no embedding",
    )
    add_output_directory(
        parser, "--cache-dir", metavar="DIR", help="where to keep the index (default: the user cache dir)"
    )
    parser.add_argument("--rebuild", action="store_true", help="rebuild the cached index and vectors")
    add_stdout(parser)
    parser.set_defaults(run=run)


def side_by_side(
    single: SearchResult, default: SearchResult, right: str, left: str = "single query, BM25"
) -> list[str]:
    """Two rankings in columns; `+` marks a hit on the right that the left did not return."""
    lines = [f"{'':>3} {left:<{COLUMN}}   {right:<{COLUMN}} found by"]
    single_ids = set(single.ids)
    labelled = render.several_retrievers(default)
    for rank in range(max(len(single.hits), len(default.hits))):
        left = render.clip(single.hits[rank].id, COLUMN) if rank < len(single.hits) else ""
        right, mark, via = "", " ", ""
        if rank < len(default.hits):
            hit = default.hits[rank]
            right, via = render.clip(hit.id, COLUMN), render.found_by(hit, labelled)
            mark = " " if hit.id in single_ids else "+"
        lines.append(f"{rank + 1:>3} {left:<{COLUMN}} {mark} {right:<{COLUMN}} {via}")
    return lines


def run(args: argparse.Namespace) -> int:
    # Every question checked before the index is built and the first one answered.
    for position, question in enumerate(args.questions, start=1):
        check_query(question, f"argument QUESTIONS: question {position}")
    started = time.perf_counter()
    progress = ProgressBar("indexing the standard library docs")
    try:
        index, built = stdlib_index(args.cache_dir, rebuild=args.rebuild, progress=progress)
    finally:
        progress.close()
    ready = time.perf_counter() - started
    print(
        f"Multi-query retrieval over the documentation of Python {platform.python_version()}'s standard "
        f"library\nindex: {len(index)} documents, {'built' if built else 'reused from cache'} in "
        f"{ready:.2f} s ({index.directory})"
    )
    with _default_retriever(index, args) as retriever:
        print(
            "\nEach question is searched as typed with BM25 alone (left), and as `fanfuse search` "
            "does by default (right).\nfound by = the variants (their numbers) of each retriever "
            f"that ranked the hit; + = not in the single query's top {args.top_k}.\n"
        )
        answer(retriever, args.questions or QUESTIONS)
        if not args.questions:
            converse(retriever, *CONVERSATION)
    if not built:
        print(f"(delete {index.directory} or pass --rebuild to index and embed again)")
    print(f"demo finished in {time.perf_counter() - started:.2f} s")
    return 0


def _default_retriever(index: TantivyRetriever, args: argparse.Namespace) -> MultiQueryRetriever:
    """`open_index`'s retriever over the demo's index, its vectors embedded on the first run."""
    options: dict[str, Any] = {"top_k": search_top_k(args.top_k), "max_variants": args.max_variants}
    if not args.dense:
        return open_index(index, dense=False, **options)
    if not embed_extra_installed():
        print(f"dense: off, the neural half needs fanfuse[embed] ({EMBED_HINT}; `make demo` installs it)")
        return open_index(index, dense=False, **options)
    from fanfuse.retrievers.default_encoder import default_encoder

    begin = time.perf_counter()
    encoder = default_encoder(max_length=DEMO_MAX_TOKENS)
    bar = ProgressBar(f"embedding the documents (first {DEMO_MAX_TOKENS} tokens)", len(index))
    embedded = [0]

    def progress(done: int) -> None:
        embedded[0] = done
        bar(done)

    try:
        retriever = open_index(index, dense=True, encoder=encoder, progress=progress, **options)
    finally:
        bar.close()
    seconds = time.perf_counter() - begin
    if embedded[0]:
        from fanfuse.retrievers.dense_cache import where_vectors_went

        how = f"embedded in {seconds:.2f} s, {where_vectors_went(index)}"
    else:
        how = f"reused from cache in {seconds:.2f} s"
    print(f"dense: {encoder.name} vectors of each document's title and first {DEMO_MAX_TOKENS} tokens, {how}")
    return retriever


def answer(retriever: MultiQueryRetriever, questions: list[str]) -> None:
    names = retriever.retriever_names
    bm25_only = {name: 0.0 for name in names if name != "bm25"}
    for question in questions:
        single = retriever.search(question, expansion=False, retriever_weights=bm25_only)
        default = retriever.search(question)
        variants = len(default.diagnostics.variants)
        right = f"default: {' + '.join(names)}, {variants} variants, RRF"
        print(f"Q: {question}")
        print("\n".join(render.variant_lines(default)))
        print("\n".join(side_by_side(single, default, right)))
        print(f"time: single {single.diagnostics.total_ms:.2f} ms; default: {render.timing_line(default)}\n")


def converse(retriever: MultiQueryRetriever, history: list[str], question: str) -> None:
    """A follow-up question searched alone (left) and with the turns before it (right)."""
    alone = retriever.search(question)
    followed = retriever.search(question, history=history)
    print("A follow-up question in a conversation, searched by the default alone (left) and with the")
    print("turns before it (right): search(question, history=[...]), `fanfuse search --history FILE`.\n")
    for turn in history:
        print(f"earlier turn: {turn}")
    print(f"Q: {question}")
    print("\n".join(render.variant_lines(followed)))
    print("\n".join(side_by_side(alone, followed, "with its history", left="the question alone")))
    print(f"time: alone {alone.diagnostics.total_ms:.2f} ms; with history: {render.timing_line(followed)}\n")
