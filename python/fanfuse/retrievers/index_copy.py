"""A private, checked copy of an index version, for a process that must outlive what happens to the
files it searches.

Tantivy and the stored vectors are memory-mapped: a file truncated under a running process (`cp` over a
live index does that) turns the next read of a page past its new end into SIGBUS, which no Python or
Rust code can catch, and a file overwritten in place changes the answers or makes Tantivy panic. A
copy in a new temporary directory is a file nobody else writes. While copying, every Tantivy segment
file is checked against the CRC32 its footer records (what `tantivy::Index::validate_checksum` does),
so a damaged or half-written index is refused at open, naming the file, instead of failing searches.

The copy is itself an index directory (the manifest and the current version), which other processes
of the same server may open in place: nobody else writes it. The cost is at open: reading and writing
the version's bytes once (see docs/retrievers.md); a search then reads the copy exactly as it would
the original.

The copy is removed when its owner is garbage-collected, the process exits, or a `fanfuse` command
ends by SIGINT/SIGTERM (`fanfuse._cleanups`). What no process can clean up after itself (SIGKILL, a
crash) the next copy made in the same temporary directory removes: each copy is a directory
`fanfuse-index-*` holding `OWNER_FILE`, which names its owner's pid and on which every process using
the copy (its owner, and the workers that open it with `share_copy`) holds a shared `flock` for as
long as it lives. The kernel drops the lock with the last of those processes, however they end, so a
copy whose lock can be taken exclusively is nobody's, and goes; a live server's copy never does.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
import re
import shutil
import stat
import struct
import tempfile
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import BinaryIO

from fanfuse._cleanups import cleanup_with
from fanfuse.errors import InvalidIndex
from fanfuse.retrievers.index_versions import MANIFEST

__all__ = ["COPY_PREFIX", "OWNER_FILE", "private_copy", "remove_stale_copies", "share_copy"]

# What names a copy in the temporary directory, and the file in it that says whether its owner lives.
COPY_PREFIX = "fanfuse-index-"
OWNER_FILE = ".fanfuse-owner"
# Errors of a full (or over-quota) file system: the copy's place, TMPDIR, is what to name.
_NO_SPACE = {errno.ENOSPC, errno.EDQUOT}
# The descriptors of the owner files this process holds a lock on for the rest of its life.
_shared: list[int] = []

# A segment file: the segment's uuid, then the component (`.store`, `.idx`, ...; deletes: `.N.del`).
SEGMENT_FILE = re.compile(r"[0-9a-f]{32}\.(?:\d+\.)?[a-z]+")
# Tantivy's footer, at the end of every segment file: JSON {"version": ..., "crc": u32}, its length
# (u32, little-endian) and a magic number (u32).
_FOOTER_MAGIC = 1337
_FOOTER_TAIL = struct.Struct("<II")
_LONGEST_FOOTER = 4096
_CHUNK = 1 << 20
# Tantivy's lock files: made again by whoever opens the copy.
_LOCKS = re.compile(r"\.tantivy-.*\.lock")
# The files Tantivy wrote and still uses, by name: a missing one would fail only the search that
# reads it.
_MANAGED = ".managed.json"


def private_copy(directory: Path, version: Path, owner: object) -> tuple[Path, Callable[[], object]]:
    """A checked copy of the index in `directory` as of its current `version` (the manifest and that
    version; the whole directory for an index of format 1, whose files are beside the manifest),
    itself an index directory, and what removes it now; removed with `owner` otherwise."""
    _check_complete(version)
    remove_stale_copies()
    try:
        copy = Path(tempfile.mkdtemp(prefix=COPY_PREFIX))
    except OSError as error:
        raise _unwritable(error) from None
    owner_lock = -1
    try:
        owner_lock = _own(copy)
        if version != directory:
            shutil.copyfile(directory / MANIFEST, copy / MANIFEST)
        for source in sorted(version.rglob("*")):
            relative = source.relative_to(directory)
            target = copy / relative
            if source.is_dir():
                target.mkdir(parents=True, exist_ok=True)
            elif not _LOCKS.fullmatch(source.name):
                target.parent.mkdir(parents=True, exist_ok=True)
                _copy_checked(source, target, str(source))
    except BaseException as error:
        _remove(copy, owner_lock)
        if isinstance(error, OSError) and error.errno in _NO_SPACE:
            raise _unwritable(error) from None
        raise
    return copy, cleanup_with(owner, _remove, copy, owner_lock)


def share_copy(copy: Path) -> None:
    """Marks this process as a user of `copy` (made by another process's `private_copy`) for the rest
    of its life: the copy is then not removed as stale while this process lives."""
    descriptor = os.open(copy / OWNER_FILE, os.O_RDONLY)
    fcntl.flock(descriptor, fcntl.LOCK_SH)
    _shared.append(descriptor)


def remove_stale_copies() -> list[Path]:
    """Removes the copies in the temporary directory that no live process uses; returns them."""
    removed = []
    with contextlib.suppress(OSError):
        for candidate in Path(tempfile.gettempdir()).iterdir():
            if candidate.name.startswith(COPY_PREFIX) and _remove_if_stale(candidate):
                removed.append(candidate)
    return removed


def _own(copy: Path) -> int:
    """Creates the copy's owner file and holds it, the shared lock first and then the pid: a sweep that
    finds the file still empty leaves the copy alone."""
    descriptor = os.open(copy / OWNER_FILE, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        fcntl.flock(descriptor, fcntl.LOCK_SH)
        os.write(descriptor, f"{os.getpid()}\n".encode())
    except BaseException:
        os.close(descriptor)
        raise
    return descriptor


def _remove_if_stale(candidate: Path) -> bool:
    """Removes `candidate` if it is a copy whose owner file names a pid and nobody holds its lock."""
    try:
        descriptor = os.open(candidate / OWNER_FILE, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError:  # not a copy, another user's, or one being made (not named or not locked yet)
        return False
    try:
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:  # a live process uses it
            return False
        if not os.read(descriptor, 32).strip() or not _ours(candidate):
            return False
        shutil.rmtree(candidate, ignore_errors=True)
        return True
    finally:
        os.close(descriptor)


def _ours(candidate: Path) -> bool:
    """A directory of this user's, not a link: another user's leftovers are theirs to remove."""
    status = candidate.lstat()
    return stat.S_ISDIR(status.st_mode) and status.st_uid == os.getuid()


def _remove(copy: Path, owner_lock: int) -> None:
    """Removes the copy, then lets go of its lock (a sweep meanwhile finds it locked)."""
    shutil.rmtree(copy, ignore_errors=True)
    with contextlib.suppress(OSError):
        os.close(owner_lock)


def _unwritable(error: OSError) -> InvalidIndex:
    """The copy could not be written: it is TMPDIR's fault, whichever file was being copied."""
    place = tempfile.gettempdir()
    reason = "no space left" if error.errno in _NO_SPACE else (error.strerror or str(error))
    return InvalidIndex(
        f"the private copy of the index could not be written to TMPDIR={place} ({reason}); free "
        f"space there or point TMPDIR at a directory with room for the index"
    )


def _check_complete(version: Path) -> None:
    if not version.is_dir():
        raise InvalidIndex(f"{version} does not exist; rebuild the index with `fanfuse index`")
    listing = version / _MANAGED
    try:
        managed = json.loads(listing.read_text(encoding="utf-8"))
        names = [str(name) for name in managed]
    except (OSError, ValueError, TypeError):
        raise InvalidIndex(
            f"{listing} is missing or damaged; rebuild the index with `fanfuse index`"
        ) from None
    missing = sorted(name for name in names if not (version / name).is_file())
    if missing:
        raise InvalidIndex(
            f"{version}: {', '.join(missing)} missing (Tantivy lists {len(names)} files in {_MANAGED}); "
            f"rebuild the index with `fanfuse index`"
        )


def _copy_checked(source: Path, target: Path, name: str) -> None:
    if not SEGMENT_FILE.fullmatch(source.name):
        # Vectors, ids, manifests: copied by the kernel; what reads them checks their shape.
        shutil.copyfile(source, target)
        return
    with open(source, "rb") as reading, open(target, "xb") as writing:
        size = os.fstat(reading.fileno()).st_size
        expected, body = _footer(reading, size, name)
        crc = copied = 0
        while chunk := reading.read(_CHUNK):
            if copied < body:
                crc = zlib.crc32(chunk[: body - copied], crc)
            copied += len(chunk)
            writing.write(chunk)
    if copied != size:
        raise InvalidIndex(
            f"{name} changed while it was read ({size} bytes, then {copied}); open the index again"
        )
    if crc != expected:
        raise InvalidIndex(
            f"{name} is damaged: its checksum is {crc}, its footer says {expected}; rebuild the index with "
            f"`fanfuse index`"
        )


def _footer(reading: BinaryIO, size: int, name: str) -> tuple[int, int]:
    """The CRC32 a segment file's footer records, and the length of the body it covers."""
    damaged = f"{name} is damaged (no valid Tantivy footer); rebuild the index with `fanfuse index`"
    if size < _FOOTER_TAIL.size:
        raise InvalidIndex(damaged)
    reading.seek(size - _FOOTER_TAIL.size)
    length, magic = _FOOTER_TAIL.unpack(reading.read(_FOOTER_TAIL.size))
    body = size - _FOOTER_TAIL.size - length
    if magic != _FOOTER_MAGIC or not 0 < length <= _LONGEST_FOOTER or body < 0:
        raise InvalidIndex(damaged)
    reading.seek(body)
    try:
        crc = json.loads(reading.read(length))["crc"]
    except (ValueError, KeyError, TypeError):
        raise InvalidIndex(damaged) from None
    if not isinstance(crc, int):
        raise InvalidIndex(damaged)
    reading.seek(0)
    return crc, body
