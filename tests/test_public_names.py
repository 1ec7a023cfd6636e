"""Every public name there has been (the `__all__` of each public module, `tests/public_names.txt`) is
still public, or is in the table of renamed names (`fanfuse._renamed.RENAMED`), which refuses it
naming its new spelling: a name cannot leave the API silently. A new public name joins the list:
`python tests/test_public_names.py` writes it."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import fanfuse
from fanfuse._renamed import RENAMED

PACKAGE = Path(fanfuse.__file__).parent
LISTED = Path(__file__).with_name("public_names.txt")


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


def listed() -> set[str]:
    return set(LISTED.read_text(encoding="utf-8").split())


def test_the_scan_reads_every_public_module() -> None:
    found = public_names()
    assert {"fanfuse.fuse", "fanfuse.multiquery.MultiQueryRetriever", "fanfuse.tune.tune"} <= found


def test_no_public_name_leaves_without_naming_its_new_spelling() -> None:
    gone = listed() - public_names()
    assert sorted(gone - set(RENAMED)) == [], "add each to fanfuse._renamed.RENAMED, naming its new spelling"


def test_every_public_name_is_listed() -> None:
    assert sorted(public_names() - listed()) == [], "new public names: run python tests/test_public_names.py"


if __name__ == "__main__":
    # The list keeps every name it had: one that left stays, answered by the renamed table.
    LISTED.write_text("".join(f"{name}\n" for name in sorted(listed() | public_names())), encoding="utf-8")
    sys.exit(0)
