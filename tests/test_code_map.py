"""docs/README.md's code map matches the tree: every folder of the package has its row, every
top-level module is named in the package's row, and every file a row names is there."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "python" / "fanfuse"
CODE_MAP = ROOT / "docs" / "README.md"
_ROW = re.compile(r"^\| `(python/fanfuse/(?:\w+/)?)` \|(.*)$", re.M)
_FILE = re.compile(r"`([\w*]+\.pyi?)`")


def _rows() -> dict[str, str]:
    """The code map's rows of the package: folder (``python/fanfuse/multiquery/``) -> its text."""
    return dict(_ROW.findall(CODE_MAP.read_text(encoding="utf-8")))


def test_every_folder_of_the_package_has_a_row() -> None:
    folders = {f"python/fanfuse/{p.parent.name}/" for p in PACKAGE.glob("*/__init__.py")}
    rows = _rows()
    assert len(folders) >= 5, "the walk found the package's folders"
    assert sorted(folders - set(rows)) == [], "add a row to docs/README.md's code map"
    assert sorted(set(rows) - folders - {"python/fanfuse/"}) == [], "a row names a folder that is gone"


def test_every_top_level_module_is_named_in_the_package_row() -> None:
    named = set(_FILE.findall(_rows()["python/fanfuse/"]))
    modules = {p.name for p in PACKAGE.glob("*.py")} | {p.name for p in PACKAGE.glob("*.pyi")}
    assert len(modules) >= 10, "the walk found the top-level modules"
    assert sorted(modules - named) == [], "name it in the python/fanfuse/ row of docs/README.md"


def test_every_file_a_row_names_exists() -> None:
    missing = []
    for folder, text in _rows().items():
        base = ROOT / folder
        for name in _FILE.findall(text):
            found = base.glob(name) if folder == "python/fanfuse/" else base.rglob(name)
            if not any(found):
                missing.append(f"{folder}{name}")
    assert missing == []
