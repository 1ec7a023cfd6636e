"""The dev extra installs every optional framework and driver, so their tests run rather than skip.
In CI (CI=true) a requirement of the dev extra that is missing, or installed at a version outside
its range, fails here instead of silently skipping the tests that need it."""

from __future__ import annotations

import os
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

import pytest
from packaging.requirements import Requirement

tomllib = pytest.importorskip("tomllib")

PYPROJECT = Path(__file__).resolve().parents[1] / "pyproject.toml"


def dev_requirements() -> list[Requirement]:
    extras = tomllib.loads(PYPROJECT.read_text())["project"]["optional-dependencies"]
    return [Requirement(line) for line in extras["dev"]]


def test_every_optional_extra_is_in_the_dev_extra() -> None:
    extras = tomllib.loads(PYPROJECT.read_text())["project"]["optional-dependencies"]
    dev = {str(r) for r in dev_requirements()}
    for name, requirements in extras.items():
        for requirement in requirements:
            assert str(Requirement(requirement)) in dev, f"extra {name!r}: {requirement} is not in dev"


@pytest.mark.skipif(
    os.environ.get("CI", "").lower() not in ("1", "true", "yes"), reason="checked in CI (CI=true)"
)
def test_dev_extra_is_installed() -> None:
    missing = []
    for requirement in dev_requirements():
        if requirement.marker is not None and not requirement.marker.evaluate({"extra": "dev"}):
            continue
        try:
            installed = version(requirement.name)
        except PackageNotFoundError:
            missing.append(f"{requirement}: not installed")
            continue
        if not requirement.specifier.contains(installed, prereleases=True):
            missing.append(f"{requirement}: {installed} installed")
    assert not missing, "; ".join(missing)
