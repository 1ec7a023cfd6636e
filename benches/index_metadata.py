"""What storing each document's metadata costs the embedded index, beside the same documents without it.

    PYTHONPATH=python .venv/bin/python benches/index_metadata.py [--documents 20000] [--repeat 3]

One process, best of ``repeat`` interleaved timings: ``TantivyRetriever.build`` of generated documents
of 40 words with three metadata fields (a language, a year, a date-like string) against the same
documents without metadata, and a search of 10 hits over each index. The metadata is stored as its JSON
text and given back as it was given (``fanfuse.retrievers.tantivy_metadata``). Ratios are with / without.
"""

from __future__ import annotations

import argparse
import random
import tempfile
from pathlib import Path

from fanfuse.corpus import Document
from fanfuse.retrievers.tantivy_index import TantivyRetriever
from measuring import best_seconds, load_text, machine

WORDS = [
    "owl",
    "hawk",
    "bat",
    "mole",
    "night",
    "day",
    "prey",
    "hunt",
    "fly",
    "dig",
    "tunnel",
    "bird",
    "mammal",
]


def corpus(documents: int, metadata: bool) -> list[Document]:
    rng = random.Random(0)
    made = []
    for i in range(documents):
        text = " ".join(rng.choice(WORDS) for _ in range(40))
        fields = {"lang": rng.choice(["en", "de"]), "year": rng.randint(1990, 2024)}
        fields["updated"] = f"2020-01-{rng.randint(1, 28):02d}T00:00:00Z"
        made.append(Document(f"d{i}", text, "t", fields if metadata else {}))
    return made


def main() -> None:
    options = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    options.add_argument("--documents", type=int, default=20000)
    options.add_argument("--repeat", type=int, default=3)
    given = options.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        sets = {"with": corpus(given.documents, True), "without": corpus(given.documents, False)}
        builds = {
            f"build {name}": (lambda docs=docs, name=name: TantivyRetriever.build(docs, root / name))
            for name, docs in sets.items()
        }
        built = best_seconds(builds, repeat=given.repeat)
        indexes = {name: TantivyRetriever(root / name) for name in sets}
        searches = {
            f"search {name}": (lambda i=index: i.search("owl hunt", 10)) for name, index in indexes.items()
        }
        searched = best_seconds(searches, repeat=7, number=None)
    print(machine(f"{given.documents} documents"), load_text(), sep="\n")
    for what, best in (("build", built), ("search", searched)):
        (with_name, with_seconds), (without_name, without_seconds) = best.items()
        unit, scale = ("s", 1.0) if what == "build" else ("us", 1e6)
        print(
            f"{what}: {with_name} {with_seconds * scale:.3g} {unit}, {without_name} "
            f"{without_seconds * scale:.3g} {unit}, ratio {with_seconds / without_seconds:.2f}"
        )


if __name__ == "__main__":
    main()
