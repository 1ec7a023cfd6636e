"""What every bench uses to measure and report: the line that names the machine (with the versions
of the libraries a bench adds to it; and the line that adds a run's seconds and load), the load
average, the best-of-N timer, a Markdown table of measured rows, the 95th percentile of latencies,
and a command's wall time and peak memory.
Only the standard library and fanfuse: a bench that needs none of the retrievers loads none of them
by importing this."""

from __future__ import annotations

import gc
import json
import os
import platform
import re
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

import fanfuse
from fanfuse import _core

CPUINFO = Path("/proc/cpuinfo")


def cpu_model(cpuinfo: Path = CPUINFO) -> str:
    """The CPU's model name as the kernel gives it; where there is no such line (no /proc, or a CPU
    whose kernel names none), the platform's name of the processor or of the architecture."""
    if cpuinfo.is_file():
        for line in cpuinfo.read_text(encoding="utf-8", errors="replace").splitlines():
            key, _, value = line.partition(":")
            if key.strip() == "model name" and value.strip():
                return value.strip()
    return platform.processor() or platform.machine() or "unknown CPU"


def machine(*facts: str, cpuinfo: Path = CPUINFO) -> str:
    """The machine a bench measured on, in one line: CPU model and core count, Python version, fanfuse
    version and the profile its core was compiled with, then `facts` in the order given (what else the
    bench's numbers depend on: other libraries' versions, the date)."""
    cores = os.cpu_count() or 1
    # A bench comparing builds (fused_result_cost.py) may load one older than the core's `_BUILD`.
    build = getattr(_core, "_BUILD", None)
    stated = f"{build} build" if build else "build not stated by its core"
    return "; ".join(
        [
            f"{cpu_model(cpuinfo)}, {cores} core{'s' if cores > 1 else ''}",
            f"Python {platform.python_version()}",
            f"fanfuse {fanfuse.__version__} ({stated})",
            *facts,
        ]
    )


def versions(*distributions: str) -> list[str]:
    """`name version` of each installed distribution, `name (not installed)` of the others: facts for
    `machine`."""
    found = []
    for name in distributions:
        try:
            found.append(f"{name} {version(name)}")
        except PackageNotFoundError:
            found.append(f"{name} (not installed)")
    return found


def run_line(started: float, *facts: str) -> str:
    """The machine (with `facts`), the seconds since `started`, and the load average now."""
    took = time.perf_counter() - started
    return f"machine: {machine(*facts)}; {took:.0f} s; {load_text('at the end')}"


def load_averages() -> tuple[float, float, float]:
    """The load average over 1, 5 and 15 minutes, to two decimals: what a bench's record keeps of
    how busy the shared machine was."""
    one, five, fifteen = (round(x, 2) for x in os.getloadavg())
    return one, five, fifteen


def load_text(when: str = "") -> str:
    """The load average as every bench prints it, `load average WHEN (1 / 5 / 15 min): a / b / c`."""
    named = f"load average {when}".rstrip()
    return f"{named} (1 / 5 / 15 min): " + " / ".join(f"{x:.2f}" for x in load_averages())


def best_seconds(
    contenders: Mapping[str, Callable[[], object]],
    *,
    repeat: int,
    number: int | None = 1,
    min_seconds: float = 0.05,
    interleaved: bool = True,
    warm_up: int = 0,
    collector: bool = True,
    setup: Callable[[], object] | None = None,
    clock: Callable[[], float] = time.perf_counter,
) -> dict[str, float]:
    """The best seconds per call of each contender: `repeat` timings of `number` calls in a row, each
    timing divided by `number`, the least kept.

    - `number=None` finds each contender's number first, as `timeit`'s autorange does: 1, 2, 4, ...
      until that many calls take `min_seconds` (those calls are not counted).
    - `interleaved`: every round times each contender in turn, so that a busy spell of the shared
      machine hits all alike; otherwise each contender's `repeat` timings run before the next's.
    - `warm_up`: calls of each contender before its timings (a JIT compiles, caches fill).
    - `collector=False` switches the garbage collector off while timing (as `timeit` does: inputs of
      millions of objects would otherwise be walked by its passes), back to how it was after.
    - `setup` is called before every timing, outside it (`gc.collect` to start each from no garbage).
    """

    def timed(work: Callable[[], object], calls: int) -> float:
        if setup is not None:
            setup()
        was_on = gc.isenabled()
        (gc.enable if collector else gc.disable)()
        try:
            start = clock()
            for _ in range(calls):
                work()
            return clock() - start
        finally:
            (gc.enable if was_on else gc.disable)()

    numbers = {}
    for name, work in contenders.items():
        for _ in range(warm_up):
            work()
        numbers[name] = number or 1
        while number is None and timed(work, numbers[name]) < min_seconds:
            numbers[name] *= 2
    best = dict.fromkeys(contenders, float("inf"))
    if interleaved:
        order = [name for _ in range(repeat) for name in contenders]
    else:
        order = [name for name in contenders for _ in range(repeat)]
    for name in order:
        best[name] = min(best[name], timed(contenders[name], numbers[name]) / numbers[name])
    return best


