"""A named choice (a strategy, a format, a role) is checked in one place, `fanfuse.limits.check_choice`:
its refusals, and a scan of the package for a check written by hand instead."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import fanfuse
import pytest
from fanfuse.errors import InvalidConversation, InvalidSetting
from fanfuse.limits import check_choice

PACKAGE = Path(fanfuse.__file__).parent
# Where a check of the form `value not in NAMES: raise` is not a caller's choice, or not ours to word.
NOT_CHOICES = {
    "reference.py": "the spec in plain Python, on its own by design",
    "service/schema.py": "pydantic's validators: the error's location names the field",
}


def test_a_name_among_the_choices_is_returned() -> None:
    assert check_choice("format", "csv", ("table", "csv")) == "csv"
    assert check_choice("method", "rrf", {"rrf": (), "rbc": ()}) == "rrf"  # a dict's keys


def test_another_name_is_refused_by_the_given_error_listing_the_choices() -> None:
    with pytest.raises(InvalidSetting, match=r"^format must be one of table, csv \(got 'tsv'\)$"):
        check_choice("format", "tsv", ("table", "csv"))
    with pytest.raises(InvalidConversation, match=r"^history\[0\]\.role must be one of user \(got 'bot'\)$"):
        check_choice("history[0].role", "bot", ("user",), InvalidConversation)


@pytest.mark.parametrize("value", [3, None, b"csv", ["csv"]])
def test_anything_but_a_str_is_a_type_error(value: object) -> None:
    with pytest.raises(
        TypeError, match=rf"^format must be one of table, csv \(got {type(value).__name__}\)$"
    ):
        check_choice("format", value, ("table", "csv"))


def hand_written_choices() -> list[str]:
    """Each `if name not in CONSTANT: raise ...` of the package, as file:line."""
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        relative = path.relative_to(PACKAGE).as_posix()
        if relative in NOT_CHOICES or relative == "limits.py":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not (isinstance(node, ast.If) and node.body and isinstance(node.body[0], ast.Raise)):
                continue
            test = node.test
            if (
                isinstance(test, ast.Compare)
                and len(test.ops) == 1
                and isinstance(test.ops[0], ast.NotIn)
                and isinstance(test.comparators[0], ast.Name)
                and test.comparators[0].id.isupper()
            ):
                found.append(f"{relative}:{node.lineno}")
    return found


def test_no_choice_is_checked_by_hand() -> None:
    assert hand_written_choices() == [], "check these with fanfuse.limits.check_choice"


def test_the_scan_finds_a_check_written_by_hand(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "mine.py").write_text(
        'NAMES = ("a",)\n\ndef f(x):\n    if x not in NAMES:\n        raise ValueError(x)\n', encoding="utf-8"
    )
    monkeypatch.setattr(sys.modules[__name__], "PACKAGE", tmp_path)
    assert hand_written_choices() == ["mine.py:4"]
