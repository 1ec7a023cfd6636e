"""A generated corpus and queries (seeded): made-up words that no stemmer or stopword list touches,
Zipf-distributed like real text, with metadata to filter on. The twin of the MT-RAG data in the
database tests, and what they use where the real data is absent."""

from __future__ import annotations

import random
from typing import Any

SYLLABLES = ["zor", "bak", "tum", "kel", "dax", "rup", "gol", "fet", "vin", "prak", "lund", "mox"]
TEAMS = ["x", "y", "z"]


def vocabulary(size: int, seed: int = 7) -> list[str]:
    rng = random.Random(seed)
    words: list[str] = []
    while len(words) < size:
        word = "".join(rng.choice(SYLLABLES) for _ in range(rng.choice((2, 3))))
        if word not in words:
            words.append(word)
    return words


def corpus(count: int = 400, vocabulary_size: int = 300, seed: int = 7) -> list[dict[str, Any]]:
    """`count` documents `{"id", "title", "text", "team", "year"}`, 15-60 words of text each."""
    rng = random.Random(seed)
    words = vocabulary(vocabulary_size, seed)
    weights = [1.0 / (rank + 1) for rank in range(len(words))]
    documents = []
    for i in range(count):
        text = " ".join(rng.choices(words, weights, k=rng.randint(15, 60)))
        title = " ".join(rng.choices(words, weights, k=rng.randint(1, 3)))
        documents.append(
            {"id": f"g{i:04d}", "title": title, "text": text, "team": TEAMS[i % 3], "year": 2020 + i % 4}
        )
    return documents


def queries(count: int = 40, vocabulary_size: int = 300, seed: int = 11) -> list[str]:
    """`count` queries of 2-4 words, drawn from the middle of the vocabulary (rarer words than the
    most frequent ones, so rankings are informative)."""
    rng = random.Random(seed)
    words = vocabulary(vocabulary_size, 7)[5:120]
    return [" ".join(rng.sample(words, rng.randint(2, 4))) for _ in range(count)]
