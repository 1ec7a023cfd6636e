"""The README's quick start runs, and prints what its comments say."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

README = Path(__file__).resolve().parents[1] / "README.md"


def quick_start() -> str:
    section = README.read_text(encoding="utf-8").split("## Quick start", 1)[1]
    match = re.search(r"```python\n(.*?)```", section, re.DOTALL)
    assert match, "the Quick start section has no python block"
    return match.group(1)


def test_quick_start_prints_what_its_comments_say() -> None:
    code = quick_start()
    expected = [line.split("  # ", 1)[1] for line in code.splitlines() if line.startswith("print(")]
    assert len(expected) >= 5, "every print line of the quick start ends with '  # <expected output>'"
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, str(README), "exec"), {})
    assert out.getvalue().splitlines() == expected
