"""Files and directories written so that nothing already there is lost: the Python twin of
`rust/output.rs`, for what the Python layer writes (index manifests and versions, dense caches, saved
models). The rules per kind of path are in docs/run-files.md ("Output paths"):

- nothing yet, or a regular file: written to a temporary file beside it and renamed over it only when
  complete; a replaced file keeps its permission bits (and, where allowed, its owner); a read-only file
  is refused;
- a symbolic link: followed to its final target, written as above; the link stays;
- a FIFO or a character device: opened and written in place (streamed);
- a directory, a block device or a socket: refused.

Temporaries are named `.NAME.PID.N.fanfuse-tmp` and locked (`flock`) while in use; creating one
removes the leftovers of the same NAME whose process is gone (killed with SIGKILL).
"""

from __future__ import annotations

import contextlib
import fcntl
import itertools
import os
import shutil
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

from fanfuse._core import FusionError

TEMP_SUFFIX = ".fanfuse-tmp"
_serial = itertools.count()


def temporary_path(directory: Path, name: str) -> Path:
    """A fresh temporary name for `name` in `directory` (unique per process and call)."""
    return directory / f".{name}.{os.getpid()}.{next(_serial)}{TEMP_SUFFIX}"


def remove_stale_temporaries(directory: Path, name: str) -> None:
    """Removes `.NAME.PID.N.fanfuse-tmp` files and directories whose process is gone and whose lock
    nobody holds (a PID reused by another program keeps its file)."""
    prefix = f".{name}."
    try:
        entries = list(directory.iterdir())
    except OSError:
        return
    for entry in entries:
        if not (entry.name.startswith(prefix) and entry.name.endswith(TEMP_SUFFIX)):
            continue
        pid = entry.name[len(prefix) : -len(TEMP_SUFFIX)].split(".")[0]
        if pid.isdigit() and _is_stale(entry, int(pid)):
            if entry.is_dir() and not entry.is_symlink():
                shutil.rmtree(entry, ignore_errors=True)
            else:
                entry.unlink(missing_ok=True)


def _is_stale(path: Path, pid: int) -> bool:
    if pid <= 0 or pid == os.getpid():
        return False
    try:
        os.kill(pid, 0)
        return False  # running
    except ProcessLookupError:
        pass
    except PermissionError:
        return False  # running, as another user
    try:
        descriptor = os.open(path, os.O_RDONLY)
    except OSError:
        return False
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return True
    except OSError:
        return False  # locked: in use, e.g. by a process in another PID namespace
    finally:
        os.close(descriptor)


def _lock(descriptor: int) -> None:
    """Marks a temporary as in use for `remove_stale_temporaries` of other processes."""
    with contextlib.suppress(OSError):
        fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)


@contextlib.contextmanager
def atomic_output(path: str | os.PathLike[str]) -> Iterator[BinaryIO]:
    """A binary file to write `path` through (see the module documentation for each kind of path).
    An exception inside the block leaves the previous file as it was and no temporary behind."""
    given = Path(path)
    try:
        existing: os.stat_result | None = os.stat(given)
    except FileNotFoundError:
        existing = None
    except OSError as error:
        raise FusionError(f"{path}: {error.strerror}") from None
    if existing is not None:
        mode = existing.st_mode
        if stat.S_ISDIR(mode):
            raise FusionError(f"{path}: is a directory; give the path of a file to write")
        if stat.S_ISFIFO(mode) or stat.S_ISCHR(mode):
            with open(given, "ab") as stream:  # no creation, no truncation
                yield stream
            return
        if not stat.S_ISREG(mode):
            raise FusionError(
                f"{path}: is neither a file, a FIFO nor a character device; refusing to write it"
            )
        if mode & 0o222 == 0 or not os.access(given, os.W_OK):
            raise FusionError(f"{path}: is read-only; refusing to replace it")
    target = Path(os.path.realpath(given))
    if not target.parent.is_dir():
        raise FusionError(f"{path}: the directory {str(target.parent)!r} does not exist; create it first")
    remove_stale_temporaries(target.parent, target.name)
    temp = temporary_path(target.parent, target.name)
    descriptor = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    try:
        _lock(descriptor)
        if existing is not None:
            os.fchmod(descriptor, existing.st_mode & 0o777)
            with contextlib.suppress(OSError):  # only root may give a file away
                os.fchown(descriptor, existing.st_uid, existing.st_gid)
        with os.fdopen(descriptor, "wb") as stream:
            descriptor = -1
            yield stream
            stream.flush()
            os.fsync(stream.fileno())
        os.replace(temp, target)
    except BaseException:
        if descriptor >= 0:
            os.close(descriptor)
        temp.unlink(missing_ok=True)
        raise


@contextlib.contextmanager
def temporary_directory(directory: Path, name: str) -> Iterator[Path]:
    """A new locked `.NAME.PID.N.fanfuse-tmp` directory in `directory`, removed when the block ends
    unless it was renamed away inside it."""
    remove_stale_temporaries(directory, name)
    path = temporary_path(directory, name)
    path.mkdir()
    descriptor = os.open(path, os.O_RDONLY)
    try:
        _lock(descriptor)
        yield path
    finally:
        os.close(descriptor)
        if path.exists():
            shutil.rmtree(path, ignore_errors=True)


def sync_directory(directory: Path) -> None:
    """Makes the renames inside `directory` durable."""
    descriptor = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)


@contextlib.contextmanager
def staged_directory(target: Path) -> Iterator[Path]:
    """A new empty directory beside `target`; when the block ends without an error it replaces
    `target` (each step one atomic rename), otherwise it is removed and `target` stays as it was."""
    target.parent.mkdir(parents=True, exist_ok=True)
    with temporary_directory(target.parent, target.name) as staging:
        yield staging
        swap_directory(staging, target)


def swap_directory(staging: Path, target: Path) -> None:
    """Puts the finished `staging` directory at `target`, retiring what was there; if the second
    rename fails, the previous directory is put back."""
    if not target.exists():
        staging.rename(target)
        sync_directory(target.parent)
        return
    retired = temporary_path(target.parent, target.name)
    target.rename(retired)
    try:
        staging.rename(target)
    except BaseException:
        retired.rename(target)
        raise
    sync_directory(target.parent)
    shutil.rmtree(retired, ignore_errors=True)
