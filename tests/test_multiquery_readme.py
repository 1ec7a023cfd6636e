"""The README's multi-query example runs and its comments tell the truth."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

README = Path(__file__).resolve().parents[1] / "README.md"


def test_readme_multiquery_example_runs() -> None:
    section = README.read_text(encoding="utf-8").split("## Multi-query retrieval", 1)[1]
    code = re.search(r"```python\n(.*?)```", section, re.DOTALL)
    assert code is not None
    namespace: dict[str, Any] = {}
    exec(code.group(1), namespace)
    result = namespace["result"]
    assert result.ids == ["rrf"]
    assert [v.text for v in result.diagnostics.variants] == [
        "what is reciprocal rank fusion?",
        "reciprocal rank fusion",
    ]
    first = result.hits[0].provenance[0]
    assert (first.retriever, first.rank) == ("kw", 1)
