"""An index directory whose content is replaced atomically, so a reader never finds it half-done.

Layout: the manifest `DIR/fanfuse-index.json` names the current version, a subdirectory
`DIR/version-...` holding the index files (and the dense cache fitted on them). A rebuild writes a
new version beside the current one in a locked temporary directory, renames it into place, replaces
the manifest atomically (rename), then removes the versions no manifest names any more (each step
through the core's output guard: `StagedDirectory`, `OutputFile`, `retire_directory`). A reader
opens the version the manifest names and, when that version vanished while it was being opened (a
rebuild finished meanwhile), reads the manifest again and opens the new one. The directory itself is
never missing, renamed or empty once built.

A directory written by fanfuse before versions existed (format 1: the index files next to the
manifest) is still read, and is replaced once by a new directory swapped in with two renames.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

from fanfuse.errors import InvalidIndex
from fanfuse.output_guard import OutputFile, StagedDirectory, retire_directory, sync_directory
from fanfuse.paths import unreadable

MANIFEST = "fanfuse-index.json"
FORMAT = 2
# Formats this module reads: 1 kept the index files beside the manifest, 2 in a version subdirectory.
READABLE_FORMATS = (1, 2)
VERSION_PREFIX = "version-"
# Opens retried when a rebuild replaced the version being opened (each retry follows a finished rebuild).
OPEN_ATTEMPTS = 5
REBUILD = "rebuild the index with `fanfuse index`"

T = TypeVar("T")


def read_manifest(directory: Path) -> dict[str, Any]:
    problem = unreadable(directory, folder=True)
    if problem is not None:
        raise InvalidIndex(
            f"index directory {str(directory)!r}: {problem}; build it with "
            f"`fanfuse index CORPUS.jsonl --index {directory}` or TantivyRetriever.build(...)"
        )
    path = directory / MANIFEST
    if not path.is_file():
        raise InvalidIndex(
            f"{str(directory)!r} is not a fanfuse index (no {MANIFEST}); build one with `fanfuse index`"
        )
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError):
        raise InvalidIndex(f"{path}: corrupt manifest (not JSON); {REBUILD}") from None
    if not isinstance(manifest, dict) or manifest.get("format") not in READABLE_FORMATS:
        raise InvalidIndex(
            f"{path}: unsupported index format (this fanfuse reads formats 1 and 2); {REBUILD}"
        )
    if manifest["format"] == FORMAT and not _is_version_name(manifest.get("version")):
        raise InvalidIndex(f"{path}: corrupt manifest (no valid 'version'); {REBUILD}")
    return manifest


def data_directory(directory: Path, manifest: dict[str, Any]) -> Path:
    """Where the index files of the version `manifest` names are."""
    return directory / manifest["version"] if manifest["format"] == FORMAT else directory


def open_current(directory: Path, opener: Callable[[dict[str, Any], Path], T]) -> T:
    """`opener(manifest, data_directory)` on the current version, again on the next one if a rebuild
    removed it meanwhile; a failure with the manifest unchanged is raised as it is."""
    for attempt in range(OPEN_ATTEMPTS):
        manifest = read_manifest(directory)
        try:
            return opener(manifest, data_directory(directory, manifest))
        except (ValueError, OSError):
            if attempt + 1 == OPEN_ATTEMPTS or _manifest_or_none(directory) == manifest:
                raise
    raise AssertionError("unreachable: the last attempt raises")


def check_replaceable(target: Path) -> None:
    if target.exists() and not target.is_dir():
        raise InvalidIndex(f"index path {str(target)!r} is a file; pass a directory")
    if target.is_dir() and any(target.iterdir()) and not (target / MANIFEST).is_file():
        raise InvalidIndex(
            f"index directory {str(target)!r} is not empty and not a fanfuse index; "
            f"refusing to replace it (pass a new or empty directory)"
        )


def build(directory: str | os.PathLike[str], write: Callable[[Path], dict[str, Any]]) -> None:
    """Writes a new version with `write(version_directory)` (an empty directory), which returns the
    manifest's fields,
    and makes it the current one. An exception leaves the current version as it was."""
    # A symbolic link at the index path is followed: the directory it names is updated, the link stays.
    target = Path(os.path.realpath(directory))
    check_replaceable(target)
    previous = _manifest_or_none(target)
    if previous is not None and previous["format"] == FORMAT:
        # Staged under one name for every build, so that the next build removes what a killed one left.
        with StagedDirectory(target / VERSION_PREFIX.rstrip("-")) as staged:
            fields = write(Path(staged.path))
            _publish(target, staged, fields)
        return
    # A new directory (or one of format 1): build it whole beside the target, then move it in.
    with StagedDirectory(target) as staged:
        staging = Path(staged.path)
        version = _new_version_name()
        (staging / version).mkdir()
        fields = write(staging / version)
        _write_manifest(staging, {**fields, "format": FORMAT, "version": version})
        check_replaceable(target)  # it may have been filled meanwhile
        staged.publish()


def _publish(target: Path, staged: StagedDirectory, fields: dict[str, Any]) -> None:
    """Makes the staged version the current version of `target` under the builders' lock."""
    with _builders_lock(target):
        version = _new_version_name()
        staged.publish(target / version)
        try:
            _write_manifest(target, {**fields, "format": FORMAT, "version": version})
        except BaseException:
            retire_directory(target / version)
            raise
        sync_directory(target)
        # Every version but the new one is unreferenced now (including ones a killed builder left).
        # Each is renamed away before it is deleted, so a reader still opening it finds it whole or
        # not at all (then it reads the manifest again), never half deleted.
        for entry in target.iterdir():
            if entry.name != version and _is_version_name(entry.name) and entry.is_dir():
                retire_directory(entry)


@contextlib.contextmanager
def _builders_lock(target: Path) -> Iterator[None]:
    """One builder at a time swaps versions in (and removes the old ones) in a directory."""
    descriptor = os.open(target, os.O_RDONLY)
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX)
        yield
    finally:
        os.close(descriptor)


def _write_manifest(directory: Path, manifest: dict[str, Any]) -> None:
    with OutputFile(directory / MANIFEST) as stream:
        stream.write((json.dumps(manifest, indent=2) + "\n").encode("utf-8"))


def _manifest_or_none(directory: Path) -> dict[str, Any] | None:
    try:
        return read_manifest(directory)
    except InvalidIndex:
        return None


def _new_version_name() -> str:
    return f"{VERSION_PREFIX}{time.time_ns()}-{os.getpid()}"


def _is_version_name(name: object) -> bool:
    return isinstance(name, str) and name.startswith(VERSION_PREFIX) and "/" not in name and name != "."
