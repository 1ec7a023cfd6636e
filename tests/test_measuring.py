"""benches/measuring.py, what every bench uses to measure and report: the machine line (the one
description of the machine in benches/), the Markdown table, the 95th percentile, and that importing
it loads only the standard library beside fanfuse."""

from __future__ import annotations

import ast
import json
import os
import platform
import re
import subprocess
import sys
from pathlib import Path

import fanfuse
import pytest
from test_lazy_imports import HEAVY, loaded_after
from test_mtrag_retrieval_smoke import BENCHES, load

measuring = load("measuring")
# Where a bench would find the machine for itself instead of asking `measuring.machine`.
MACHINE_PROBES = re.compile(
    r"/proc/cpuinfo|platform\.(processor|python_version|python_implementation|machine)\("
)


def bench_sources() -> dict[str, str]:
    return {path.name: path.read_text(encoding="utf-8") for path in sorted(BENCHES.glob("*.py"))}


def test_machine_names_the_cpu_cores_python_and_fanfuse_then_the_facts_in_order(tmp_path: Path) -> None:
    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text(
        "processor\t: 0\nmodel name\t: Some CPU @ 2.0GHz\n\nprocessor\t: 1\nmodel name\t: Some CPU @ 2.0GHz\n"
    )
    cores = os.cpu_count() or 1
    line = measuring.machine("numpy 9.9", "release build", cpuinfo=cpuinfo)
    assert line.split("; ") == [
        f"Some CPU @ 2.0GHz, {cores} core{'s' if cores > 1 else ''}",
        f"Python {platform.python_version()}",
        f"fanfuse {fanfuse.__version__}",
        "numpy 9.9",
        "release build",
    ]


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
