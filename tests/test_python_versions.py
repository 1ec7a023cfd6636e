"""The CPythons the package claims are the ones it builds wheels for: `requires-python` and the
classifiers of pyproject.toml name the versions of the Makefile's PYTHON_VERSIONS (`make wheels`), and
the interpreters CI tests beyond the development one (OTHER_PYTHONS) are among them."""

from __future__ import annotations

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
