"""Multi-query retrieval: expand a question into variants, search them all at once, fuse in Rust.

Start with ``MultiQueryRetriever``; docs/multiquery.md walks through the options and diagnostics.
"""

from fanfuse.multiquery.config import MultiQueryConfig
from fanfuse.multiquery.conversation import Turn
from fanfuse.multiquery.diagnostics import (
    AllBranchesFailed,
    BranchReport,
    Diagnostics,
    ExpansionReport,
    FusedHit,
    Provenance,
    SearchResult,
    VariantReport,
)
from fanfuse.multiquery.expand.cache import VariantCache
from fanfuse.multiquery.expand.expanders import (
    CallableExpander,
    CombinedExpander,
    Expander,
    Expansion,
    HeuristicExpander,
    StaticExpander,
    Variant,
)
from fanfuse.multiquery.expand.feedback import FeedbackExpander
from fanfuse.multiquery.expand.history import HistoryExpander
from fanfuse.multiquery.expand.llm import LLMExpander
from fanfuse.multiquery.retriever import MultiQueryRetriever

__all__ = [
    "AllBranchesFailed",
    "BranchReport",
    "CallableExpander",
    "CombinedExpander",
    "Diagnostics",
    "Expander",
    "Expansion",
    "ExpansionReport",
    "FeedbackExpander",
    "FusedHit",
    "HeuristicExpander",
    "HistoryExpander",
    "LLMExpander",
    "MultiQueryConfig",
    "MultiQueryRetriever",
    "Provenance",
    "SearchResult",
    "StaticExpander",
    "Turn",
    "Variant",
    "VariantCache",
    "VariantReport",
]
