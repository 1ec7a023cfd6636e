"""Shared pieces of the commands: how a command ends (bad input exits 2, a closed pipe quietly,
signals cleanly), number and list option types, tables."""

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
# The status of a process ended by SIGPIPE, as the shell reports it.
CLOSED_PIPE = 128 + signal.SIGPIPE


class Terminated(BaseException):
    """SIGTERM, raised where Python (or a Rust loop polling for signals) is, as Ctrl-C raises
    KeyboardInterrupt: `finally` blocks and cleanups run, temporary files go away."""


def _raise_terminated(signum: int, frame: object) -> None:
    raise Terminated


def run_command(command: str, run: Callable[[], int]) -> int:
    """Runs a command, the one place every command ends:

    - bad input (FusionError) and what the system refused (OSError: a read-only place, a full disk)
      print one line `fanfuse CMD: error: ...` and exit 2;
    - a closed output pipe (`fanfuse ... | head`) ends it quietly with 141, as SIGPIPE ends the
      shell's tools: the reader wanted no more;
    - on SIGINT or SIGTERM, once its cleanups have run, it writes one line to stderr and ends the
      process by that same signal, so that the shell sees 130 / 143 (and a script loop stops).
    """
    on_main_thread = threading.current_thread() is threading.main_thread()
    # Where SIGTERM is ignored (by whoever started us), it stays ignored.
    catch_term = on_main_thread and signal.getsignal(signal.SIGTERM) is not signal.SIG_IGN
    previous = signal.signal(signal.SIGTERM, _raise_terminated) if catch_term else signal.SIG_DFL
    try:
        code = run()
        # What is still buffered goes out now, where a closed pipe is caught, not at the exit.
        sys.stdout.flush()
        return code
    except BrokenPipeError:
        return _closed_pipe()
    except FusionError as error:
        return _bad_input(command, str(error))
    except OSError as error:
        where = f"{error.filename}: " if error.filename is not None else ""
        return _bad_input(command, f"{where}{error.strerror or error}")
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


def _bad_input(command: str, message: str) -> int:
    print(f"fanfuse {command}: error: {message}", file=sys.stderr)
    return BAD_INPUT


def _closed_pipe() -> int:
    """The end of a command whose reader closed stdout (or an output pipe): nothing more is printed,
    and what Python still holds for stdout is dropped, so that the exit prints no traceback."""
    try:
        sys.stdout.flush()
    except (BrokenPipeError, ValueError):
        with contextlib.suppress(OSError, ValueError):
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
            os.close(devnull)
    return CLOSED_PIPE


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
