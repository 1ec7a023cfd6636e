"""A test run's own temporary folder: every temporary file of the run lands in it and it goes when the
run ends, so that a run leaves nothing behind in the machine's temporary directory, however many runs
there are.

The first process of a run (the only one, or the controller of pytest-xdist's workers) makes the
folder, points ``TMPDIR`` at it (the workers, the servers the tests start, Chromium and Dask inherit
it) and removes it at the end; the folder of a run killed before its end goes at the start of the
next (its name holds its process id). Before removing it, it lists what is still there: a file or folder
left by the package or a test fails the run, naming it (a leak of disk is a bug). What a third party
leaves by its own design is removed without a word (``THIRD_PARTY_LEFTOVERS``, each with the reason).
"""

from __future__ import annotations

import fnmatch
import os
import shutil
import tempfile
from pathlib import Path

import pytest

# Set by the first process of a run; the workers read it to know they are inside one.
SESSION_VARIABLE = "FANFUSE_TEST_TEMP"

# Names left in the run's folder that are no leak of fanfuse or of its tests (glob patterns).
THIRD_PARTY_LEFTOVERS = {
    # pytest's own `tmp_path` folders, which it keeps after the run for a look at failures.
    "pytest-of-*": "pytest's tmp_path folders",
    # Chromium's singleton folder (a lock socket), which it leaves when chromedriver ends it.
    "org.chromium.Chromium.*": "Chromium's singleton lock",
    # Dask's scratch space, shared by every cluster of the machine and kept by design.
    "dask-scratch-space": "Dask's scratch space",
    # Ray's session folders (logs, sockets), kept by design after the cluster stops.
    "ray": "Ray's session folders",
    # onnxruntime writes an id file at import (one, rewritten each time).
    ".ses": "onnxruntime's id file",
    # The copy of a PostgreSQL installation the server user can reach, shared by the run's workers.
    "fanfuse-pginstall-*": "the run's copy of a PostgreSQL installation (tests/postgres_server.py)",
}


def _first_process(config: pytest.Config) -> bool:
    return not hasattr(config, "workerinput")


def pytest_configure(config: pytest.Config) -> None:
    if not _first_process(config) or os.environ.get(SESSION_VARIABLE):
        return
    _remove_stale(Path(tempfile.gettempdir()))
    folder = tempfile.mkdtemp(prefix=f"{PREFIX}{os.getpid()}-")
    # Reachable by the user the PostgreSQL server runs as (its installation may be copied in here).
    os.chmod(folder, 0o755)
    os.environ[SESSION_VARIABLE] = os.environ["TMPDIR"] = folder
    tempfile.tempdir = None  # read TMPDIR again
    config.stash[_FOLDER] = Path(folder)
    config.stash[_WORKING] = (Path.cwd(), set(os.listdir()))


_FOLDER = pytest.StashKey[Path]()
# The folder the run started in and what it held: a test that writes a file by a relative path
# (`-o out.trec` without its folder) leaves it there, where no temporary folder's cleanup reaches.
_WORKING = pytest.StashKey[tuple[Path, set[str]]]()


# What the test tools write in the folder a run starts in, wherever it is (a project of a test's own
# has no .gitignore): Hypothesis's example database, pytest's and pytest-benchmark's caches.
TOOL_CACHES = [".hypothesis", ".pytest_cache", ".benchmarks", "__pycache__"]


def kept_by_design(folder: Path) -> list[str]:
    """What is written in `folder` by design, as patterns of top-level names: the tools' caches, and
    what its .gitignore names (the search page's screenshots in test-artifacts/)."""
    gitignore = folder / ".gitignore"
    lines = gitignore.read_text().splitlines() if gitignore.is_file() else []
    named = [line.strip().strip("/") for line in lines if line.strip() and not line.startswith("#")]
    return [*TOOL_CACHES, *named]


PREFIX = "fanfuse-tests-"


def _remove_stale(place: Path) -> None:
    """Removes the folders of runs whose process is gone (killed before its end removed them)."""
    for folder in place.glob(f"{PREFIX}*-*"):
        pid = folder.name.removeprefix(PREFIX).split("-", 1)[0]
        if pid.isdigit() and not _alive(int(pid)):
            shutil.rmtree(folder, ignore_errors=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process
        return True
    return True


def leftovers(folder: Path) -> list[str]:
    """The names in `folder` that no third party explains: what a run leaked."""
    return sorted(
        entry.name
        for entry in folder.iterdir()
        if not any(fnmatch.fnmatch(entry.name, pattern) for pattern in THIRD_PARTY_LEFTOVERS)
    )


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    folder = session.config.stash.get(_FOLDER, None)
    if folder is None:
        return
    leaked = leftovers(folder)
    if leaked:
        message = f"the run left {len(leaked)} temporary file(s) behind in {folder}: {', '.join(leaked)}"
        _fail(session, "temporary files leaked", message)
    working, before = session.config.stash[_WORKING]
    kept = kept_by_design(working)
    new = set(os.listdir(working)) - before
    written = sorted(name for name in new if not any(fnmatch.fnmatch(name, pattern) for pattern in kept))
    if written:
        message = f"the run wrote {len(written)} file(s) into {working}: {', '.join(written)}"
        _fail(session, "files written into the working folder", message)


def _fail(session: pytest.Session, title: str, message: str) -> None:
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    if reporter is not None:
        reporter.write_sep("=", title, red=True)
        reporter.write_line(message)
    session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_unconfigure(config: pytest.Config) -> None:
    folder = config.stash.get(_FOLDER, None)
    if folder is not None:
        shutil.rmtree(folder, ignore_errors=True)
