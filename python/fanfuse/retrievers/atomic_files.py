"""Writes that are all or nothing: a file or a directory appears complete or not at all.

Everything is written under a unique temporary name beside the target (same file system, so the
final step is one `rename`), and removed if anything fails; a reader never sees a partial file,
and a failed rewrite leaves the previous version in place.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path


def write_file_atomically(target: str | os.PathLike[str], write: Callable[[Path], None]) -> None:
    """Call `write(staging_path)`, then rename the result onto `target`.

    The staging name keeps `target`'s suffix, so writers that append one (`np.savez` adds `.npz`)
    write exactly the path they are given.
    """
    path = Path(target)
    suffix = path.suffix or ".tmp"
    descriptor, name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=suffix, dir=path.parent)
    os.close(descriptor)
    staging = Path(name)
    try:
        write(staging)
        os.replace(staging, path)
    except BaseException:
        staging.unlink(missing_ok=True)
        raise


@contextlib.contextmanager
def staged_directory(target: str | os.PathLike[str]) -> Iterator[Path]:
    """Yield a new empty directory beside `target`; when the block ends without an error, it
    replaces `target`, otherwise it is deleted and `target` is left as it was."""
    path = Path(target)
    path.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{path.name}.building-", dir=path.parent))
    try:
        yield staging
        _swap_in(staging, path)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise


def _swap_in(staging: Path, target: Path) -> None:
    """Replace `target` by the finished `staging` directory: each step is one atomic rename."""
    if not target.exists():
        staging.rename(target)
        return
    retired = Path(tempfile.mkdtemp(prefix=f".{target.name}.old-", dir=target.parent))
    retired.rmdir()
    target.rename(retired)
    try:
        staging.rename(target)
    except BaseException:
        retired.rename(target)  # put the previous version back
        raise
    shutil.rmtree(retired, ignore_errors=True)
