"""Every old spelling in the table of renamed modules and names (``fanfuse._renamed.RENAMED``) is
refused, by import and as an attribute of its module, with a message naming the new one; the new one
exists; a module that does exist is never answered by the table."""

from __future__ import annotations

import importlib
import importlib.util
import re
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import fanfuse
import pytest
from fanfuse._renamed import RENAMED
from test_public_names import imported, resolve

# A dotted module name of the package inside a table entry's text.
_MODULE = re.compile(r"\bfanfuse(?:\.\w+)+")


def test_the_table_is_read() -> None:
    assert len(RENAMED) >= 8, "the table holds the renamed modules"


def parent(old: str) -> ModuleType:
    """The module an old name was in, imported (skipped where it needs an extra this environment lacks)."""
    module = imported(old.rpartition(".")[0])
    if module is None:
        pytest.skip(f"{old.rpartition('.')[0]} needs an optional extra")
    return module


def exists(dotted: str) -> bool:
    """Whether a module (found, not imported: an integration's framework is an optional extra) or a
    name in a module (its module imported) is there."""
    try:
        if importlib.util.find_spec(dotted) is not None:
            return True
    except ModuleNotFoundError:  # a name under a module that is not a package
        pass
    return resolve(dotted) is not None


@pytest.mark.parametrize("old", sorted(RENAMED))
def test_an_old_name_is_refused_as_an_attribute_of_its_module_naming_the_new_one(old: str) -> None:
    module = parent(old)
    with pytest.raises(AttributeError) as raised:
        getattr(module, old.rpartition(".")[2])
    assert str(raised.value) == f"{old} is renamed: use {RENAMED[old]}"
    assert getattr(module, old.rpartition(".")[2], None) is None  # a probe for the old name still works
    with pytest.raises(
        AttributeError, match=re.escape(f"module {module.__name__!r} has no attribute 'nope'")
    ):
        module.nope  # noqa: B018


def in_package(old: str) -> bool:
    """Whether an old name was in a package (read off the tree: importing one may need an extra)."""
    folder = Path(fanfuse.__file__).parent.joinpath(*old.split(".")[1:-1])
    return (folder / "__init__.py").is_file()


IN_PACKAGES = sorted(filter(in_package, RENAMED))


@pytest.mark.parametrize("old", IN_PACKAGES)
def test_from_a_package_an_old_path_is_refused_by_import_naming_the_new_one(old: str) -> None:
    """Of a module that is not a package, `from module import OLD` gets Python's own message (the
    import statement drops the attribute's); of a package, the finder's."""
    with pytest.raises(ImportError) as raised:
        importlib.import_module(old)
    assert str(raised.value) == f"{old} is renamed: use {RENAMED[old]}"
    assert raised.value.name == old
    package, _, last = old.rpartition(".")
    with pytest.raises(ImportError, match=re.escape(f"{old} is renamed: use ")):
        exec(f"from {package} import {last}", {})


@pytest.mark.parametrize("old", sorted(RENAMED))
def test_the_new_spellings_exist_and_the_old_do_not(old: str) -> None:
    """The table answers only for a module or name that is gone; every module and name its message
    names is there (a module found, not imported: an integration's framework is an optional extra)."""
    module = parent(old)
    stem = old.rpartition(".")[2]
    assert stem not in vars(module)
    places = getattr(module, "__path__", [])
    assert not any((Path(p) / f"{stem}.py").exists() or (Path(p) / stem).is_dir() for p in places)
    named = _MODULE.findall(RENAMED[old])
    assert named, RENAMED[old]
    assert [new for new in named if not exists(new)] == []


def test_a_missing_module_is_still_not_found() -> None:
    with pytest.raises(ModuleNotFoundError, match=re.escape("No module named 'fanfuse.no_such_module'")):
        importlib.import_module("fanfuse.no_such_module")


def test_the_finder_is_installed_by_importing_the_package() -> None:
    """In a fresh interpreter, the first import of an old path is refused (its parents, imported
    first, install the finder)."""
    old = sorted(RENAMED)[0]
    probe = f"try:\n    import {old}\nexcept ImportError as error:\n    print(error)\n"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    assert out.strip() == f"{old} is renamed: use {RENAMED[old]}"
