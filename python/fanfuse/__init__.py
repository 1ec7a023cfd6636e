"""fanfuse: multi-query retrieval with a Rust Reciprocal Rank Fusion core.

The fusion entry points are the compiled core itself (no Python wrapper in the hot path):
``rrf`` fuses one query's ranked lists, ``rrf_batch`` many queries in one call with the GIL released,
``fuse`` runs any fusion method over ranked or scored lists and can explain every hit.
``fanfuse.reference`` is the same contract in plain Python, the executable spec.
``MultiQueryRetriever`` (``fanfuse.multiquery``) expands a question, searches every variant with
every retriever concurrently and fuses the lists in one call to the core.
"""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

from fanfuse._core import (
    Contribution,
    Fused,
    FusionError,
    Qrels,
    Run,
    default_threads,
    evaluate,
    fuse,
    fuse_batch,
    fuse_files,
    fuse_runs,
    paired_t_test,
    randomization_test,
    read_qrels,
    read_run,
    rrf,
    rrf_batch,
)
from fanfuse.multiquery import (
    AllBranchesFailed,
    CallableExpander,
    FusedHit,
    HeuristicExpander,
    LLMExpander,
    MultiQueryRetriever,
    Provenance,
    SearchResult,
    StaticExpander,
    VariantCache,
)
from fanfuse.retrievers import DenseRetriever, Hit, TantivyRetriever, TfidfSvdEmbedder

try:
    __version__ = version("fanfuse")
except PackageNotFoundError:  # running from a source tree without installing
    __version__ = "0.0.0"

__all__ = [
    "AllBranchesFailed",
    "CallableExpander",
    "Contribution",
    "DenseRetriever",
    "Fused",
    "FusedHit",
    "FusionError",
    "HeuristicExpander",
    "Hit",
    "LLMExpander",
    "MultiQueryRetriever",
    "Provenance",
    "Qrels",
    "Run",
    "SearchResult",
    "StaticExpander",
    "TantivyRetriever",
    "TfidfSvdEmbedder",
    "VariantCache",
    "__version__",
    "default_threads",
    "evaluate",
    "fuse",
    "fuse_batch",
    "fuse_files",
    "fuse_runs",
    "paired_t_test",
    "randomization_test",
    "read_qrels",
    "read_run",
    "rrf",
    "rrf_batch",
]
