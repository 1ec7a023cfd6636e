"""A signal stops `fanfuse serve` at any moment of its start, not only once it serves: the process
ends by that signal with one line on stderr (nothing else: no warning of a coroutine never awaited,
no event loop left open), and the server's copy of the index is gone. A signal sent from outside
lands at a moment nobody picks, so each moment is made here (a labelled fault injection): the real
command runs in its own process with one of uvicorn's steps wrapped to raise the signal in the
process itself, just before or just after that step runs."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from fanfuse.retrievers.tantivy_index import TantivyRetriever

pytest.importorskip("uvicorn")

# The process wraps `module:Class.method` (SIGNAL_AT) to raise SIGNUM BEFORE or AFTER it runs, then
# runs the command line as `fanfuse` does.
INJECTED = """
import functools, importlib, inspect, os, signal, sys
target, when, signum = os.environ["SIGNAL_AT"], os.environ["SIGNAL_WHEN"], int(os.environ["SIGNUM"])
module_name, _, attribute = target.partition(":")
owner_name, _, method_name = attribute.partition(".")
owner = getattr(importlib.import_module(module_name), owner_name)
original = getattr(owner, method_name)
if inspect.iscoroutinefunction(original):
    async def wrapper(*args, **kwargs):
        if when == "before":
            signal.raise_signal(signum)
        result = await original(*args, **kwargs)
        if when == "after":
            signal.raise_signal(signum)
        return result
else:
    def wrapper(*args, **kwargs):
        if when == "before":
            signal.raise_signal(signum)
        result = original(*args, **kwargs)
        if when == "after":
            signal.raise_signal(signum)
        return result
setattr(owner, method_name, functools.wraps(original)(wrapper))
from fanfuse.cli import main
sys.exit(main())
"""

# Each moment of a start, in order: (workers, the step wrapped, before or after it). With one
# worker: the event loop about to be made (the server's coroutine already is), the loop running but
# uvicorn's own signal handlers not yet installed, the server started. With two: the supervisor
# about to install its handlers, and the workers started.
MOMENTS = [
    (1, "uvicorn.config:Config.get_loop_factory", "after"),
    (1, "uvicorn.server:Server.serve", "before"),
    (1, "uvicorn.server:Server.startup", "after"),
    (2, "uvicorn.supervisors.multiprocess:Multiprocess.__init__", "before"),
    (2, "uvicorn.supervisors.multiprocess:Multiprocess.init_processes", "after"),
]


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("serve-moments") / "index"
    TantivyRetriever.build(({"id": f"d{i}", "text": f"word{i % 7} text {i}"} for i in range(50)), directory)
    return directory


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=lambda s: signal.Signals(s).name)
@pytest.mark.parametrize(
    ("workers", "step", "when"), MOMENTS, ids=[f"{w}-{step.partition(':')[2]}" for _, step, w in MOMENTS]
)
def test_a_signal_at_each_moment_of_the_start_ends_the_server_cleanly(
    index: Path, tmp_path: Path, workers: int, step: str, when: str, signum: int
) -> None:
    place = tmp_path / "tmp"
    place.mkdir()
    moment = {"SIGNAL_AT": step, "SIGNAL_WHEN": when, "SIGNUM": str(signum)}
    environment = {**os.environ, "TMPDIR": str(place), **moment}
    command = [sys.executable, "-c", INJECTED, "serve", "--index", str(index), "--port", "0", "--no-dense"]
    process = subprocess.Popen(
        [*command, "--workers", str(workers)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=environment,
        start_new_session=True,
    )
    try:
        _, stderr = process.communicate(timeout=120)
    finally:  # however the run ends, no server or worker outlives it
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait()
    done = subprocess.CompletedProcess(process.args, process.returncode, "", stderr)
    assert done.returncode == -signum, done.stderr
    assert done.stderr == "fanfuse serve: interrupted\n"
    assert sorted(place.iterdir()) == []
