"""Shared pieces of the commands: how a command ends (bad input exits 2, a closed pipe quietly,
signals cleanly), number and list option types."""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import os
import signal
import sys
import threading
import traceback
from collections.abc import Callable, Iterator
from typing import Any

from fanfuse._cleanups import run_cleanups
from fanfuse._core import FusionError
from fanfuse._panics import is_rust_panic
from fanfuse.cli.mentions import with_flags
from fanfuse.cli.paths import OUTPUT, OUTPUT_DIRECTORY, option_name, path_actions
from fanfuse.cli.terminal import visible
from fanfuse.errors import INPUT_ERRORS, InputError, InvalidOutput, SearchFailed
from fanfuse.limits import LIMITS, Limit

BAD_INPUT = 2
# The environment variable that adds the traceback to the one line of an unforeseen failure.
DEBUG = "FANFUSE_DEBUG"
# The most characters of an unforeseen failure's message that its line shows.
_SHOWN_CHARS = 500
# The status of a process ended by SIGPIPE, as the shell reports it.
CLOSED_PIPE = 128 + signal.SIGPIPE


# The names the library and the core give values that a flag of the CLI passes on, where they are not
# its dest (`--run-format` is `format=` of `fuse_files`; a metric of `--metrics` is a `metric`).
KEYWORDS: dict[str, tuple[str, ...]] = {"run_format": ("format",), "metrics": ("metric",)}


def flags_by_name(parser: argparse.ArgumentParser) -> dict[str, str]:
    """The flags of a command by the names the library and the core give their values in errors:
    its dest (``mmr_lambda`` for ``--mmr-lambda``, ``tie_break`` for ``--tie-break``), its KEYWORDS
    and, for a number, the name of its row of LIMITS (``k`` for ``--rrf-k``, ``partitions``); a name
    that two flags of the command share is left out, as are ``--help`` and the old spellings (whose
    dest is SUPPRESS): no value of the library is theirs."""
    found: dict[str, list[str]] = {}
    for action in parser._actions:
        if not action.option_strings or action.dest in (argparse.SUPPRESS, "help"):
            continue
        names = {action.dest, *KEYWORDS.get(action.dest, ())}
        if isinstance(action.type, NumberFlag | NumberListFlag):
            names.add(action.type.limit.name)
        for name in names:
            found.setdefault(name, []).append(max(action.option_strings, key=len))
    return {name: flags[0] for name, flags in found.items() if len(flags) == 1}


def given_paths(parser: argparse.ArgumentParser, args: argparse.Namespace | None) -> set[str]:
    """The files and directories the parsed command was given (``fanfuse.cli.paths``)."""
    return {path for action, _, _ in path_actions(parser) for path in _given(action, args)}


def _given(action: argparse.Action, args: argparse.Namespace | None) -> list[str]:
    """The paths the parsed command gave `action` (none for no command parsed)."""
    value = None if args is None else getattr(args, action.dest, None)
    return list(map(str, value if isinstance(value, list) else [] if value is None else [value]))


@contextlib.contextmanager
def named_by_flags(parser: argparse.ArgumentParser, args: argparse.Namespace | None = None) -> Iterator[None]:
    """The one place a refusal of the library or the core about a value the command passed on
    (``k must be a finite number > 0``, ``partitions must be at most ...``, ``drop weights``,
    ``(format 'mtrag')``) is re-raised naming the flags the user gave: every mention of an option
    (``fanfuse.cli.mentions``) is written as its flag, and the flag of the option a ``FusionError``
    refuses (``error.option``) leads the message, as every refusal of a flag starts with it
    (``--norm: --method 'rrf' reads ranks only, ...``). `args` gives the command's paths,
    whose names are kept even where one reads like an option (a run file named ``weights``)."""
    try:
        yield
    except (FusionError, InputError) as error:
        message = str(error)
        flags = flags_by_name(parser)
        written = with_flags(message, flags, given_paths(parser, args))
        flag = flags.get(getattr(error, "option", None) or "")
        if flag is not None and not written.startswith(flag):
            written = f"{flag}: {written}"
        if isinstance(error, InvalidOutput):
            written = _naming_its_option(written, parser, args)
        if written == message:
            raise
        raise type(error)(written) from None


def _naming_its_option(message: str, parser: argparse.ArgumentParser, args: argparse.Namespace | None) -> str:
    """A refusal of an output the guard writes (``/tmp: is a directory; ...``) led by the option the
    path was given to (``--output '/tmp': ...``), as a refusal of an input is."""
    for action, role, _ in path_actions(parser):
        for path in _given(action, args) if role in (OUTPUT, OUTPUT_DIRECTORY) else ():
            if message.startswith(f"{path}: "):
                return f"{option_name(action)} {path!r}: {message.removeprefix(f'{path}: ')}"
            if role == OUTPUT_DIRECTORY and message.startswith(f"{path.rstrip('/')}/"):
                return f"{option_name(action)} {path!r}: {message}"  # a file the folder was to hold
    return message


