"""`fanfuse index CORPUS.jsonl --index DIR [--dense]`: build (or atomically rebuild) a Tantivy BM25
index, and with `--dense` store the documents' neural vectors in it (the built-in model)."""

from __future__ import annotations

import argparse
import functools
import sys
import time
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

from fanfuse.cli.paths import add_input, add_output_directory, add_stdout
from fanfuse.cli.progress import ProgressBar
from fanfuse.corpus import Document, Fields, count_lines, read_jsonl
from fanfuse.errors import InvalidCorpus
from fanfuse.index_retriever import EMBED_HINT
from fanfuse.retrievers.default_encoder import embed_extra_installed
from fanfuse.retrievers.tantivy_index import TantivyRetriever


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "index",
        help="index a JSONL corpus for `fanfuse search`",
        description="Index a JSONL corpus (one JSON object per line, plain or .gz) into a Tantivy BM25 "
        "index directory. Fields other than id, text and title become filterable metadata. An existing "
        "index is replaced only once the new one is complete.",
    )
    add_input(
        parser,
        "corpus",
        kind="corpus",
        metavar="CORPUS.jsonl",
        help="the documents, one JSON object per line",
    )
    add_output_directory(parser, "--index", required=True, metavar="DIR", help="the index directory to write")
    parser.add_argument("--id-field", default="id", help="key of the document id (default: id)")
    parser.add_argument("--text-field", default="text", help="key of the text (default: text)")
    parser.add_argument(
        "--title-field",
        help="key of the optional title (default: title); given, at least one document must have it",
    )
    parser.add_argument(
        "--dense",
        action="store_true",
        help="also embed every document (title and lead text) with the built-in model and store the "
        "vectors in the index, so that `fanfuse search` is hybrid BM25 + dense (needs fanfuse[embed])",
    )
    add_stdout(parser)
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    fields = Fields(id=args.id_field, text=args.text_field, title=args.title_field or Fields().title)
    if args.dense and not embed_extra_installed():  # refused before anything is written
        print(f"fanfuse index: error: --dense needs fanfuse[embed]: {EMBED_HINT}", file=sys.stderr)
        return 2
    started = time.perf_counter()
    # Counting the lines first costs a read of the file; only worth it when a bar is shown.
    progress = ProgressBar("indexing")
    if progress.enabled:
        progress.total = count_lines(args.corpus)
    try:
        documents = read_jsonl(args.corpus, fields)
        index = TantivyRetriever.build(
            documents if args.title_field is None else titled(documents, args.corpus, fields),
            args.index,
            progress=progress,
            then=functools.partial(store_vectors, progress) if args.dense else None,
        )
    finally:
        progress.close()
    seconds = time.perf_counter() - started
    print(f"indexed {len(index)} documents into {args.index} in {seconds:.1f} s")
    return 0


def titled(documents: Iterable[Document], corpus: str, fields: Fields) -> Iterator[Document]:
    """The documents, then InvalidCorpus if none had a title under the key --title-field named: the
    flag would have done nothing, and a misspelt key would index no title, silently. Raised as the
    last document is read, so the new index is never published."""
    documents = iter(documents)
    keys: list[str] = []
    for document in documents:
        yield document
        if document.title:
            yield from documents
            return
        keys = keys or [fields.id, fields.text, *document.metadata]
    raise InvalidCorpus(
        f"{corpus}: no document has a title under {fields.title!r} (--title-field); the first one's keys: "
        f"{', '.join(keys)}; drop --title-field or give the key of the titles"
    )


def store_vectors(indexing: ProgressBar, version: Path, documents: Sequence[Document]) -> None:
    """Embeds the documents with the built-in model into the new version of the index, which becomes
    current only after: a failure or Ctrl-C leaves the previous index (and its vectors) as they were."""
    from fanfuse.retrievers.default_encoder import default_encoder
    from fanfuse.retrievers.dense_index import embed_documents, write_dense_index

    indexing.close()
    started = time.perf_counter()
    encoder = default_encoder()
    progress = ProgressBar(f"embedding with {encoder.name}", len(documents))
    try:
        vectors = embed_documents(documents, encoder, progress)
    finally:
        progress.close()
    write_dense_index(version, [doc.id for doc in documents], vectors, encoder)
    seconds = time.perf_counter() - started
    print(f"embedded {len(documents)} documents with {encoder.name} in {seconds:.1f} s")
