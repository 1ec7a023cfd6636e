"""A small real file system for a test: a tmpfs mounted at a directory of the test (full or read-only
on demand), unmounted when the test ends; tests using it skip where mounting is not allowed (not root).
The fixture `tmpfs` (conftest.py) is `mounting()`."""

from __future__ import annotations

import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

Mount = Callable[[str, Path], Path]


def mounting() -> Iterator[Mount]:
    """Yields `mount(size, place)`, which mounts a tmpfs of `size` ("64k", "8m") at `place` and returns
    it; unmounts them all when resumed."""
    mounted: list[Path] = []

    def make(size: str, place: Path) -> Path:
        place.mkdir(parents=True, exist_ok=True)
        done = subprocess.run(
            ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(place)],
            capture_output=True,
            check=False,
        )
        if done.returncode != 0:
            pytest.skip("cannot mount a tmpfs here (needs root)")
        mounted.append(place)
        return place

    yield make
    for place in reversed(mounted):
        subprocess.run(["umount", "-l", str(place)], check=False)


def read_only(place: Path) -> None:
    """Makes the tmpfs at `place` read-only."""
    subprocess.run(["mount", "-o", "remount,ro", str(place)], check=True)
