"""``VariantCache``: remembers expansions (LRU with a time to live), so a repeated question does not
pay for the LLM again. Keyed by the expander's settings, the strategy, the variant budget, the query
and the conversation before it.

Thread-safe (one lock; every operation is O(1)). Only successful expansions are stored: a fallback
after an LLM error is not cached, so the next call tries the model again.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Hashable

from fanfuse.limits import check_int, optional_float
from fanfuse.multiquery.conversation import History
from fanfuse.multiquery.expand.expanders import Expansion

__all__ = ["VariantCache"]


class VariantCache:
    """At most ``maxsize`` expansions, each kept for ``ttl`` seconds (None: until evicted)."""

    def __init__(
        self, maxsize: int = 1024, ttl: float | None = 600.0, *, clock: Callable[[], float] = time.monotonic
    ):
        self.maxsize = check_int("maxsize", maxsize)
        self.ttl = optional_float("ttl", ttl)
        self._clock = clock
        self._lock = threading.Lock()
        self._entries: OrderedDict[Hashable, tuple[float, Expansion]] = OrderedDict()
        self.hits = 0
        self.misses = 0

    @staticmethod
    def key(
        expander_key: Hashable, strategy: str | None, max_variants: int, query: str, history: History = ()
    ) -> Hashable:
        return (expander_key, strategy, max_variants, query, history)

    def get(self, key: Hashable) -> Expansion | None:
        now, ttl = self._clock(), self.ttl
        with self._lock:
            entry = self._entries.get(key)
            if entry is None or (ttl is not None and now - entry[0] > ttl):
                if entry is not None:
                    del self._entries[key]
                self.misses += 1
                return None
            self._entries.move_to_end(key)
            self.hits += 1
            return entry[1]

    def put(self, key: Hashable, expansion: Expansion) -> None:
        if expansion.fallback_reason is not None:
            return
        now = self._clock()
        with self._lock:
            self._entries[key] = (now, expansion)
            self._entries.move_to_end(key)
            while len(self._entries) > self.maxsize:
                self._entries.popitem(last=False)

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()

    def __len__(self) -> int:
        return len(self._entries)
