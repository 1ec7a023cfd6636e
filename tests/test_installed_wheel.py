"""When `make test` runs the suite against the installed wheel (scripts/test-installed.sh), these
tests check that it is that wheel: imported from the environment's site-packages, not an editable
build, not the source tree, tagged manylinux, compiled in the profile asked for, and with no Rust
toolchain that could rebuild it."""

from __future__ import annotations

import importlib.metadata
import json
import os
import shutil
import sysconfig
from pathlib import Path

import fanfuse
import pytest
from fanfuse import _core

ROOT = Path(__file__).resolve().parents[1]
INSTALLED_WHEEL = os.environ.get("FANFUSE_TEST_INSTALLED_WHEEL")

pytestmark = pytest.mark.skipif(
    not INSTALLED_WHEEL,
    reason="running against the editable build; `make test` runs the suite against the installed wheel",
)


def test_fanfuse_is_the_installed_wheel_not_the_source_tree() -> None:
    package = Path(fanfuse.__file__).resolve().parent
    assert package.parent == Path(sysconfig.get_paths()["purelib"]).resolve()
    assert package != ROOT / "python" / "fanfuse"
    assert Path(_core.__file__).resolve().parent == package
    assert (package / "py.typed").is_file() and (package / "_core.pyi").is_file()
    direct_url = importlib.metadata.distribution("fanfuse").read_text("direct_url.json")
    assert direct_url is not None
    assert not json.loads(direct_url).get("dir_info", {}).get("editable", False)


def test_the_wheel_is_tagged_manylinux_and_matches_the_file_installed() -> None:
    wheel = importlib.metadata.distribution("fanfuse").read_text("WHEEL") or ""
    tags = [line.split(":", 1)[1].strip() for line in wheel.splitlines() if line.startswith("Tag:")]
    assert tags and all("manylinux" in tag for tag in tags)
    assert INSTALLED_WHEEL is not None and any(tag.split("-")[-1] in INSTALLED_WHEEL for tag in tags)


def test_no_rust_toolchain_is_on_the_path() -> None:
    assert shutil.which("cargo") is None and shutil.which("rustc") is None


def test_the_wheel_core_is_built_with_the_profile_make_asked_for() -> None:
    # Release unless `make test BUILD_FLAGS=` asked for the debug profile: what the benches' machine
    # line states is what the core was compiled with.
    assert os.environ.get("FANFUSE_WHEEL_BUILD", "release") == _core._BUILD
