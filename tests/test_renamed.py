"""Every old spelling in the table of renamed modules (``fanfuse._renamed.RENAMED``) is refused, by
import and by attribute, with a message naming the new one; the new one exists; a module that does
exist is never answered by the table."""

from __future__ import annotations

import importlib
import importlib.util
import re
import subprocess
import sys
from pathlib import Path

import fanfuse
import pytest
from fanfuse._renamed import RENAMED

# A dotted module name of the package inside a table entry's text.
_MODULE = re.compile(r"\bfanfuse(?:\.\w+)+")


def test_the_table_is_read() -> None:
    assert len(RENAMED) >= 8, "the table holds the renamed modules"


@pytest.mark.parametrize("old", sorted(RENAMED))
def test_an_old_module_path_is_refused_naming_the_new_one(old: str) -> None:
    with pytest.raises(ImportError) as raised:
        importlib.import_module(old)
    assert str(raised.value) == f"{old} is renamed: use {RENAMED[old]}"
    assert raised.value.name == old
    package, _, last = old.rpartition(".")
    with pytest.raises(ImportError, match=re.escape(f"{old} is renamed: use ")):
        exec(f"from {package} import {last}", {})


@pytest.mark.parametrize("old", sorted(RENAMED))
def test_the_new_spellings_exist_and_the_old_do_not(old: str) -> None:
    """The finder answers only for a module that is gone; every module the message names is there
    (found, not imported: an integration's framework is an optional extra)."""
    assert importlib.util.find_spec(old.rpartition(".")[0]) is not None
    named = _MODULE.findall(RENAMED[old])
    assert named, RENAMED[old]
    for new in named:
        assert importlib.util.find_spec(new) is not None, new
    package = importlib.import_module(old.rpartition(".")[0])
    stem = old.rpartition(".")[2]
    assert not any((Path(p) / f"{stem}.py").exists() or (Path(p) / stem).is_dir() for p in package.__path__)


@pytest.mark.parametrize("old", sorted(name for name in RENAMED if name.count(".") == 1))
def test_an_old_attribute_of_the_package_is_refused_naming_the_new_one(old: str) -> None:
    with pytest.raises(AttributeError, match=re.escape(f"{old} is renamed: use {RENAMED[old]}")):
        getattr(fanfuse, old.partition(".")[2])


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
