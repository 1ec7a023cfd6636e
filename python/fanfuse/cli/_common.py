"""Shared pieces of the commands: bad input exits 2, signals end a command cleanly, tables, a progress
bar on stderr."""

from __future__ import annotations

import argparse
import contextlib
import math
import os
import signal
import sys
import threading
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


class Terminated(BaseException):
    """SIGTERM, raised where Python (or a Rust loop polling for signals) is, as Ctrl-C raises
    KeyboardInterrupt: `finally` blocks and cleanups run, temporary files go away."""


def _raise_terminated(signum: int, frame: object) -> None:
    raise Terminated


def until_signalled(command: str, run: Callable[[], int]) -> int:
    """Runs a command; on SIGINT or SIGTERM, once its cleanups have run, writes one line to stderr and
    ends the process by that same signal, so that the shell sees 130 / 143 (and a script loop stops)."""
    on_main_thread = threading.current_thread() is threading.main_thread()
    # Where SIGTERM is ignored (by whoever started us), it stays ignored.
    catch_term = on_main_thread and signal.getsignal(signal.SIGTERM) is not signal.SIG_IGN
    previous = signal.signal(signal.SIGTERM, _raise_terminated) if catch_term else signal.SIG_DFL
    try:
        return run()
    except KeyboardInterrupt:
        signum = signal.SIGINT
    except Terminated:
        signum = signal.SIGTERM
    finally:
        if catch_term:  # a handler installed outside Python reads back as None: the default then
            signal.signal(signal.SIGTERM, signal.SIG_DFL if previous is None else previous)
    # After a progress bar's "\r" line, start a new one.
    newline = "\n" if sys.stderr.isatty() else ""
    print(f"{newline}fanfuse {command}: interrupted", file=sys.stderr, flush=True)
    with contextlib.suppress(OSError, ValueError):  # what was printed is kept; a closed pipe is no error
        sys.stdout.flush()
    if on_main_thread:
        signal.signal(signum, signal.SIG_DFL)
        os.kill(os.getpid(), signum)
    return 128 + signum  # only reached where the signal does not end the process


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
