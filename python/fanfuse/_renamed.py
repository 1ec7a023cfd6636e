"""Old spellings of public modules and names: each refused with a message naming the new one.

One table, read two ways: importing an old module path (``import fanfuse.runs``, ``from
fanfuse.retrievers.langchain import ...``) raises ``ImportError`` from a finder placed last
on ``sys.meta_path``, so it answers only for a module that no longer exists; an old attribute of the
package (``fanfuse.runs``) raises ``AttributeError`` from ``fanfuse.__getattr__``. A renamed spelling
keeps no second path to the same code: the message is the only thing it gives.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from importlib.machinery import ModuleSpec
from types import ModuleType

# Old dotted name -> where its content is now.
RENAMED: dict[str, str] = {
    "fanfuse.default_search": "fanfuse.index_retriever",
    "fanfuse.runs": (
        "fanfuse.run_scores (RunScores, score_run, with_means, DEFAULT_METRICS) "
        "and fanfuse.tables (to_pandas, from_frame)"
    ),
    "fanfuse.retrievers.langchain": "fanfuse.integrations.langchain",
    "fanfuse.retrievers.llamaindex": "fanfuse.integrations.llamaindex",
    "fanfuse.retrievers.haystack": "fanfuse.integrations.haystack",
    "fanfuse.retrievers.interop": "fanfuse.integrations.conversion",
    "fanfuse.multiquery.expand.named": "fanfuse.multiquery.retriever_names",
    "fanfuse.multiquery.expand.plain": "fanfuse.multiquery.plain_text",
    "fanfuse.json_data": "fanfuse.multiquery.result_json (as_data) and fanfuse.jsonl (json_line)",
}


def message(old: str) -> str:
    return f"{old} is renamed: use {RENAMED[old]}"


class RenamedModules:
    """A meta path finder that refuses the old module paths of ``RENAMED``."""

    @staticmethod
    def find_spec(
        fullname: str, path: Sequence[str] | None = None, target: ModuleType | None = None
    ) -> ModuleSpec | None:
        if fullname in RENAMED:
            raise ImportError(message(fullname), name=fullname)
        return None


def install() -> None:
    """Puts the finder last on ``sys.meta_path`` (once): a module that exists is found before it."""
    if not any(isinstance(finder, RenamedModules) for finder in sys.meta_path):
        sys.meta_path.append(RenamedModules())
