"""benches/measuring.py, what every bench uses to measure and report: the machine line (the one
description of the machine in benches/), the load average (the one text of it in benches/), the
best-of timer (the one in benches/), the Markdown table, the 95th percentile, and that importing it
loads only the standard library beside fanfuse."""

from __future__ import annotations

import ast
import gc
import json
import os
import platform
import re
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import fanfuse
import pytest
from fanfuse import _core
from test_lazy_imports import HEAVY, loaded_after
from test_mtrag_retrieval_smoke import BENCHES, load

measuring = load("measuring")
# Where a bench would find the machine for itself, or state the core's build without reading it,
# instead of asking `measuring.machine`.
MACHINE_PROBES = re.compile(
    r"/proc/cpuinfo|platform\.(processor|python_version|python_implementation|machine)\("
    r"|[\"'](release|debug) build[\"']"
)


def bench_sources() -> dict[str, str]:
    return {path.name: path.read_text(encoding="utf-8") for path in sorted(BENCHES.glob("*.py"))}


def test_machine_names_the_cpu_cores_python_and_fanfuse_then_the_facts_in_order(tmp_path: Path) -> None:
    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text(
        "processor\t: 0\nmodel name\t: Some CPU @ 2.0GHz\n\nprocessor\t: 1\nmodel name\t: Some CPU @ 2.0GHz\n"
    )
    cores = os.cpu_count() or 1
    line = measuring.machine("numpy 9.9", "2026-01-01", cpuinfo=cpuinfo)
    assert line.split("; ") == [
        f"Some CPU @ 2.0GHz, {cores} core{'s' if cores > 1 else ''}",
        f"Python {platform.python_version()}",
        f"fanfuse {fanfuse.__version__} ({_core._BUILD} build)",
        "numpy 9.9",
        "2026-01-01",
    ]
    assert _core._BUILD in ("debug", "release")


def test_machine_says_when_the_core_does_not_state_its_build(monkeypatch: pytest.MonkeyPatch) -> None:
    # A build older than `_core._BUILD`, as a bench comparing two builds may load.
    monkeypatch.delattr(measuring._core, "_BUILD")
    assert f"fanfuse {fanfuse.__version__} (build not stated by its core)" in measuring.machine().split("; ")


@pytest.mark.parametrize("cpuinfo", ["processor\t: 0\nBogoMIPS\t: 50.00\n", "model name\t:\n", None])
def test_machine_falls_back_to_the_platform_without_a_model_name(tmp_path: Path, cpuinfo: str | None) -> None:
    path = tmp_path / "cpuinfo"
    if cpuinfo is not None:
        path.write_text(cpuinfo)
    named = platform.processor() or platform.machine() or "unknown CPU"
    assert measuring.machine(cpuinfo=path).startswith(f"{named}, ")


def test_versions_name_the_installed_and_say_which_are_not() -> None:
    missing = "no-such-distribution-of-fanfuse"
    assert measuring.versions("pytest", missing) == [
        f"pytest {pytest.__version__}",
        f"{missing} (not installed)",
    ]


def test_run_line_is_the_machine_line_with_the_facts_then_the_run() -> None:
    line = measuring.run_line(0.0, "tantivy 1.0")
    assert line.startswith(f"machine: {measuring.machine('tantivy 1.0')}; ")
    assert re.search(r"; \d+ s; load average at the end \(1 / 5 / 15 min\): [\d.]+ / [\d.]+ / [\d.]+$", line)


