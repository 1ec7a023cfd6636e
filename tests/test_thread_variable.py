"""`FANFUSE_NUM_THREADS`, the default of every `threads=None`: an int from 1 to 1024 sets it; unset or
blank means 1; anything else also means 1, and a RuntimeWarning naming the variable says so."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

# Every function whose `threads=None` reads the variable, called once each in a fresh interpreter.
READERS = ["default_threads", "rrf_batch", "fuse_batch", "fuse_runs", "fuse_files"]
PROBE = """
import json, sys, warnings
import fanfuse
run = fanfuse.Run.from_columns(["q1"], ["d1"], [1.0])
calls = {
    "default_threads": lambda: fanfuse.default_threads(),
    "rrf_batch": lambda: fanfuse.rrf_batch([[["a"]]]),
    "fuse_batch": lambda: fanfuse.fuse_batch([[["a"]]]),
    "fuse_runs": lambda: fanfuse.fuse_runs([run]),
    "fuse_files": lambda: fanfuse.fuse_files([sys.argv[1]], sys.argv[2]),
}
report = {}
for name, call in calls.items():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        call()
    report[name] = [f"{w.category.__name__}: {w.message}" for w in caught]
print(json.dumps({"threads": fanfuse.default_threads(), "warnings": report}))
"""


def probe(value: str | None, tmp_path: Path) -> dict[str, object]:
    env = {k: v for k, v in os.environ.items() if k != "FANFUSE_NUM_THREADS"}
    if value is not None:
        env["FANFUSE_NUM_THREADS"] = value
    run_file = tmp_path / "in.trec"
    run_file.write_text("q1 Q0 d1 1 1.0 a\n")
    argv = [sys.executable, "-c", PROBE, str(run_file), str(tmp_path / "out.trec")]
    out = subprocess.run(argv, env=env, capture_output=True, text=True, check=True).stdout
    report: dict[str, object] = json.loads(out.splitlines()[-1])
    return report


@pytest.mark.parametrize(
    ("value", "threads"), [(None, 1), ("", 1), ("  ", 1), ("3", 3), (" 2 ", 2), ("1024", 1024)]
)
def test_a_valid_or_absent_value_sets_the_default_silently(
    value: str | None, threads: int, tmp_path: Path
) -> None:
    report = probe(value, tmp_path)
    assert report["threads"] == threads
    assert report["warnings"] == {name: [] for name in READERS}


@pytest.mark.parametrize("value", ["0", "-1", "many", "2.5", "1025", "99999999999999999999999"])
def test_an_unreadable_value_warns_by_name_and_means_one_thread(value: str, tmp_path: Path) -> None:
    report = probe(value, tmp_path)
    assert report["threads"] == 1
    message = (
        f"RuntimeWarning: FANFUSE_NUM_THREADS must be an int from 1 to 1024 (got '{value}'); using 1 thread"
    )
    assert report["warnings"] == {name: [message] for name in READERS}


def test_an_explicit_threads_argument_does_not_read_the_variable(tmp_path: Path) -> None:
    code = (
        "import warnings, fanfuse\n"
        "warnings.simplefilter('error')\n"
        "assert fanfuse.rrf_batch([[['a']]], threads=2)[0].ids == ['a']\n"
        "assert fanfuse.fuse_batch([[['a']]], threads=1)[0].ids == ['a']\n"
    )
    env = {**os.environ, "FANFUSE_NUM_THREADS": "many"}
    subprocess.run([sys.executable, "-c", code], env=env, check=True)


# A command of each kind that fuses with `threads=None` (fuse: its --threads left out).
COMMANDS = {
    "fuse": ["fuse", "a.trec", "b.trec", "-o", "out.trec"],
    "tune": ["tune", "a.trec", "b.trec", "--qrels", "qrels.txt", "--folds", "2"],
}


@pytest.mark.parametrize("command", COMMANDS)
def test_a_command_says_the_warning_in_one_line_of_its_own(command: str, tmp_path: Path) -> None:
    from cli_process import CLI
    from command_inputs import write_inputs

    write_inputs(tmp_path)
    env = {**os.environ, "FANFUSE_NUM_THREADS": "many"}
    done = subprocess.run([*CLI, *COMMANDS[command]], cwd=tmp_path, env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    warned = [line for line in done.stderr.splitlines() if "FANFUSE_NUM_THREADS" in line]
    expected = f"fanfuse {command}: warning: FANFUSE_NUM_THREADS must be an int from 1 to 1024 (got 'many')"
    assert warned and all(line == f"{expected}; using 1 thread" for line in warned), done.stderr
    assert ".py:" not in done.stderr and "RuntimeWarning" not in done.stderr, done.stderr
