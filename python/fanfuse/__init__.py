"""fanfuse: multi-query retrieval with a Rust Reciprocal Rank Fusion core.

The fusion entry points are the compiled core itself (no Python wrapper in the hot path):
``rrf`` fuses one query's ranked lists, ``rrf_batch`` many queries in one call with the GIL released,
``fuse`` runs any fusion method over ranked or scored lists and can explain every hit.
``fanfuse.reference`` is the same contract in plain Python, the executable spec.
``MultiQueryRetriever`` (``fanfuse.multiquery``) expands a question, searches every variant with
every retriever concurrently and fuses the lists in one call to the core; ``open_index(path)`` is
the one `fanfuse search --index PATH` uses (BM25, plus neural dense where the index stores vectors).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from fanfuse import _renamed, errors
from fanfuse._contribution import Contribution
from fanfuse._core import (
    DUPLICATE_POLICIES,
    METHOD_PARAMETERS,
    METHODS,
    NORMS,
    RANK_SOURCES,
    RUN_FORMATS,
    SCORE_METHODS,
    TIE_BREAKS,
    TRAINED_METHODS,
    Fused,
    FusionModel,
    Qrels,
    Run,
    default_threads,
    evaluate,
    fuse,
    fuse_batch,
    fuse_files,
    fuse_runs,
    metric_depth,
    paired_t,
    randomization_test,
    read_qrels,
    read_run,
    rrf,
    rrf_batch,
    train_fusion,
    tukey_hsd,
    wilcoxon_test,
)
from fanfuse.errors import *  # noqa: F403
from fanfuse.options import FusionOptions

_renamed.install()  # old module paths are refused naming the new ones

if TYPE_CHECKING:
    from fanfuse.index_retriever import open_index
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
    from fanfuse.report import Report, compare
    from fanfuse.retrievers import DenseRetriever, Hit, TantivyRetriever, TfidfSvdEmbedder
    from fanfuse.tables import evaluate_table, fuse_table

    __version__: str

# The retrieval stack (asyncio, NumPy, Tantivy) is imported on first use, not by `import fanfuse`:
# importing it takes ~0.4 s, and `fanfuse fuse` / `eval` / `tune` need only the core.
_LAZY = {
    **dict.fromkeys(
        [
            "AllBranchesFailed",
            "CallableExpander",
            "FusedHit",
            "HeuristicExpander",
            "LLMExpander",
            "MultiQueryRetriever",
            "Provenance",
            "SearchResult",
            "StaticExpander",
            "VariantCache",
        ],
        "fanfuse.multiquery",
    ),
    **dict.fromkeys(["DenseRetriever", "Hit", "TantivyRetriever", "TfidfSvdEmbedder"], "fanfuse.retrievers"),
    "open_index": "fanfuse.index_retriever",
    **dict.fromkeys(["fuse_table", "evaluate_table"], "fanfuse.tables"),
    **dict.fromkeys(["Report", "compare"], "fanfuse.report"),
}
_SUBMODULES = {
    "choices",
    "multiquery",
    "retrievers",
    "run_scores",
    "reference",
    "report",
    "tune",
    "corpus",
    "tables",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        value = getattr(importlib.import_module(_LAZY[name]), name)
    elif name in _SUBMODULES:
        value = importlib.import_module(f"fanfuse.{name}")
    elif name == "__version__":
        value = _installed_version()
    else:
        _renamed.refuse(__name__, name)
    globals()[name] = value  # later look-ups find it directly
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})


def _installed_version() -> str:
    # importlib.metadata costs ~0.15 s to import: only `fanfuse.__version__` pays it.
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("fanfuse")
    except PackageNotFoundError:  # running from a source tree without installing
        return "0.0.0"


__all__ = [
    "DUPLICATE_POLICIES",
    "METHODS",
    "METHOD_PARAMETERS",
    "NORMS",
    "RANK_SOURCES",
    "RUN_FORMATS",
    "SCORE_METHODS",
    "TIE_BREAKS",
    "TRAINED_METHODS",
    "AllBranchesFailed",
    "CallableExpander",
    "Contribution",
    "DenseRetriever",
    "Fused",
    "FusedHit",
    "FusionModel",
    "FusionOptions",
    "HeuristicExpander",
    "Hit",
    "LLMExpander",
    "MultiQueryRetriever",
    "Provenance",
    "Qrels",
    "Report",
    "Run",
    "SearchResult",
    "StaticExpander",
    "TantivyRetriever",
    "TfidfSvdEmbedder",
    "VariantCache",
    "__version__",
    "compare",
    "default_threads",
    "evaluate",
    "evaluate_table",
    "fuse",
    "fuse_batch",
    "fuse_files",
    "fuse_runs",
    "fuse_table",
    "metric_depth",
    "open_index",
    "paired_t",
    "randomization_test",
    "read_qrels",
    "read_run",
    "rrf",
    "rrf_batch",
    "train_fusion",
    "tukey_hsd",
    "wilcoxon_test",
]
__all__ += errors.__all__  # the error classes: one list, errors.__all__
