"""The one progress bar of every command: a line on stderr, drawn only when stderr is a terminal (logs
and pipes stay clean), redrawn at most 10 times a second."""

from __future__ import annotations

import sys
import time
from typing import TextIO

REDRAW_SECONDS = 0.1


class ProgressBar:
    """Call with the amount done (and the total, when it is known only then); `close()` ends the line.

    `unit="bytes"` shows sizes in MB; `note` adds a word or two after the counts (e.g. queries fused).
    """

    def __init__(
        self, label: str, total: int | None = None, stream: TextIO | None = None, unit: str = ""
    ) -> None:
        self.label = label
        self.total = total
        self.unit = unit
        self.stream = stream if stream is not None else sys.stderr
        self.enabled = self.stream.isatty()
        self.started = time.perf_counter()
        self._last = 0.0
        self._drawn = False

    def __call__(self, done: int, total: int | None = None, note: str = "") -> None:
        if total is not None:
            self.total = total
        if not self.enabled:
            return
        now = time.perf_counter()
        finished = self.total is not None and done >= self.total
        if not finished and now - self._last < REDRAW_SECONDS:
            return
        self._last = now
        elapsed = now - self.started
        counts = self._count(done) if not self.total else f"{self._count(done)}/{self._count(self.total)}"
        if self.total:
            fraction = min(done / self.total, 1.0)
            bar = "#" * int(30 * fraction) + "." * (30 - int(30 * fraction))
            line = f"{self.label} [{bar}] {counts} {fraction:4.0%}"
        else:
            line = f"{self.label} {counts}"
        note = f" {note}" if note else ""
        self.stream.write(f"\r{line}{note} {elapsed:5.1f}s")
        self.stream.flush()
        self._drawn = True

    def _count(self, value: int) -> str:
        return f"{value / 1e6:.1f} MB" if self.unit == "bytes" else str(value)

    def close(self) -> None:
        """Ends the line drawn, if any (once: closing again writes nothing)."""
        if self._drawn:
            self.stream.write("\n")
            self.stream.flush()
            self._drawn = False