class Terminated(BaseException):
    """SIGTERM, raised where Python (or a Rust loop polling for signals) is, as Ctrl-C raises
    KeyboardInterrupt: `finally` blocks and cleanups run, temporary files go away."""


# The signals that reached the command now running (its handlers note them before raising).
_RECEIVED: list[int] = []


def _raise_terminated(signum: int, frame: object) -> None:
    _RECEIVED.append(signum)
    raise Terminated


def _raise_interrupt(signum: int, frame: object) -> None:
    _RECEIVED.append(signum)
    raise KeyboardInterrupt


def _signal_kept(run: Callable[[], int]) -> int:
    """`run()`; where a signal arrived during it but what it raised is another exception, the
    signal's own: an extension module imported at the moment of a Ctrl-C can swallow the
    KeyboardInterrupt and raise its own error (onnxruntime's `ImportError: import numpy failed`,
    with no cause), which would read as a missing extra."""
    try:
        return run()
    except Exception:
        if _RECEIVED:
            raise (KeyboardInterrupt if _RECEIVED[0] == signal.SIGINT else Terminated) from None
        raise


def run_command(command: str, run: Callable[[], int]) -> int:
    """Runs a command, the one place every command ends:

    - bad input (``fanfuse.errors.INPUT_ERRORS``), a search whose every branch failed (``SearchFailed``)
      and what the system refused (OSError: a read-only place, a full disk)
      print one line `fanfuse CMD: error: ...` and exit 2;
    - so does any other exception (input nested too deeply, memory exhausted, a failure no check
      foresaw, a Rust panic): one line naming its type and message, exit 2; `FANFUSE_DEBUG=1` adds
      the traceback;
    - a closed output pipe (`fanfuse ... | head`) ends it quietly with 141, as SIGPIPE ends the
      shell's tools: the reader wanted no more;
    - on SIGINT or SIGTERM, once its cleanups have run (the `finally` blocks, then the exit-time
      ones of `fanfuse._cleanups`), it writes one line to stderr and ends the process by that same
      signal, so that the shell sees 130 / 143 (and a script loop stops).
    """
    on_main_thread = threading.current_thread() is threading.main_thread()
    # Where SIGTERM is ignored (by whoever started us), it stays ignored.
    catch_term = on_main_thread and signal.getsignal(signal.SIGTERM) is not signal.SIG_IGN
    previous = signal.signal(signal.SIGTERM, _raise_terminated) if catch_term else signal.SIG_DFL
    # Python's own SIGINT handler is replaced by one that also notes it; another (or SIG_IGN) stays.
    catch_int = on_main_thread and signal.getsignal(signal.SIGINT) is signal.default_int_handler
    if catch_int:
        signal.signal(signal.SIGINT, _raise_interrupt)
    _RECEIVED.clear()
    try:
        code = _signal_kept(run)
        # What is still buffered goes out now, where a closed pipe is caught, not at the exit.
        sys.stdout.flush()
        return code
    except BrokenPipeError:
        return _closed_pipe()
    except INPUT_ERRORS as error:
        return _bad_input(command, str(error))
    except SearchFailed as error:
        return _bad_input(command, str(error))
    except OSError as error:
        where = f"{error.filename}: " if error.filename is not None else ""
        return _bad_input(command, f"{where}{error.strerror or error}")
    except RecursionError as error:
        return _unforeseen(command, error, "the input is nested too deeply to read")
    except MemoryError as error:
        return _unforeseen(command, error, "out of memory: the input is too large for this machine")
    except Exception as error:
        return _unforeseen(command, error)
    except KeyboardInterrupt:
        signum = signal.SIGINT
    except Terminated:
        signum = signal.SIGTERM
    except BaseException as error:  # a Rust panic is a failure too; SystemExit goes on up
        if not is_rust_panic(error):
            raise
        return _unforeseen(command, error)
    finally:
        if catch_term:  # a handler installed outside Python reads back as None: the default then
            signal.signal(signal.SIGTERM, signal.SIG_DFL if previous is None else previous)
        if catch_int:
            signal.signal(signal.SIGINT, signal.default_int_handler)
    # After a progress bar's "\r" line, start a new one.
    newline = "\n" if sys.stderr.isatty() else ""
    print(f"{newline}fanfuse {command}: interrupted", file=sys.stderr, flush=True)
    with contextlib.suppress(OSError, ValueError):  # what was printed is kept; a closed pipe is no error
        sys.stdout.flush()
    if on_main_thread:
        # From here a second signal ends the process at once, without a traceback from the cleanups.
        for stopping in (signal.SIGINT, signal.SIGTERM):
            if signal.getsignal(stopping) is not signal.SIG_IGN:
                signal.signal(stopping, signal.SIG_DFL)
        # Ending by the signal skips the interpreter's exit, and with it the exit-time cleanups: run
        # them first (a server's copy of its index goes with them).
        run_cleanups()
        signal.signal(signum, signal.SIG_DFL)
        os.kill(os.getpid(), signum)
    return 128 + signum  # only reached where the signal does not end the process