def p95(milliseconds: Sequence[float]) -> float:
    """The 95th percentile of the latencies (the one latency of a single question)."""
    return statistics.quantiles(milliseconds, n=20)[-1] if len(milliseconds) > 1 else milliseconds[0]


def markdown_table(columns: str, aligns: str, rows: Iterable[Mapping[str, Any]]) -> str:
    """A Markdown table of `rows`, a line each. `columns` is its header, `title | title | ...`, each
    title followed by `=key` where the row's key is another, and by `:spec`, the format spec of the
    value (None, in a column with a spec, is an empty cell: a comparison not made); `aligns` has a
    letter a column, `l` (left) or `r` (right)."""
    parsed = []
    for column in columns.split(" | "):
        named, _, spec = column.partition(":")
        title, _, key = named.partition("=")
        parsed.append((title, key or title, spec))
    if len(parsed) != len(aligns) or set(aligns) - {"l", "r"}:
        raise ValueError(f"aligns {aligns!r}: one letter, l or r, for each of the {len(parsed)} columns")

    def cell(value: Any, spec: str) -> str:
        return "" if value is None and spec else format(value, spec)

    lines = [
        "| " + " | ".join(title for title, _, _ in parsed) + " |",
        "|" + "".join("---:|" if a == "r" else "---|" for a in aligns),
    ]
    lines += ["| " + " | ".join(cell(r[key], spec) for _, key, spec in parsed) + " |" for r in rows]
    return "\n".join(lines)


def print_measured(rows: Iterable[dict[str, Any]], columns: str, aligns: str) -> None:
    """Each row printed as a JSON line as soon as it is measured, then all of them as a Markdown
    table (`markdown_table`'s `columns` and `aligns`)."""
    measured = []
    for row in rows:
        print(json.dumps(row), flush=True)
        measured.append(row)
    print("\n" + markdown_table(columns, aligns, measured))


def fanfuse_command(*words: str) -> list[str]:
    """The command line of `fanfuse WORDS...` in a process of its own, run by this interpreter."""
    return [sys.executable, "-c", "import sys; from fanfuse.cli import main; sys.exit(main())", *words]


def time_command(command: Sequence[str], timeout: float | None = None) -> dict[str, Any] | None:
    """`command` run under `/usr/bin/time -v`: its exit status, wall seconds, peak RSS in MB and the
    first line of its stderr; None when it ran longer than `timeout` seconds."""
    try:
        done = subprocess.run(
            ["/usr/bin/time", "-v", *command], capture_output=True, text=True, timeout=timeout, check=False
        )
    except subprocess.TimeoutExpired:
        return None
    wall = re.search(r"Elapsed \(wall clock\) time \(h:mm:ss or m:ss\): (\S+)", done.stderr)
    peak = re.search(r"Maximum resident set size \(kbytes\): (\d+)", done.stderr)
    clock = reversed(wall.group(1).split(":")) if wall else []
    return {
        "exit": done.returncode,
        "wall_s": sum(float(part) * 60**i for i, part in enumerate(clock)) if wall else None,
        "peak_mb": round(int(peak.group(1)) / 1024) if peak else None,
        "error": done.stderr.splitlines()[0] if done.returncode else "",
    }
