"""The `fanfuse` command as a separate process, for tests of what only a process shows: its exit
status, its stdout, signals."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

# The console script's entry point, run by this interpreter (no dependence on PATH or a built wheel).
CLI = [sys.executable, "-c", "import sys; from fanfuse.cli import main; sys.exit(main())"]


def signal_when(
    args: list[str], cwd: Path, working: Callable[[subprocess.Popen[bytes]], bool], signum: int
) -> subprocess.CompletedProcess[bytes]:
    """Runs the command, sends it `signum` once `working(process)` holds and waits for its end. The
    input must be big enough that the command is still running then (asserted)."""
    process = subprocess.Popen([*CLI, *args], cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 120
    while not working(process):
        assert process.poll() is None, "the command ended before the signal: make the input bigger"
        assert time.monotonic() < deadline, "the command never started working"
        time.sleep(0.005)
    process.send_signal(signum)
    stdout, stderr = process.communicate(timeout=120)
    return subprocess.CompletedProcess(process.args, process.returncode, stdout, stderr)


def has_open(path: Path) -> Callable[[subprocess.Popen[bytes]], bool]:
    """Whether the process has `path` open, i.e. is reading it (Linux /proc)."""

    def check(process: subprocess.Popen[bytes]) -> bool:
        try:
            return any(fd.readlink() == path for fd in Path(f"/proc/{process.pid}/fd").iterdir())
        except OSError:  # a descriptor closed while listed, or the process ended
            return False

    return check


def ended_pid() -> int:
    """The PID of a process that has ended (for temporaries left by a killed writer)."""
    child = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True)
    return int(child.stdout)


def with_flag(argv: list[str], flag: str, values: list[str]) -> list[str]:
    """`argv` with `flag` given `values`: in place of the values it has (as many words as `values`),
    else added at the end (a flag given twice is refused)."""
    if flag not in argv:
        return [*argv, flag, *values]
    at = argv.index(flag)
    return [*argv[: at + 1], *values, *argv[at + 1 + len(values) :]]
