"""A one-line progress bar on stderr, drawn only when stderr is a terminal (logs and pipes stay clean)."""

from __future__ import annotations

import sys
import time
from typing import TextIO


class ProgressBar:
    """Call with the number of items done; `close()` ends the line. Silent unless `stream` is a tty."""

    def __init__(self, label: str, total: int | None = None, stream: TextIO | None = None) -> None:
        self.label = label
        self.total = total
        self.stream = stream if stream is not None else sys.stderr
        self.enabled = self.stream.isatty()
        self.started = time.perf_counter()
        self._drawn = False

    def __call__(self, done: int) -> None:
        if not self.enabled:
            return
        elapsed = time.perf_counter() - self.started
        if self.total:
            fraction = min(done / self.total, 1.0)
            bar = "#" * int(30 * fraction) + "." * (30 - int(30 * fraction))
            line = f"{self.label} [{bar}] {done}/{self.total} {fraction:4.0%} {elapsed:5.1f}s"
        else:
            line = f"{self.label} {done} {elapsed:5.1f}s"
        self.stream.write("\r" + line)
        self.stream.flush()
        self._drawn = True

    def close(self) -> None:
        """Ends the line drawn, if any (once: closing again writes nothing)."""
        if self._drawn:
            self.stream.write("\n")
            self.stream.flush()
            self._drawn = False