def test_load_averages_are_the_three_to_two_decimals_and_load_text_prints_them(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(measuring.os, "getloadavg", lambda: (0.126, 1.5, 12.0))
    assert measuring.load_averages() == (0.13, 1.5, 12.0)
    assert measuring.load_text() == "load average (1 / 5 / 15 min): 0.13 / 1.50 / 12.00"
    assert measuring.load_text("before") == "load average before (1 / 5 / 15 min): 0.13 / 1.50 / 12.00"
    assert measuring.run_line(0.0).endswith("; load average at the end (1 / 5 / 15 min): 0.13 / 1.50 / 12.00")


def test_no_bench_describes_the_machine_by_itself() -> None:
    found = {
        f"{name}:{number}": line.strip()
        for name, text in bench_sources().items()
        if name != "measuring.py"
        for number, line in enumerate(text.splitlines(), 1)
        if MACHINE_PROBES.search(line)
    }
    assert found == {}


def test_markdown_table_keys_formats_and_aligns_its_columns() -> None:
    rows = [{"name": "a", "ms": 1.234, "gain": 0.5}, {"name": "b", "ms": 10.0, "gain": None}]
    table = measuring.markdown_table("name | time=ms:.1f | Δ=gain:+.2f", "lrr", rows)
    assert table.splitlines() == [
        "| name | time | Δ |",
        "|---|---:|---:|",
        "| a | 1.2 | +0.50 |",
        "| b | 10.0 |  |",
    ]


def test_markdown_table_shows_none_where_a_column_has_no_format() -> None:
    assert measuring.markdown_table("x", "l", [{"x": None}]).splitlines()[-1] == "| None |"


@pytest.mark.parametrize("aligns", ["l", "lrr", "lc"])
def test_markdown_table_refuses_aligns_that_do_not_fit_its_columns(aligns: str) -> None:
    with pytest.raises(ValueError, match=r"aligns '\w+': one letter, l or r, for each of the 2 columns"):
        measuring.markdown_table("a | b", aligns, [])


def test_p95_is_the_one_latency_or_lies_between_the_two_largest() -> None:
    assert measuring.p95([7.5]) == 7.5
    latencies = [float(ms) for ms in range(1, 21)]
    assert latencies[-2] <= measuring.p95(latencies) <= latencies[-1]


def test_importing_measuring_adds_only_the_standard_library_to_fanfuse() -> None:
    probe = (
        f"import sys; sys.path.insert(0, {str(BENCHES)!r}); import fanfuse; before = set(sys.modules)\n"
        "import json, measuring\n"
        "print(json.dumps(sorted(set(sys.modules) - before - {'measuring'})))"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    added = json.loads(out.splitlines()[-1])
    assert [m for m in added if m.split(".")[0] not in sys.stdlib_module_names] == []


def command_timing_benches() -> list[str]:
    """The benches that time fanfuse's commands in processes of their own (by importing
    `time_command`): the process that drives them needs none of the retrieval stack."""
    timing = []
    for name, text in bench_sources().items():
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.ImportFrom) and "time_command" in {a.name for a in node.names}:
                timing.append(name.removesuffix(".py"))
    return timing


@pytest.mark.parametrize("bench", command_timing_benches())
def test_a_bench_that_times_commands_loads_no_retrieval_stack(bench: str) -> None:
    code = f"import sys; sys.path.insert(0, {str(BENCHES)!r}); import {bench}"
    assert loaded_after(code) == dict.fromkeys(HEAVY, False)


def defined_names(tree: ast.Module) -> set[str]:
    """The names a module binds at its top level by a definition or an assignment (not by an import)."""
    names = set()
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names |= {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}
    return names


def test_benches_import_each_helper_from_the_module_that_defines_it() -> None:
    """No re-exports among the benches: a name imported from a sibling bench module is defined there."""
    trees = {name.removesuffix(".py"): ast.parse(text) for name, text in bench_sources().items()}
    misplaced = [
        f"{importer}: {alias.name} from {node.module}"
        for importer, tree in trees.items()
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and node.module in trees
        for alias in node.names
        if alias.name not in defined_names(trees[node.module])
    ]
    assert misplaced == []


class FakeClock:
    """A clock that moves only when a timed call says how long it took."""

    def __init__(self) -> None:
        self.now = 0.0
        self.calls: list[str] = []

    def __call__(self) -> float:
        return self.now

    def work(self, name: str, durations: Iterator[float]) -> Callable[[], None]:
        def call() -> None:
            self.calls.append(name)
            self.now += next(durations)

        return call


def test_best_seconds_times_number_calls_repeat_times_and_keeps_the_least_per_call() -> None:
    clock = FakeClock()
    # Three timings of two calls: 6 s, 3 s and 10 s in all, so 3, 1.5 and 5 s a call.
    work = clock.work("a", iter([3.0, 3.0, 1.0, 2.0, 5.0, 5.0]))
    assert measuring.best_seconds({"a": work}, repeat=3, number=2, clock=clock) == {"a": 1.5}
    assert clock.calls == ["a"] * 6


def test_best_seconds_leaves_the_warm_up_calls_and_the_setup_out_of_the_timings() -> None:
    clock = FakeClock()
    setups = []

    def setup() -> None:
        setups.append(clock.now)
        clock.now += 1000.0

    work = clock.work("a", iter([100.0, 2.0, 1.0, 4.0]))
    best = measuring.best_seconds({"a": work}, repeat=3, warm_up=1, setup=setup, clock=clock)
    assert best == {"a": 1.0}
    assert clock.calls == ["a"] * 4
    assert len(setups) == 3


@pytest.mark.parametrize(
    ("interleaved", "order"), [(True, ["a", "b", "a", "b"]), (False, ["a", "a", "b", "b"])]
)
def test_best_seconds_interleaves_the_contenders_round_by_round_or_times_each_in_turn(
    interleaved: bool, order: list[str]
) -> None:
    clock = FakeClock()
    contenders = {name: clock.work(name, iter([1.0, 1.0])) for name in "ab"}
    measuring.best_seconds(contenders, repeat=2, interleaved=interleaved, clock=clock)
    assert clock.calls == order


def test_best_seconds_without_a_number_doubles_it_until_the_calls_take_min_seconds() -> None:
    clock = FakeClock()
    work = clock.work("a", iter([0.01] * 100))
    # 1, 2, 4 calls take less than 0.05 s, 8 calls do not: then two timings of 8 calls.
    best = measuring.best_seconds({"a": work}, repeat=2, number=None, min_seconds=0.05, clock=clock)
    assert best["a"] == pytest.approx(0.01)
    assert len(clock.calls) == 1 + 2 + 4 + 8 + 2 * 8


@pytest.mark.parametrize("collector", [True, False])
@pytest.mark.parametrize("enabled_before", [True, False])
def test_best_seconds_sets_the_collector_while_timing_and_restores_it_after(
    collector: bool, enabled_before: bool
) -> None:
    seen = []
    (gc.enable if enabled_before else gc.disable)()
    try:
        measuring.best_seconds({"a": lambda: seen.append(gc.isenabled())}, repeat=2, collector=collector)
        assert seen == [collector, collector]
        assert gc.isenabled() is enabled_before
        with pytest.raises(ZeroDivisionError):
            measuring.best_seconds({"a": lambda: 1 / 0}, repeat=1, collector=collector)
        assert gc.isenabled() is enabled_before
    finally:
        gc.enable()


CLOCKS = {"perf_counter", "perf_counter_ns", "process_time", "monotonic", "default_timer", "timeit", "repeat"}
# A bench that keeps every timing to read a median or percentile from is sampling latencies, not
# keeping the best of N: its best is one statistic of the sample.
DISTRIBUTIONS = {"median", "quantiles", "p95", "percentiles"}


def programs(text: str) -> Iterator[ast.Module]:
    """A bench's module and each program it carries as a string (run in a process of its own)."""
    tree = ast.parse(text)
    yield tree
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and "\ndef " in node.value:
            yield ast.parse(node.value)


def reads_a_clock(node: ast.AST) -> bool:
    return any(
        isinstance(n, ast.Attribute)
        and isinstance(n.value, ast.Name)
        and n.value.id in {"time", "timeit"}
        and n.attr in CLOCKS
        for n in ast.walk(node)
    )


def calls(node: ast.AST) -> set[str]:
    """The names of the functions `node` calls, by name or as an attribute."""
    found = set()
    for n in ast.walk(node):
        if isinstance(n, ast.Call):
            found.add(n.func.id if isinstance(n.func, ast.Name) else getattr(n.func, "attr", ""))
    return found


def own_timers(text: str) -> list[str]:
    """Where a program times calls for itself and keeps the best: it imports timeit, or a function
    reads a clock in a loop and takes a minimum (but no median or percentile)."""
    found = []
    for tree in programs(text):
        for node in ast.walk(tree):
            if isinstance(node, ast.Import | ast.ImportFrom) and "timeit" in {
                node.module if isinstance(node, ast.ImportFrom) else None,
                *(a.name for a in node.names),
            }:
                found.append(f"line {node.lineno}: imports timeit")
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                loops = [n for n in ast.walk(node) if isinstance(n, ast.For | ast.While | ast.comprehension)]
                called = calls(node)
                if any(map(reads_a_clock, loops)) and "min" in called and not called & DISTRIBUTIONS:
                    found.append(f"line {node.lineno}: {node.name} keeps the best of its own timings")
    return found


def test_no_bench_has_a_best_of_timer_of_its_own() -> None:
    found = {
        name: timers
        for name, text in bench_sources().items()
        if name != "measuring.py" and (timers := own_timers(text))
    }
    assert found == {}


def test_the_timer_probe_finds_a_best_of_timer_and_a_timeit() -> None:
    bench = (
        "import time\n"
        "def best(work, repeat):\n"
        "    times = []\n"
        "    for _ in range(repeat):\n"
        "        start = time.perf_counter()\n"
        "        work()\n"
        "        times.append(time.perf_counter() - start)\n"
        "    return min(times)\n"
    )
    assert own_timers(bench) == ["line 2: best keeps the best of its own timings"]
    assert own_timers(f"PROBE = {bench!r}") == ["line 2: best keeps the best of its own timings"]
    assert own_timers("from timeit import repeat") == ["line 1: imports timeit"]


def test_no_bench_reads_the_load_average_for_itself() -> None:
    found = [
        f"{name}:{number}"
        for name, text in bench_sources().items()
        if name != "measuring.py"
        for number, line in enumerate(text.splitlines(), 1)
        if "getloadavg" in line
    ]
    assert found == []
