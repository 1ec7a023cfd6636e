"""Every public name there has been, with the keywords it takes (`tests/public_names.txt`: the
`__all__` of each public module; of a callable its keyword arguments, of a class its constructor's and
each public method's), is still public and still takes them, or its old spelling is in a table of
`fanfuse._renamed` (`RENAMED`, `RENAMED_KEYWORDS`), which refuses it naming the new one: nothing leaves
the API silently. New names and keywords join the list: `python tests/test_public_names.py` writes it.
A line is a name, then its keywords."""

from __future__ import annotations

import ast
import importlib
import inspect
import re
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import fanfuse
import pytest
from fanfuse._renamed import REMOVED_KEYWORDS, RENAMED, RENAMED_KEYWORDS
from fanfuse.errors import MissingExtra

PACKAGE = Path(fanfuse.__file__).parent
LISTED = Path(__file__).with_name("public_names.txt")
KEYWORDS = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)


def public_names() -> set[str]:
    """`module.name` for each name of a public module's literal `__all__` (a module of no `_` part;
    the command line's modules are its commands, whose flags have a table of their own)."""
    names = set()
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE).with_suffix("").parts
        if parts[0] == "cli" or any(part.startswith("_") and part != "__init__" for part in parts):
            continue
        module = ".".join(("fanfuse", *parts)).removesuffix(".__init__")
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            if not isinstance(node, ast.Assign):
                continue
            if any(getattr(target, "id", None) == "__all__" for target in node.targets):
                names.update(f"{module}.{name}" for name in ast.literal_eval(node.value))
    return names


def keywords(callable_: object) -> set[str]:
    """The names a caller may pass by keyword (none where Python cannot read a signature)."""
    try:
        signature = inspect.signature(callable_)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return set()
    return {p.name for p in signature.parameters.values() if p.kind in KEYWORDS and p.name != "self"}


def callables(dotted: str) -> Iterator[tuple[str, set[str]]] | None:
    """A public name and what it takes: a callable's keywords; a class's constructor's, then each
    public method's (defined by the class itself, not a base) under `Class.method`. None where the
    module's optional extra is not installed here."""
    module_name, _, name = dotted.rpartition(".")
    module = imported(module_name)
    return None if module is None else _taken(dotted, getattr(module, name))


def imported(module_name: str) -> ModuleType | None:
    """A module of the package, imported; None where it needs an optional extra not installed here."""
    try:
        return importlib.import_module(module_name)
    except MissingExtra:
        return None
    except ImportError as error:
        if error.name is not None and not error.name.startswith("fanfuse"):
            return None
        raise


def own_keywords(cls: type) -> set[str]:
    """The constructor keywords a class of the package defines: its fields and its `__init__`'s, or
    those of the package's classes it derives from; not a framework base's (they change with its
    version)."""
    ours: set[str] = set()
    for base in cls.__mro__:
        if base.__module__.startswith("fanfuse"):
            ours |= set(vars(base).get("__annotations__", {}))
            for constructor in ("__new__", "__init__"):
                if constructor in vars(base):
                    ours |= keywords(getattr(base, constructor))
    return keywords(cls) & ours


def _taken(dotted: str, value: object) -> Iterator[tuple[str, set[str]]]:
    if not callable(value):
        return
    yield dotted, own_keywords(value) if inspect.isclass(value) else keywords(value)
    if inspect.isclass(value):
        for attribute in vars(value):
            method = getattr(value, attribute, None)
            own = getattr(method, "__qualname__", "") == f"{value.__qualname__}.{attribute}"
            if not attribute.startswith("_") and callable(method) and own:
                yield f"{dotted}.{attribute}", keywords(method)


class Api:
    """The public names and keywords found here, and the names whose module could be read."""

    def __init__(self) -> None:
        self.names = public_names()
        self.taken: dict[str, set[str]] = {}
        self.read: set[str] = set()
        for name in sorted(self.names):
            found = callables(name)
            if found is not None:
                self.read.add(name)
                self.taken.update(found)

    def has(self, name: str) -> bool:
        """Whether a listed name is still public: a name of a module's `__all__`, or a method of a
        class that is (unknown, so kept, where the class's module cannot be read here)."""
        if name in self.names or name in self.taken:
            return True
        owner = name.rpartition(".")[0]
        return owner in self.names and owner not in self.read


