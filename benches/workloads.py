"""The inputs every benchmark uses: R ranked lists of n ids each, drawn from a shared pool of candidates.

Like real retrievers, the lists of one query overlap (each is a sample of the same candidate pool)
and have no repeats inside a list.
"""

from __future__ import annotations

import random

import numpy as np

N_LISTS, LIST_LEN, POOL, TOP_K = 4, 100, 250, 10


def str_query(rng: random.Random) -> list[list[str]]:
    base = rng.randrange(10**6)
    return [[f"doc-{base + i}" for i in rng.sample(range(POOL), LIST_LEN)] for _ in range(N_LISTS)]


def int64_query(rng: random.Random) -> list[np.ndarray]:
    base = rng.randrange(10**9)
    return [np.array(rng.sample(range(POOL), LIST_LEN), dtype=np.int64) + base for _ in range(N_LISTS)]


def str_batch(n_queries: int, seed: int = 0) -> list[list[list[str]]]:
    rng = random.Random(seed)
    return [str_query(rng) for _ in range(n_queries)]
