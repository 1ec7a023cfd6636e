"""Text from files, indexes and servers, shown on a terminal as text, never acted on.

A terminal acts on some characters instead of showing them: ESC starts sequences that colour, move
the cursor, set the window title or write the clipboard; BEL rings; NUL and other C0 and C1
controls (0x9b is a one-byte CSI) do the same or vanish; the bidirectional controls reorder what is
shown (U+202E makes "txt.exe" read "exe.txt"). A document title, a model's answer or a server's
error message can hold any of them. Each is shown as its escape (`\\x1b`, `\\u202e`) instead.

`visible` is for one field of a table; `terminal_safe_output` covers every line a command prints
where a person reads it: all of stderr (messages, progress) and stdout when it is a terminal. It
first opens a standard stream that whoever started the command closed (`>&-`) on the null device,
as `>/dev/null` would (stdin's Python stream stays closed, so that reading it is refused as
closed). Python leaves such a stream None, so every print or flush to it would fail, and the first
file the command opens would take its descriptor, where the core's writes to standard output
(`-o -`) would then land.
"""

from __future__ import annotations

import contextlib
import os
import re
import sys
from collections.abc import Iterator
from typing import Any, TextIO

__all__ = ["TerminalSafe", "json_visible", "terminal_safe_output", "visible"]

# DEL, C1 controls, and the bidirectional marks, embeddings, overrides and isolates; then with C0.
_BEYOND_C0 = r"\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069"
_IN_A_FIELD = re.compile(rf"[\x00-\x1f{_BEYOND_C0}]")
# A stream keeps its lines: tab, new line, and the carriage return a progress bar redraws with.
_IN_LINES = re.compile(rf"[\x00-\x08\x0b\x0c\x0e-\x1f{_BEYOND_C0}]")
# JSON escapes C0 controls itself and writes the rest as they are.
_IN_JSON = re.compile(rf"[{_BEYOND_C0}]")


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def visible(text: str) -> str:
    """One field: every character a terminal would act on, line breaks included, as its escape."""
    return _IN_A_FIELD.sub(_escape, text)


def json_visible(text: str) -> str:
    """A JSON document with the characters JSON leaves as they are (DEL, C1, bidirectional) written
    as `\\uXXXX` escapes: the same JSON value, safe to show (they can only be inside strings)."""
    return _IN_JSON.sub(lambda match: f"\\u{ord(match.group()):04x}", text)


class TerminalSafe:
    """A text stream whose every write is made visible first, lines and tabs kept."""

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream

    def write(self, text: str) -> int:
        self._stream.write(_IN_LINES.sub(_escape, text))
        return len(text)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


@contextlib.contextmanager
def terminal_safe_output() -> Iterator[None]:
    """stderr, and stdout when it is a terminal, made visible while the block runs (a pipe or a file
    on stdout gets the bytes as they are: that is data, not a screen)."""
    saved = sys.stdin, sys.stdout, sys.stderr
    _open_closed_streams()
    sys.stderr = TerminalSafe(sys.stderr)
    if _is_terminal(sys.stdout):
        sys.stdout = TerminalSafe(sys.stdout)
    try:
        yield
    finally:
        sys.stdin, sys.stdout, sys.stderr = saved


def _open_closed_streams() -> None:
    for descriptor, name, mode in ((0, "stdin", "r"), (1, "stdout", "w"), (2, "stderr", "w")):
        if getattr(sys, name) is not None:
            continue
        try:
            os.fstat(descriptor)
            continue  # open, though not as a stream of Python's: not this command's to replace
        except OSError:
            pass
        null = os.open(os.devnull, os.O_RDWR)  # the lowest free descriptor: this one
        if null != descriptor:
            os.dup2(null, descriptor)
            os.close(null)
        stream = open(descriptor, mode, closefd=False)  # noqa: SIM115 (lives with the process)
        if name == "stdin":
            # Asked for (`--history -`), a closed stdin is refused as closed; its descriptor stays
            # held by the null device all the same.
            stream.close()
        setattr(sys, name, stream)


def _is_terminal(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False
