"""The error classes (``fanfuse.errors``): each is public and documented, each ends a command with one
line and exit status 2, and every raise that names an optional extra is a ``MissingExtra``."""

from __future__ import annotations

import ast
import re
from pathlib import Path
from typing import Any

import fanfuse
import pytest
from fanfuse import errors
from fanfuse.cli._common import run_command
from fanfuse.multiquery import AllBranchesFailed

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "python" / "fanfuse"
DOCS = ROOT / "docs" / "multiquery.md"
CLASSES = [getattr(errors, name) for name in errors.__all__] + [AllBranchesFailed]


def _instance(cls: type[Exception], message: str) -> Exception:
    if cls is errors.MissingExtra:
        return errors.MissingExtra(message, extra="embed")
    if cls is AllBranchesFailed:
        return AllBranchesFailed(message, [])
    return cls(message)


def test_every_error_class_is_public_and_in_the_documented_table() -> None:
    table = DOCS.read_text(encoding="utf-8").split("## Errors", 1)[1].split("\n## ", 1)[0]
    rows = set(re.findall(r"^\| `(\w+)`(?:, its `(\w+)`)?", table, re.M))
    documented = {name for row in rows for name in row if name}
    assert len(CLASSES) >= 8
    for cls in CLASSES:
        assert getattr(fanfuse, cls.__name__) is cls, cls.__name__
        assert cls.__name__ in fanfuse.__all__, cls.__name__
        assert cls.__name__ in documented, f"{cls.__name__} is not in docs/multiquery.md's Errors table"


def test_the_refusals_of_input_are_value_errors_and_the_rest_say_what_they_are() -> None:
    for cls in CLASSES:
        if issubclass(cls, errors.MissingExtra):
            assert issubclass(cls, ImportError) and not issubclass(cls, ValueError)
        elif issubclass(cls, errors.SearchFailed):
            assert issubclass(cls, RuntimeError) and not issubclass(cls, ValueError)
        else:
            assert issubclass(cls, ValueError), cls.__name__
    # None of the library's own refusals passes for fusion input.
    for cls in CLASSES:
        if cls is not fanfuse.FusionError:
            assert not issubclass(cls, fanfuse.FusionError), cls.__name__


@pytest.mark.parametrize("cls", CLASSES, ids=lambda cls: cls.__name__)
def test_every_error_class_ends_a_command_with_one_line_and_exit_2(
    cls: type[Exception], capsys: pytest.CaptureFixture[str]
) -> None:
    message = f"what {cls.__name__} says, naming the argument"

    def command() -> int:
        raise _instance(cls, message)

    assert run_command("probe", command) == 2
    assert capsys.readouterr().err == f"fanfuse probe: error: {message}\n"


def _names_an_extra(node: ast.AST) -> bool:
    """Whether an expression's text says to install an extra: a literal with ``pip install`` or
    ``fanfuse[...]``, or a constant named for one (``EMBED_HINT``, ``EMBED_EXTRA``)."""
    for part in ast.walk(node):
        text = part.value if isinstance(part, ast.Constant) and isinstance(part.value, str) else ""
        if "pip install" in text or re.search(r"fanfuse\[\w+\]", text):
            return True
        if isinstance(part, ast.Name) and re.search(r"(_HINT|_EXTRA)$", part.id):
            return True
    return False


def _raised(node: ast.Raise) -> tuple[str, list[Any]] | None:
    call = node.exc
    if isinstance(call, ast.Call):
        func = call.func
        name = func.id if isinstance(func, ast.Name) else getattr(func, "attr", "")
        return name, [*call.args, *(keyword.value for keyword in call.keywords)]
    return None


def test_every_raise_that_names_an_extra_is_a_missing_extra() -> None:
    found: list[str] = []
    checked = 0
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.Raise) or (raised := _raised(node)) is None:
                continue
            name, arguments = raised
            if any(_names_an_extra(argument) for argument in arguments):
                checked += 1
                if name != "MissingExtra":
                    found.append(f"{path.relative_to(ROOT)}:{node.lineno} raises {name}")
    assert checked >= 8, "the walk found the raises that name an extra"
    assert found == []


# The modules whose job is fusion of ranked lists or run files: the only ones that may raise the
# core's FusionError ("fusion input refused"); every other refusal has a class named for it.
FUSION_MODULES = {
    "multiquery/fusion.py": "fuses the ranked lists of a search's branches",
    "tables.py": "fuses tables of ranked lists",
    "tune/": "trains and chooses fusion settings on run files",
    "report/": "compares fused run files",
    "reference.py": "the pure-Python statement of the fusion the core computes",
    "limits.py": "its `core` rows are fusion options, refused as the core refuses them",
    "cli/fuse.py": "the fuse command reads run files",
    "dask/": "reads run files (Parquet, qrels) for distributed fusion",
    "errors.py": "names the core's class among the refusals of input",
}


def _is_fusion_module(path: Path) -> bool:
    name = path.relative_to(PACKAGE).as_posix()
    return any(name == entry or (entry.endswith("/") and name.startswith(entry)) for entry in FUSION_MODULES)


def _fusion_error_uses(tree: ast.AST) -> list[int]:
    """The lines that make, raise or pass on a FusionError (an `except` or an `isinstance` that
    names it only reads it)."""
    reading: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ExceptHandler) and node.type is not None:
            reading.update(id(part) for part in ast.walk(node.type))
        elif isinstance(node, ast.Call) and getattr(node.func, "id", "") in {"isinstance", "issubclass"}:
            reading.update(id(part) for argument in node.args[1:] for part in ast.walk(argument))
    lines = []
    for node in ast.walk(tree):
        named = (isinstance(node, ast.Name) and node.id == "FusionError") or (
            isinstance(node, ast.Attribute) and node.attr == "FusionError"
        )
        renamed = isinstance(node, ast.alias) and node.name == "FusionError" and node.asname is not None
        if (named and id(node) not in reading) or renamed:
            lines.append(getattr(node, "lineno", 0))
    return lines


def test_fusion_error_is_raised_only_by_the_modules_that_fuse() -> None:
    found: list[str] = []
    fusion_uses = 0
    for path in sorted(PACKAGE.rglob("*.py")):
        lines = _fusion_error_uses(ast.parse(path.read_text(encoding="utf-8")))
        if _is_fusion_module(path):
            fusion_uses += len(lines)
        else:
            found += [f"{path.relative_to(ROOT)}:{line} makes a FusionError" for line in lines]
    assert fusion_uses >= 10, "the walk finds the FusionErrors the fusion modules raise"
    for entry in FUSION_MODULES:
        assert (PACKAGE / entry).exists(), f"{entry} is in FUSION_MODULES but not in the package"
    assert found == []


def test_every_error_class_is_raised_somewhere() -> None:
    raised: set[str] = set()
    for path in sorted(PACKAGE.rglob("*.py")):
        if path == PACKAGE / "errors.py":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call):
                func = node.func
                raised.add(func.id if isinstance(func, ast.Name) else getattr(func, "attr", ""))
    # A base class (SearchFailed) is raised as one of its subclasses.
    never = [
        cls.__name__
        for cls in CLASSES
        if not any(issubclass(other, cls) and other.__name__ in raised for other in CLASSES)
    ]
    assert never == []
