"""The CPythons the package claims are the ones it builds wheels for: `requires-python` and the
classifiers of pyproject.toml name the versions of the Makefile's PYTHON_VERSIONS (`make wheels`), and
the interpreters CI tests beyond the development one (OTHER_PYTHONS) are among them. And the package
imports on the oldest of them: no module imports at run time a name `typing` gained later (such a name
comes from `typing_extensions` under `TYPE_CHECKING`; annotations are strings)."""

from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

if sys.version_info < (3, 11):
    tomllib = pytest.importorskip("tomli")
else:
    import tomllib


def make_list(name: str) -> list[str]:
    match = re.search(rf"^{name} := (.*)$", (ROOT / "Makefile").read_text(encoding="utf-8"), re.MULTILINE)
    assert match, f"the Makefile has no {name}"
    return match.group(1).split()


def test_the_claimed_versions_are_the_built_ones() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    built = make_list("PYTHON_VERSIONS")
    classified = [
        c.rsplit(" :: ", 1)[1]
        for c in project["classifiers"]
        if re.fullmatch(r"Programming Language :: Python :: 3\.\d+", c)
    ]
    assert classified == built
    assert project["requires-python"] == f">={built[0]}"
    assert set(make_list("OTHER_PYTHONS")) <= set(built)
    assert f"{sys.version_info[0]}.{sys.version_info[1]}" in built


# What `typing` gained after 3.10, by version (the "What's New" pages of 3.11, 3.12 and 3.13).
NEWER_TYPING = {
    (3, 11): {
        "Self", "LiteralString", "Never", "assert_never", "assert_type", "reveal_type",
        "dataclass_transform", "Required", "NotRequired", "TypeVarTuple", "Unpack",
        "get_overloads", "clear_overloads",
    },
    (3, 12): {"override", "TypeAliasType", "get_original_bases"},
    (3, 13): {"ReadOnly", "TypeIs", "NoDefault", "get_protocol_members", "is_protocol"},
}  # fmt: skip


def _oldest_python() -> tuple[int, int]:
    requires = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"][
        "requires-python"
    ]
    found = re.fullmatch(r">=(\d+)\.(\d+)", requires)
    assert found, f"requires-python {requires!r} names no lowest version"
    return int(found.group(1)), int(found.group(2))


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _runtime_typing_imports(tree: ast.Module) -> list[tuple[int, str]]:
    """(line, name) of every ``from typing import name`` outside an ``if TYPE_CHECKING:`` block."""
    found: list[tuple[int, str]] = []

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            for child in node.orelse:
                visit(child)
            return
        if isinstance(node, ast.ImportFrom) and node.module == "typing":
            found.extend((node.lineno, alias.name) for alias in node.names)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(tree)
    return sorted(found)


def test_no_module_imports_at_run_time_a_typing_name_newer_than_the_oldest_python() -> None:
    oldest = _oldest_python()
    newer = {name for version, names in NEWER_TYPING.items() if version > oldest for name in names}
    offenders = [
        f"{path.relative_to(ROOT)}:{line} imports typing.{name}"
        for path in sorted((ROOT / "python" / "fanfuse").rglob("*.py"))
        for line, name in _runtime_typing_imports(ast.parse(path.read_text(encoding="utf-8")))
        if name in newer
    ]
    assert offenders == [], f"not in Python {oldest[0]}.{oldest[1]}'s typing: {offenders}"


def test_the_scan_finds_a_runtime_import_and_skips_one_under_type_checking() -> None:
    source = (
        "from typing import Self\n"
        "if TYPE_CHECKING:\n    from typing import Unpack\n"
        "def f():\n    from typing import Never\n"
    )
    assert _runtime_typing_imports(ast.parse(source)) == [(1, "Self"), (5, "Never")]
