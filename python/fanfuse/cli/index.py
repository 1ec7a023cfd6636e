"""`fanfuse index CORPUS.jsonl --index DIR`: build (or atomically rebuild) a Tantivy BM25 index."""

from __future__ import annotations

import argparse
import sys
import time
from typing import Any

from fanfuse._core import FusionError
from fanfuse.cli.progress import ProgressBar
from fanfuse.corpus import Fields, count_lines, read_jsonl
from fanfuse.retrievers.tantivy_index import TantivyRetriever


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "index",
        help="index a JSONL corpus for `fanfuse search`",
        description="Index a JSONL corpus (one JSON object per line, plain or .gz) into a Tantivy BM25 "
        "index directory. Fields other than id, text and title become filterable metadata. An existing "
        "index is replaced only once the new one is complete.",
    )
    parser.add_argument("corpus", metavar="CORPUS.jsonl", help="the documents, one JSON object per line")
    parser.add_argument("--index", required=True, metavar="DIR", help="the index directory to write")
    parser.add_argument("--id-field", default="id", help="key of the document id (default: id)")
    parser.add_argument("--text-field", default="text", help="key of the text (default: text)")
    parser.add_argument("--title-field", default="title", help="key of the optional title (default: title)")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    fields = Fields(id=args.id_field, text=args.text_field, title=args.title_field)
    started = time.perf_counter()
    try:
        # Counting the lines first costs a read of the file; only worth it when a bar is shown.
        progress = ProgressBar("indexing")
        if progress.enabled:
            progress.total = count_lines(args.corpus)
        try:
            index = TantivyRetriever.build(read_jsonl(args.corpus, fields), args.index, progress=progress)
        finally:
            progress.close()
    except FusionError as error:
        print(f"fanfuse index: error: {error}", file=sys.stderr)
        return 2
    seconds = time.perf_counter() - started
    print(f"indexed {len(index)} documents into {args.index} in {seconds:.1f} s")
    return 0
