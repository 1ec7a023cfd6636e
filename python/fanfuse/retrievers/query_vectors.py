"""Query vectors for a dense retriever: each text embedded once (a bounded cache), and the texts of
concurrent searches embedded together (micro-batching).

An encoder call has a fixed cost besides its per-text one: the default encoder takes about 4.6 ms for
one query, 3.3 ms a query for four in one call (docs/performance.md). So a search hands all its
variants over in one call (`DenseRetriever.search_batch`), and searches running at once in other
threads (a service's requests) share calls: while one call runs, the texts that arrive wait in a
queue; when it ends, the first waiting caller embeds everything queued in one call and hands each
caller its rows. A caller alone never waits for anyone, and nothing waits for a batch to fill.

A text's vector may differ in the last float bits with the batch it was embedded in (padding and
summation order inside the model), so a search can rank two nearly tied documents differently from
one run to the next; `tests/test_query_vectors.py` checks that rankings agree otherwise.
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence

import numpy as np
import numpy.typing as npt

from fanfuse.errors import InvalidEncoder, OutOfRange
from fanfuse.limits import LIMITS, check_int

__all__ = ["CACHE_SIZE_VARIABLE", "DEFAULT_CACHE_SIZE", "QueryVectors", "cache_size_from_env"]

Embedder = Callable[[Sequence[str]], npt.ArrayLike]
#: Vectors kept by default: 4096 x 384 float32 is 6 MB.
DEFAULT_CACHE_SIZE = 4096
#: The environment variable that sets the default cache size (0 turns the cache off).
CACHE_SIZE_VARIABLE = "FANFUSE_QUERY_CACHE_SIZE"


def cache_size_from_env() -> int:
    """`FANFUSE_QUERY_CACHE_SIZE` as an int >= 0, else `DEFAULT_CACHE_SIZE`."""
    text = os.environ.get(CACHE_SIZE_VARIABLE)
    if text is None or not text.strip():
        return DEFAULT_CACHE_SIZE
    try:
        size = int(text)
    except ValueError:
        accepted = LIMITS["query_cache_size"].accepted()
        raise OutOfRange(f"{CACHE_SIZE_VARIABLE} must be {accepted} (0: no cache) (got {text!r})") from None
    return check_cache_size(size, CACHE_SIZE_VARIABLE)


def check_cache_size(size: object, name: str = "query_cache_size") -> int:
    return check_int("query_cache_size", size, name)


def embedded(embed: Embedder, texts: Sequence[str]) -> npt.NDArray[np.float32]:
    """`embed(texts)` as a float32 matrix with one row per text, or an error saying what came back."""
    vectors = np.asarray(embed(texts), dtype=np.float32)
    if vectors.ndim != 2 or vectors.shape[0] != len(texts):
        raise InvalidEncoder(
            f"embedding function returned shape {vectors.shape} for {len(texts)} texts; "
            f"expected a 2-D array with one row per text"
        )
    if not np.isfinite(vectors).all():
        raise InvalidEncoder("the embedding function returned NaN or infinite values")
    return vectors


class _Waiting:
    """One caller's texts in the queue; `ready` is set when its rows (or error) are in, or when it is
    to lead the next call (neither is in)."""

    __slots__ = ("error", "ready", "rows", "texts")

    def __init__(self, texts: list[str]) -> None:
        self.texts = texts
        self.ready = threading.Event()
        self.rows: npt.NDArray[np.float32] | None = None
        self.error: BaseException | None = None


class QueryVectors:
    """`embed` with a cache of `cache_size` vectors (least recently used out) and micro-batching;
    thread-safe. Call it with a list of texts: one row per text, as `embed` would return."""

    def __init__(self, embed: Embedder, cache_size: int = DEFAULT_CACHE_SIZE) -> None:
        self.embed = embed
        self._cache_size = check_cache_size(cache_size)
        self._cache: OrderedDict[str, npt.NDArray[np.float32]] = OrderedDict()
        self._lock = threading.Lock()
        self._queue: list[_Waiting] = []
        self._busy = False
        # The rows of the call that just ended, for the callers that queued while it ran: with the
        # cache off, two branches of one search asking for the same text at once still embed it once.
        self._just_embedded: dict[str, npt.NDArray[np.float32]] = {}

    @property
    def cache_size(self) -> int:
        return self._cache_size

    @cache_size.setter
    def cache_size(self, size: int) -> None:
        with self._lock:
            self._cache_size = check_cache_size(size)
            while len(self._cache) > self._cache_size:
                self._cache.popitem(last=False)

    def __call__(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        rows: dict[str, npt.NDArray[np.float32]] = {}
        with self._lock:
            for text in texts:
                if (row := self._cache.get(text)) is not None:
                    self._cache.move_to_end(text)
                    rows[text] = row
        missing = list(dict.fromkeys(t for t in texts if t not in rows))
        if missing:
            rows.update(zip(missing, self._embed_queued(missing), strict=True))
        if not rows:
            return embedded(self.embed, [])
        return np.stack([rows[text] for text in texts])

    def _embed_queued(self, texts: list[str]) -> npt.NDArray[np.float32]:
        waiting = _Waiting(texts)
        with self._lock:
            self._queue.append(waiting)
            lead = not self._busy
            self._busy = True
        if not lead:
            waiting.ready.wait()
        if waiting.rows is None and waiting.error is None:  # this caller leads the next call
            self._embed_all_queued()
        if waiting.error is not None:
            raise waiting.error
        assert waiting.rows is not None
        return waiting.rows

    def _embed_all_queued(self) -> None:
        """One encoder call for every text queued now; then the next waiting caller leads. A text the
        call that just ended embedded (two searches, or two branches of one, asking for it at once)
        is not embedded again. The new rows are cached before anyone is handed theirs, so a text
        asked for after one caller has its rows is never embedded twice while the cache keeps it."""
        with self._lock:
            batch, self._queue = self._queue, []
            known: dict[str, npt.NDArray[np.float32]] = {}
            for text in (t for w in batch for t in w.texts):
                row = self._cache.get(text)
                if row is None:
                    row = self._just_embedded.get(text)
                if row is not None:
                    known[text] = row
        fresh: dict[str, npt.NDArray[np.float32]] = {}
        try:
            unique = list(dict.fromkeys(t for w in batch for t in w.texts if t not in known))
            if unique:
                # Copies: a cached row must not keep the whole batch's matrix alive.
                matrix = embedded(self.embed, unique)
                fresh = {text: matrix[i].copy() for i, text in enumerate(unique)}
            rows = {**known, **fresh}
            for waiting in batch:
                waiting.rows = np.stack([rows[t] for t in waiting.texts])
        except BaseException as error:
            for waiting in batch:
                waiting.error = error
        finally:
            with self._lock:
                self._remember(fresh)
                if self._queue:
                    self._just_embedded = fresh
                    self._queue[0].ready.set()
                else:
                    self._just_embedded = {}
                    self._busy = False
            for waiting in batch:
                waiting.ready.set()

    def _remember(self, fresh: Mapping[str, npt.NDArray[np.float32]]) -> None:
        """Cache the rows just embedded (the lock held), the least recently used out."""
        if not self._cache_size:
            return
        for text, row in fresh.items():
            self._cache[text] = row
            self._cache.move_to_end(text)
        while len(self._cache) > self._cache_size:
            self._cache.popitem(last=False)
