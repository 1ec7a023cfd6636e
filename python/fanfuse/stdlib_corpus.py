"""A real corpus every machine has: the documentation of the installed Python standard library.

Module, class, function and method docstrings of the public standard library, plus the language
reference topics of `pydoc_data.topics` (what `help("with")` shows). No download; some 10^4
documents. The demo indexes it once into a user cache directory and reuses it.
"""

from __future__ import annotations

import contextlib
import importlib
import inspect
import io
import os
import pkgutil
import platform
import sys
import tempfile
import types
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from fanfuse.corpus import Document

# Bump when the documents change, so cached indexes of an older shape are rebuilt.
CORPUS_VERSION = 1

# Modules whose import has side effects (opens a browser, prints, starts a GUI or a REPL),
# test suites, and deprecated packages that only warn.
_SKIP = {
    "antigravity", "this", "idlelib", "turtledemo", "test", "tests", "lib2to3", "distutils",
    "ensurepip", "__main__", "readline", "xxlimited", "xxlimited_35", "xxsubtype", "tkinter", "turtle",
}  # fmt: skip


def _skipped(name: str) -> bool:
    return any(part.startswith("_") or part in _SKIP for part in name.split("."))


def _modules() -> Iterator[types.ModuleType]:
    """Import each public standard-library module and submodule, quietly, skipping any that fail."""
    names = sorted(n for n in sys.stdlib_module_names if not _skipped(n))
    seen: set[str] = set()
    while names:
        name = names.pop(0)
        if name in seen:
            continue
        seen.add(name)
        module = _quiet_import(name)
        if module is None:
            continue
        yield module
        if hasattr(module, "__path__"):  # a package: queue its public submodules
            for info in pkgutil.iter_modules(module.__path__, prefix=f"{name}."):
                if not _skipped(info.name):
                    names.append(info.name)


def _quiet_import(name: str) -> types.ModuleType | None:
    with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):
        warnings.simplefilter("ignore")
        try:
            return importlib.import_module(name)
        except Exception:  # a module missing on this platform or build (e.g. no curses): skip it
            return None


def _defined_here(obj: Any, module: types.ModuleType) -> bool:
    """Whether `obj` belongs to `module`'s documentation: defined there, or in its private accelerator
    (`collections.deque` lives in `_collections`, `io.StringIO` in `_io`)."""
    home = getattr(obj, "__module__", None)
    if not isinstance(home, str):
        return False
    return home == module.__name__ or (home.startswith("_") and home.lstrip("_") == module.__name__)


def _public_members(module: types.ModuleType) -> Iterator[tuple[str, Any]]:
    exported = getattr(module, "__all__", None)
    names = exported if isinstance(exported, list | tuple) else [n for n in vars(module) if not n.startswith("_")]
    for name in names:
        obj = getattr(module, name, None)
        if (inspect.isclass(obj) or inspect.isroutine(obj)) and _defined_here(obj, module):
            yield name, obj


def _document(doc_id: str, kind: str, module: str, text: str | None) -> Document | None:
    if not text or not text.strip():
        return None
    return Document(doc_id, text.strip(), doc_id, {"kind": kind, "module": module})


def _module_documents(module: types.ModuleType) -> Iterator[Document | None]:
    name = module.__name__
    yield _document(name, "module", name, inspect.getdoc(module))
    for member_name, obj in _public_members(module):
        qualified = f"{name}.{member_name}"
        if not inspect.isclass(obj):
            yield _document(qualified, "function", name, inspect.getdoc(obj))
            continue
        yield _document(qualified, "class", name, inspect.getdoc(obj))
        for method_name, method in vars(obj).items():
            if method_name.startswith("_") or not (inspect.isroutine(method) or isinstance(method, property)):
                continue
            # Only the method's own docstring: inherited ones would repeat object's on every class.
            yield _document(f"{qualified}.{method_name}", "method", name, getattr(method, "__doc__", None))


def _topic_documents() -> Iterator[Document | None]:
    from pydoc_data.topics import topics

    for topic, text in sorted(topics.items()):
        yield _document(f"topic:{topic}", "topic", "pydoc_data.topics", text)


def stdlib_documents() -> Iterator[Document]:
    """Every documented public object of the standard library, each id once (first definition wins)."""
    seen: set[str] = set()
    sources = [_topic_documents(), *(_module_documents(m) for m in _modules())]
    for source in sources:
        for document in source:
            if document is not None and document.id not in seen:
                seen.add(document.id)
                yield document


def cache_root() -> Path:
    """Where fanfuse caches built indexes: $FANFUSE_CACHE_DIR, else the platform's user cache dir."""
    if override := os.environ.get("FANFUSE_CACHE_DIR"):
        return Path(override)
    if sys.platform == "win32":
        base = Path(os.environ.get("LOCALAPPDATA", Path.home() / "AppData" / "Local"))
    elif sys.platform == "darwin":
        base = Path.home() / "Library" / "Caches"
    else:
        base = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache"))
    try:
        base.mkdir(parents=True, exist_ok=True)
    except OSError:  # read-only home: a temporary directory still works, just is not kept
        base = Path(tempfile.gettempdir())
    return base / "fanfuse"


def stdlib_index_name() -> str:
    """One index per Python version and corpus version, since the docstrings differ between them."""
    return f"stdlib-{platform.python_implementation().lower()}{platform.python_version()}-v{CORPUS_VERSION}"
