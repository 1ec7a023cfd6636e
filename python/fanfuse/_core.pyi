"""Type stub and documentation of the compiled core ``fanfuse._core`` (checked by mypy.stubtest)."""

from collections.abc import Iterable, Iterator, Sequence
from typing import Literal, SupportsIndex, final

import numpy as np
import numpy.typing as npt

__all__ = ["Fused", "FusionError", "_kernel_seconds", "default_threads", "rrf", "rrf_batch"]

# Private aliases (underscored: they exist only in the stub).
_Id = str | int
_IdList = Sequence[str] | Sequence[int] | npt.NDArray[np.integer] | Iterable[_Id]
_TieBreak = Literal["rank", "id"]

class FusionError(ValueError):
    """Invalid fusion input: the message names the argument (or file:line) and what is accepted."""

@final
class Fused:
    """The result of one fusion: ``ids`` and ``scores`` aligned, best first.

    Iterating yields ``(id, score)`` pairs; ``len()`` is the number of hits; ``fused[i]`` is a pair.
    Treat ``ids`` and ``scores`` as read-only.
    """

    @property
    def ids(self) -> list[_Id]:
        """Fused ids, best first: str or int, like the input."""
    @property
    def scores(self) -> list[float]:
        """Fused scores, aligned with ``ids``."""
    def __len__(self) -> int: ...
    def __getitem__(self, index: int, /) -> tuple[_Id, float]: ...
    def __iter__(self) -> Iterator[tuple[_Id, float]]: ...
    def __eq__(self, other: object, /) -> bool: ...

def rrf(
    lists: Iterable[_IdList],
    /,
    *,
    k: float = 60.0,
    weights: Sequence[float] | npt.NDArray[np.floating] | None = None,
    top_k: SupportsIndex | None = None,
    tie_break: _TieBreak | str = "rank",
) -> Fused:
    """Weighted Reciprocal Rank Fusion of ranked id lists (the contract in DESIGN.md).

    ``score(d) = sum_i weights[i] / (k + rank_i(d))`` with 1-based ranks, summed in list order.

    Args:
        lists: ranked lists, best first. Each a list/tuple of ``str`` ids, of ``int`` ids, or a 1-D
            NumPy integer array (read without a Python object per element). All ids of one call are
            str, or all int (signed 64-bit). A repeated id inside one list counts at its first position.
        k: finite float > 0. 60 matches Elasticsearch, ranx and pyserini; 59 matches LlamaIndex/Weaviate.
        weights: one finite weight >= 0 per list (None: all 1.0). A weight-0 list is ignored entirely.
        top_k: keep the first ``top_k`` hits (None: all). Equal to the prefix of the full ranking.
        tie_break: ``"rank"`` (equal scores: better best rank first, then the earlier list) or
            ``"id"`` (ascending id, as pyserini and trectools).

    Raises:
        FusionError: a bad option value (k, weights, top_k, tie_break) or an id out of range.
        TypeError: a wrong type, such as mixed str and int ids or a float id.

    The GIL is released while the kernel runs; the function is safe to call from many threads.
    """

def rrf_batch(
    queries: Iterable[Iterable[_IdList]],
    /,
    *,
    k: float = 60.0,
    weights: Sequence[float] | npt.NDArray[np.floating] | None = None,
    top_k: SupportsIndex | None = None,
    tie_break: _TieBreak | str = "rank",
    threads: int | None = None,
) -> list[Fused]:
    """``[rrf(lists, ...) for lists in queries]`` in one call across the boundary.

    Queries are copied into Rust 64 at a time and each chunk is fused with the GIL released. With
    ``threads`` > 1 (default: ``FANFUSE_NUM_THREADS``, else 1) batches of 256 queries or more run
    on a thread pool that fuses one chunk while the calling thread copies the next. In a forked
    child the batch always runs serially. Every query's ids are str, or every query's are int.
    ``weights``, when given, must have one entry per list for every query.
    """

def default_threads() -> int:
    """Threads ``rrf_batch`` uses by default: ``FANFUSE_NUM_THREADS``, else 1 (always 1 after fork)."""

def _kernel_seconds(
    queries: Iterable[Iterable[_IdList]],
    /,
    *,
    top_k: SupportsIndex | None = None,
    repeat: int = 1,
) -> float:
    """Seconds the bare kernel takes for the batch on one thread (benchmarks only, not public API).

    No copying out of Python and no result objects: 64 queries are copied at a time, as in
    ``rrf_batch``, then the kernel is timed on them (best of ``repeat``) and the chunks are summed.
    """
