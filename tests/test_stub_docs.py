"""The core's documentation has one source, its stubs: every function, class, method and property a
stub documents shows the same docstring at run time (`help()`, a notebook's `?`) as in an editor,
which reads the stub. Enumerated from the stubs, so a new entry point is checked without a new line
here."""

from __future__ import annotations

import ast
import importlib
import inspect
from pathlib import Path
from types import ModuleType

import fanfuse
import pytest

PACKAGE = Path(fanfuse.__file__).parent
# The core's stub and those of its submodules (`_core/_internal.pyi`), each with its module.
SUBMODULE_STUBS = sorted((PACKAGE / "_core").glob("*.pyi"))
STUBS = {PACKAGE / "_core.pyi": importlib.import_module("fanfuse._core")} | {
    stub: importlib.import_module(f"fanfuse._core.{stub.stem}") for stub in SUBMODULE_STUBS
}


def documented(stub: Path, module: ModuleType) -> list[tuple[str, object, str]]:
    """(name, run-time object, stub docstring) of everything the stub documents that exists at run
    time (the stub's private aliases and typed dicts do not; stubtest checks the rest is there)."""
    found = []
    for node in ast.parse(stub.read_text(encoding="utf-8")).body:
        if not isinstance(node, ast.FunctionDef | ast.ClassDef) or not hasattr(module, node.name):
            continue
        runtime = getattr(module, node.name)
        if (doc := ast.get_docstring(node)) is not None:
            found.append((node.name, runtime, doc))
        for member in node.body if isinstance(node, ast.ClassDef) else []:
            if isinstance(member, ast.FunctionDef) and (doc := ast.get_docstring(member)) is not None:
                attribute = inspect.getattr_static(runtime, member.name)
                found.append((f"{node.name}.{member.name}", attribute, doc))
    return found


DOCUMENTED = [entry for stub, module in STUBS.items() for entry in documented(stub, module)]


def test_the_stubs_document_the_entry_points() -> None:
    names = {name for name, _, _ in DOCUMENTED}
    # A sample of each kind, so that a parser that finds nothing fails here, not by running no test.
    assert {"fuse", "Run", "Run.write", "Fused.ids", "FusionModel.load", "FusionError", "fuse_rows"} <= names


@pytest.mark.parametrize(("name", "runtime", "doc"), DOCUMENTED, ids=[name for name, _, _ in DOCUMENTED])
def test_help_shows_the_stub_docstring(name: str, runtime: object, doc: str) -> None:
    # A static method is read through its descriptor, as `help()` reads it.
    shown = runtime.__func__ if isinstance(runtime, staticmethod) else runtime
    assert inspect.getdoc(shown) == doc, f"{name}: help() shows another text than its stub"