def _unforeseen(command: str, error: BaseException, message: str | None = None) -> int:
    """A failure no check foresaw: one line still (`message`, else the exception's own), and the
    traceback where FANFUSE_DEBUG asks for it."""
    if os.environ.get(DEBUG, "").strip() not in ("", "0"):
        traceback.print_exception(error)
    return _bad_input(command, message or f"{_one_line(error)} (set {DEBUG}=1 for the traceback)")


def _one_line(error: BaseException) -> str:
    """The exception as one line of at most _SHOWN_CHARS characters: its type and its message."""
    message = " ".join(str(error).split())
    if len(message) > _SHOWN_CHARS:
        message = message[:_SHOWN_CHARS] + "..."
    return f"{type(error).__name__}: {message}" if message else type(error).__name__


def _bad_input(command: str, message: str) -> int:
    # One line whatever the message quotes: a name read from a file can hold a line break.
    print(f"fanfuse {command}: error: {visible(message)}", file=sys.stderr)
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


@dataclasses.dataclass(frozen=True)
class NumberFlag:
    """argparse type of a numeric flag, from its row of `fanfuse.limits.LIMITS`: a value out of range
    (NaN, infinite, or not a number) is a usage error naming the flag and what it accepts."""

    limit: Limit
    note: str = ""  # what a special value means, e.g. " (0 keeps all)"

    @property
    def accepted(self) -> str:
        return self.limit.accepted() + self.note

    def __call__(self, text: str) -> int | float:
        value = _number(text, self.limit)
        if value is None:
            raise argparse.ArgumentTypeError(f"must be {self.accepted} (got {_shown(text)})")
        return value


@dataclasses.dataclass(frozen=True)
class NumberListFlag:
    """argparse type of a flag taking comma-separated numbers (`--weights 1,0.5,2`), each in the range
    of its row of LIMITS."""

    limit: Limit

    @property
    def accepted(self) -> str:
        return f"comma-separated numbers, each {self.limit.accepted()}"

    def __call__(self, text: str) -> list[int | float]:
        values = [_number(part, self.limit) for part in text.split(",")]
        if not text.strip() or any(v is None for v in values):
            example = "1,0.5,2" if self.limit.kind is float else "5,10,25"
            raise argparse.ArgumentTypeError(
                f"expected {self.accepted}, such as {example} (got {_shown(text)})"
            )
        return [v for v in values if v is not None]


def _number(text: str, limit: Limit) -> int | float | None:
    """`text` as the row's kind of number if it is one in range, else None."""
    try:
        value: int | float = limit.kind(text.strip())
    except ValueError:  # not a number (or an int of more digits than Python converts)
        return None
    return value if limit.admits(value) else None


def _shown(text: str) -> str:
    return repr(text if len(text) <= 40 else text[:40] + "...")


def number_option(
    parser: argparse.ArgumentParser | argparse._ArgumentGroup,
    flag: str,
    key: str,
    help: str,
    *,
    note: str = "",
    many: bool = False,
    **options: Any,
) -> None:
    """Adds the numeric `flag` whose range is the row `key` of LIMITS: its type checks it and its help
    ends with what it accepts. `many`: comma-separated numbers."""
    kind = NumberListFlag(LIMITS[key]) if many else NumberFlag(LIMITS[key], note)
    parser.add_argument(flag, type=kind, help=f"{help} [{kind.accepted}]", **options)


def name_list(text: str) -> list[str]:
    """argparse type of `--metrics ndcg@10,recall@100`: one name or more, each without the spaces
    around it. An empty name (`ndcg@10,,map`, a comma at either end) is refused by its position: it
    is a slip, and leaving it out would run with fewer names than were typed."""
    names = [part.strip() for part in text.split(",")]
    given = [name for name in names if name]
    if not given:
        raise argparse.ArgumentTypeError(
            f"expected comma-separated names, such as ndcg@10,map (got {text!r})"
        )
    if len(given) < len(names):
        empty = names.index("") + 1
        raise argparse.ArgumentTypeError(
            f"expected comma-separated names, such as {','.join(given)}: name {empty} of {len(names)} "
            f"is empty (got {text!r})"
        )
    return names
