"""Path arguments: what the Python API takes where a caller names a file or folder to read or write
(``PathArgument``: a str, or an ``os.PathLike`` naming a str path), ``utf8_path``, which makes one
the str the core takes (the core's paths are UTF-8), and ``unreadable``, what keeps a path from being
read as the file or folder it is given for."""

from __future__ import annotations

import os
import stat

from fanfuse.errors import InputError

__all__ = ["PathArgument", "unreadable", "utf8_path"]

PathArgument = str | os.PathLike[str]


def utf8_path(value: object, name: str, refusal: type[InputError]) -> str:
    """`value` (a str or an ``os.PathLike`` naming a str path) as the str the core takes; `name`
    names the argument in the messages, and a path that is not UTF-8 raises `refusal`, the class of
    what the path is for (``InvalidOutput`` for a file to write, ``InvalidCorpus`` for a corpus)."""
    path = os.fspath(value) if isinstance(value, str | os.PathLike) else None
    if not isinstance(path, str):
        raise TypeError(f"{name} must be a path (str or os.PathLike), not {type(value).__name__}")
    try:
        path.encode()
    except UnicodeEncodeError:
        raise refusal(f"{name} {path!r} is not valid UTF-8; give a UTF-8 path") from None
    return path


def unreadable(path: PathArgument, *, folder: bool = False) -> str | None:
    """Why `path` cannot be read as a file (a folder with `folder`), in the words a message gives after
    the path (``no such file or directory``, ``is a directory``, ``is not a directory``, the system's
    reason); None where it can be tried. A pipe or a device (``/dev/stdin``, ``<(...)``) is a file."""
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        return "no such file or directory"
    except OSError as error:
        return (error.strerror or str(error)).lower()
    if folder and not stat.S_ISDIR(mode):
        return "is not a directory"
    if not folder and stat.S_ISDIR(mode):
        return "is a directory"
    return None
