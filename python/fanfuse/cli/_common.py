"""Shared pieces of the run-file commands: bad input exits 2, tables, a progress bar on stderr."""

from __future__ import annotations

import argparse
import math
import sys
import time
from collections.abc import Callable, Sequence

from fanfuse._core import FusionError

BAD_INPUT = 2


def guarded(run: Callable[[argparse.Namespace], int]) -> Callable[[argparse.Namespace], int]:
    """Turns FusionError (malformed file, bad option) into `fanfuse: error: file:line: ...` and exit 2."""

    def wrapper(args: argparse.Namespace) -> int:
        try:
            return run(args)
        except FusionError as error:
            print(f"fanfuse {args.command}: error: {error}", file=sys.stderr)
            return BAD_INPUT

    return wrapper


def float_list(text: str) -> list[float]:
    """argparse type of `--weights 1,0.5,2`: finite numbers only (no option takes nan or inf)."""
    try:
        values = [float(part) for part in text.split(",")]
    except ValueError:
        values = [math.nan]
    if not all(math.isfinite(v) for v in values):
        raise argparse.ArgumentTypeError(
            f"expected comma-separated finite numbers such as 1,0.5,2 (got {text!r})"
        )
    return values


def int_from(minimum: int, maximum: int | None = None, note: str = "") -> Callable[[str], int]:
    """argparse type of an int option in [minimum, maximum]; `note` says what a special value means."""
    accepted = f"an int >= {minimum}" if maximum is None else f"an int from {minimum} to {maximum}"

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            value = None
        if value is None or value < minimum or (maximum is not None and value > maximum):
            raise argparse.ArgumentTypeError(f"must be {accepted}{note} (got {text!r})")
        return value

    return parse


def name_list(text: str) -> list[str]:
    return [part.strip() for part in text.split(",") if part.strip()]


def table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """A plain-text table: first column left-aligned, the others right-aligned."""
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]

    def line(cells: Sequence[str]) -> str:
        return "  ".join(
            c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(cells, widths, strict=False))
        )

    return "\n".join([line(header), "  ".join("-" * w for w in widths), *(line(r) for r in rows)])


class Progress:
    """`label [#####.....] 12/40` on stderr, redrawn at most 10 times a second; silent off a terminal."""

    def __init__(self, label: str, enabled: bool | None = None) -> None:
        self.label = label
        self.enabled = sys.stderr.isatty() if enabled is None else enabled
        self.last = 0.0

    def __call__(self, done: int, total: int) -> None:
        if not self.enabled or (done < total and time.monotonic() - self.last < 0.1):
            return
        self.last = time.monotonic()
        filled = 30 * done // max(total, 1)
        sys.stderr.write(f"\r{self.label} [{'#' * filled}{'.' * (30 - filled)}] {done}/{total}")
        if done >= total:
            sys.stderr.write("\n")
        sys.stderr.flush()
