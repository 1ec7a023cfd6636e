"""What the framework adapter tests share: a tiny corpus with metadata, and an async branch that
records the event loop it ran on (to tell an awaited async path from a thread or a background loop)."""

from __future__ import annotations

import asyncio

from fanfuse.retrievers import Hit

DOCS = [
    {"id": "a", "title": "Alpha", "text": "rank fusion merges ranked lists", "team": "x"},
    {"id": "b", "title": "Beta", "text": "reciprocal rank fusion is simple", "team": "y"},
    {"id": "c", "title": "Gamma", "text": "dense vectors and cosine similarity", "team": "x"},
    {"id": "d", "title": "Delta", "text": "cosine of dense ranked vectors", "team": "z"},
]


class LoopRecordingRetriever:
    """An async fanfuse branch returning fixed hits; it records the event loop of every search."""

    def __init__(self, hits: list[Hit]) -> None:
        self.hits = hits
        self.loops: list[asyncio.AbstractEventLoop] = []

    async def search(self, query: str, k: int, filter: object = None) -> list[Hit]:
        self.loops.append(asyncio.get_running_loop())
        return self.hits[:k]
