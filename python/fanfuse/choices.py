"""The names each of the core's choices accepts, as types: a ``Literal`` of each table the core
publishes (``fanfuse.METHODS``, ``NORMS``, ...), in the same order (``tests/test_name_lists.py`` holds
each to its table). Every entry point that takes a choice declares it with these, so that a type
checker refuses a misspelled method, norm or format before the core does; a caller's own code can
annotate with them too (``method: fanfuse.choices.Method``)."""

from __future__ import annotations

from typing import Literal

__all__ = [
    "AnyMethod",
    "DuplicatePolicy",
    "Method",
    "Norm",
    "RankFrom",
    "RunFormat",
    "TieBreak",
    "TrainedMethod",
]

#: The fusion methods of ``fanfuse.METHODS``: the rank and score methods.
Method = Literal[
    "rrf", "isr", "log_isr", "logn_isr", "rbc", "bordafuse", "w_bordafuse", "condorcet", "w_condorcet",
    "combsum", "combmnz", "combmax", "combmin", "combmed", "combanz", "combgmnz", "wsum", "wmnz", "mixed",
    "dbsf", "relative_score",
]  # fmt: skip
#: The methods trained on relevance judgments (``fanfuse.TRAINED_METHODS``).
TrainedMethod = Literal["probfuse", "segfuse", "slidefuse", "bayesfuse", "posfuse", "mapfuse"]
#: Every method a run fusion takes: a plain one, or a trained one with its model.
AnyMethod = Literal[Method, TrainedMethod]
#: Score normalisations of the score methods (``fanfuse.NORMS``).
Norm = Literal["none", "min-max", "min-max-inverted", "max", "sum", "zmuv", "rank", "borda"]
#: The order of equal fused scores (``fanfuse.TIE_BREAKS``).
TieBreak = Literal["rank", "id"]
#: What an id repeated in one list means (``fanfuse.DUPLICATE_POLICIES``).
DuplicatePolicy = Literal["first", "max", "sum"]
#: Where a run's ranks come from (``fanfuse.RANK_SOURCES``).
RankFrom = Literal["score", "rank", "file"]
#: The formats a run is written in (``fanfuse.RUN_FORMATS``).
RunFormat = Literal["trec", "mtrag"]
