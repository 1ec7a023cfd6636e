"""Path arguments: what the Python API takes where a caller names a file or folder to read or write
(``PathArgument``: a str, or an ``os.PathLike`` naming a str path), and ``utf8_path``, which makes one
the str the core takes (the core's paths are UTF-8)."""

from __future__ import annotations

import os

from fanfuse.errors import InputError

__all__ = ["PathArgument", "utf8_path"]

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