def current() -> dict[str, set[str]]:
    api = Api()
    return {name: set() for name in api.names} | api.taken


def listed() -> dict[str, set[str]]:
    lines = LISTED.read_text(encoding="utf-8").splitlines()
    return {line.split()[0]: set(line.split()[1:]) for line in lines}


@pytest.fixture(scope="module")
def api() -> Api:
    return Api()


@pytest.fixture(scope="module")
def now(api: Api) -> dict[str, set[str]]:
    return {name: set() for name in api.names} | api.taken


def test_the_scan_reads_names_and_keywords(now: dict[str, set[str]]) -> None:
    assert {"fanfuse.fuse", "fanfuse.multiquery.MultiQueryRetriever", "fanfuse.tune.tune"} <= set(now)
    assert {"runs", "qrels", "folds"} <= now["fanfuse.tune.tune"]
    assert "format" in now["fanfuse.report.Report.render"]


def test_no_public_name_leaves_without_naming_its_new_spelling(api: Api) -> None:
    gone = {name for name in listed() if not api.has(name)}
    assert sorted(gone - set(RENAMED)) == [], "add each to fanfuse._renamed.RENAMED, naming its new spelling"


def test_no_keyword_leaves_without_naming_its_new_spelling(api: Api, now: dict[str, set[str]]) -> None:
    gone = {
        (name, keyword)
        for name, words in listed().items()
        if name in api.taken  # read here: its module's extra is installed
        for keyword in words - now[name]
        if keyword not in RENAMED_KEYWORDS.get(name, {}) and keyword not in REMOVED_KEYWORDS.get(name, {})
    }
    assert sorted(gone) == [], "add each to fanfuse._renamed.RENAMED_KEYWORDS, naming its new spelling"


def test_every_public_name_and_keyword_is_listed(now: dict[str, set[str]]) -> None:
    known = listed()
    new = sorted(f"{name} {sorted(words - known.get(name, set()))}" for name, words in now.items() if
                 name not in known or words - known[name])  # fmt: skip
    assert new == [], "new public names or keywords: run python tests/test_public_names.py"


def resolve(dotted: str) -> object:
    """A name by its dotted path: its module imported, then attribute by attribute (None for one
    that is not there)."""
    parts = dotted.split(".")
    for split in range(len(parts) - 1, 0, -1):
        try:
            found: object = importlib.import_module(".".join(parts[:split]))
        except ModuleNotFoundError:  # a class or a name, not a module
            continue
        for part in parts[split:]:
            found = getattr(found, part, None)
        return found
    return None


@pytest.mark.parametrize("name", sorted(RENAMED_KEYWORDS))
def test_an_old_keyword_is_refused_naming_the_new_one(name: str, api: Api, now: dict[str, set[str]]) -> None:
    assert api.has(name), "the table names a callable that is not public"
    if name not in api.taken:
        pytest.skip(f"{name}'s module needs an optional extra not installed here")
    target = resolve(name)
    assert callable(target)
    for old, new in RENAMED_KEYWORDS[name].items():
        assert new in now[name] and old not in now[name]
        message = f"{getattr(target, '__qualname__', name)}() keyword {old} is renamed: use {new}"
        with pytest.raises(TypeError, match=f"^{re.escape(message)}$"):
            target(**{old: "x"})


if __name__ == "__main__":
    # The list keeps every name and keyword it had: one that left stays, answered by a renamed table.
    merged = listed() if LISTED.exists() else {}
    for name, words in current().items():
        merged[name] = merged.get(name, set()) | words
    LISTED.write_text("".join(" ".join([name, *sorted(merged[name])]) + "\n" for name in sorted(merged)))
    sys.exit(0)
