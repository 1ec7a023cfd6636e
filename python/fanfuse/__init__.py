"""fanfuse: multi-query retrieval with a Rust Reciprocal Rank Fusion core.

The fusion entry points are the compiled core itself (no Python wrapper in the hot path):
``rrf`` fuses one query's ranked lists, ``rrf_batch`` many queries in one call with the GIL released.
``fanfuse.reference`` is the same contract in plain Python, the executable spec.
"""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

from fanfuse._core import (
    Fused,
    FusionError,
    Qrels,
    Run,
    default_threads,
    evaluate,
    fuse_files,
    fuse_runs,
    paired_t_test,
    randomization_test,
    read_qrels,
    read_run,
    rrf,
    rrf_batch,
)

try:
    __version__ = version("fanfuse")
except PackageNotFoundError:  # running from a source tree without installing
    __version__ = "0.0.0"

__all__ = [
    "Fused",
    "FusionError",
    "Qrels",
    "Run",
    "__version__",
    "default_threads",
    "evaluate",
    "fuse_files",
    "fuse_runs",
    "paired_t_test",
    "randomization_test",
    "read_qrels",
    "read_run",
    "rrf",
    "rrf_batch",
]
