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
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from fanfuse.corpus import Document
from fanfuse.retrievers.tantivy_index import TantivyRetriever, open_or_none

# Bump when the documents change, so cached indexes of an older shape are rebuilt.
CORPUS_VERSION = 1

# Modules whose import has side effects (opens a browser, prints, starts a GUI or a REPL),
# test suites, and deprecated packages that only warn.
_SKIP = {
    "antigravity", "this", "idlelib", "turtledemo", "test", "tests", "lib2to3", "distutils",
    "ensurepip", "__main__", "readline", "xxlimited", "xxlimited_35", "xxsubtype", "tkinter", "turtle",
    # Documented as `os.path` instead (see _ALIASES), not twice under their own names.
    "posixpath", "ntpath",
}  # fmt: skip
# Modules documented under the name users write.
_ALIASES = {"os.path": "os.path"}


def _skipped(name: str) -> bool:
    return any(part.startswith("_") or part in _SKIP for part in name.split("."))


def _modules() -> Iterator[tuple[str, types.ModuleType]]:
    """Each public standard-library module and submodule with the name it is documented under,
    imported quietly; modules that fail to import (missing on this platform) are skipped."""
    names = sorted(n for n in sys.stdlib_module_names if not _skipped(n)) + list(_ALIASES)
    seen: set[str] = set()
    while names:
        name = names.pop(0)
        if name in seen:
            continue
        seen.add(name)
        module = _quiet_import(name)
        if module is None:
            continue
        yield name, module
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


def _defined_in(obj: Any, module: types.ModuleType) -> bool:
    """Whether `obj` belongs to `module`'s documentation: defined there, or in its private accelerator
    (`collections.deque` lives in `_collections`, `io.StringIO` in `_io`)."""
    home = getattr(obj, "__module__", None)
    if not isinstance(home, str):
        return False
    return home == module.__name__ or (home.startswith("_") and home.lstrip("_") == module.__name__)


def _public_members(module: types.ModuleType) -> Iterator[tuple[str, Any]]:
    exported = getattr(module, "__all__", None)
    names = (
        exported if isinstance(exported, list | tuple) else [n for n in vars(module) if not n.startswith("_")]
    )
    for name in names:
        obj = getattr(module, name, None)
        if (inspect.isclass(obj) or inspect.isroutine(obj)) and _defined_in(obj, module):
            yield name, obj


def _document(doc_id: str, kind: str, module: str, text: str | None) -> Document | None:
    if not text or not text.strip():
        return None
    return Document(doc_id, text.strip(), doc_id, {"kind": kind, "module": module})


def _module_documents(name: str, module: types.ModuleType) -> Iterator[Document | None]:
    yield _document(name, "module", name, inspect.getdoc(module))
    for member_name, obj in _public_members(module):
        # Builtins are written bare: `sorted`, `str.split`.
        qualified = member_name if name == "builtins" else f"{name}.{member_name}"
        if not inspect.isclass(obj):
            yield _document(qualified, "function", name, _with_signature(member_name, obj))
            continue
        yield _document(qualified, "class", name, inspect.getdoc(obj))
        for method_name, method in vars(obj).items():
            if method_name.startswith("_") or not (inspect.isroutine(method) or isinstance(method, property)):
                continue
            # Only the method's own docstring: inherited ones would repeat object's on every class.
            if inspect.isroutine(method) and method.__doc__:
                text = _with_signature(method_name, method)
            else:
                text = getattr(method, "__doc__", None)
            yield _document(f"{qualified}.{method_name}", "method", name, text)


def _with_signature(name: str, routine: Any) -> str | None:
    """The docstring, headed by the call signature when Python can tell it (parameter names are
    often the words a question uses: `encoding`, `timeout`)."""
    doc = inspect.getdoc(routine)
    if not doc:
        return None
    try:
        signature = f"{name}{inspect.signature(routine)}"
    except Exception:  # many C functions have no introspectable signature; some fail oddly
        return doc
    return doc if doc.startswith(signature) else f"{signature}\n{doc}"


def _topic_documents() -> Iterator[Document | None]:
    from pydoc_data.topics import topics

    for topic, text in sorted(topics.items()):
        yield _document(f"topic:{topic}", "topic", "pydoc_data.topics", text)


def stdlib_documents() -> Iterator[Document]:
    """Every documented public object of the standard library, each id once (first definition wins)."""
    seen: set[str] = set()
    sources = [_topic_documents(), *(_module_documents(name, m) for name, m in _modules())]
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


def stdlib_index(
    cache_dir: str | os.PathLike[str] | None = None,
    *,
    rebuild: bool = False,
    progress: Callable[[int], None] | None = None,
) -> tuple[TantivyRetriever, bool]:
    """The standard-library index, from the cache when a good one is there; `(index, built_now)`."""
    directory = Path(cache_dir) if cache_dir is not None else cache_root()
    directory = directory / stdlib_index_name()
    if not rebuild and (index := open_or_none(directory)) is not None:
        return index, False
    return TantivyRetriever.build(stdlib_documents(), directory, progress=progress), True
