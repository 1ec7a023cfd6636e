"""A Dask scheduler (a real `dask scheduler` process on 127.0.0.1) killed while `fanfuse fuse` and
`fanfuse eval --engine dask` wait on it: one line naming the scheduler's address and what happened,
exit 2, and no output file; not distributed's tracebacks. The scheduler has no worker, so the job is
certainly under way on it (its tasks are there) when it is killed."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from cli_process import CLI
from dask_inputs import COMMAND_SECONDS, time_limit, write_runs

distributed = pytest.importorskip("distributed")


@pytest.fixture()
def scheduler() -> Iterator[tuple[str, subprocess.Popen[str]]]:
    command = [sys.executable, "-m", "distributed.cli.dask_scheduler", "--host", "127.0.0.1"]
    command += ["--port", "0", "--no-dashboard"]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        assert process.stdout is not None
        with time_limit():
            address = next(line for line in process.stdout if "Scheduler at:" in line)
        yield address.split("Scheduler at:")[1].strip(), process
    finally:
        process.kill()
        process.wait()


def tasks_on(address: str) -> int:
    with distributed.Client(address, timeout=COMMAND_SECONDS) as watcher:
        count: int = watcher.run_on_scheduler(lambda dask_scheduler: len(dask_scheduler.tasks))
        return count


@pytest.mark.parametrize("command", ["fuse", "eval"])
def test_a_scheduler_killed_mid_job_is_one_line_and_exit_2(
    command: str, scheduler: tuple[str, subprocess.Popen[str]], tmp_path: Path
) -> None:
    address, process = scheduler
    runs = write_runs(tmp_path, 3, interleaved=False)
    output = tmp_path / "fused.trec"
    args = ["-o", str(output)] if command == "fuse" else ["--qrels", str(tmp_path / "qrels.txt")]
    job = subprocess.Popen(
        [*CLI, command, *runs, *args, "--engine", "dask", "--scheduler", address],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=os.environ.copy(),
    )
    try:
        with time_limit():
            while tasks_on(address) == 0:  # the job's graph reached the scheduler: it is under way
                assert job.poll() is None, job.communicate()
                time.sleep(0.05)
        process.kill()
        process.wait()
        _, stderr = job.communicate(timeout=COMMAND_SECONDS)
    finally:
        if job.poll() is None:
            job.kill()
            job.wait()
    assert job.returncode == 2, stderr
    assert stderr.count("\n") == 1, stderr
    assert stderr.startswith(f"fanfuse {command}: error: --scheduler {address}: lost the connection"), stderr
    assert not output.exists()
