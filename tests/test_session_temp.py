"""A test run leaves nothing in the machine's temporary directory (tests/session_temp.py): its files go
to the run's own folder, which goes at the end, and a file the run leaked there fails the run, named."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

import pytest
from session_temp import SESSION_VARIABLE

TESTS = Path(__file__).resolve().parent

CONFTEST = f"""
import sys
sys.path.insert(0, {str(TESTS)!r})
from session_temp import pytest_configure, pytest_sessionfinish, pytest_unconfigure
"""


def run_session(
    root: Path, body: str, *arguments: str, machine_temp: Path | None = None
) -> tuple[subprocess.CompletedProcess[str], Path]:
    """A pytest run of one test file with `body` under `root`, with the machine's temporary
    directory at `machine_temp` (a new `root / "machine-temp"` by default): the run's result and
    that directory."""
    if machine_temp is None:
        machine_temp = root / "machine-temp"
        machine_temp.mkdir()
    project = root / "project"
    project.mkdir()
    (project / "conftest.py").write_text(CONFTEST)
    (project / "test_body.py").write_text(textwrap.dedent(body))
    environment = {key: value for key, value in os.environ.items() if key != SESSION_VARIABLE}
    environment["TMPDIR"] = str(machine_temp)
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *arguments]
    result = subprocess.run(
        command, cwd=project, env=environment, capture_output=True, text=True, timeout=300, check=False
    )
    return result, machine_temp


def test_this_run_writes_its_temporary_files_to_a_folder_of_its_own() -> None:
    own = os.environ.get(SESSION_VARIABLE)
    assert own, f"{SESSION_VARIABLE} is not set: the run has no temporary folder of its own"
    assert Path(tempfile.gettempdir()) == Path(own)
    assert Path(own).name.startswith("fanfuse-tests-")


def test_a_file_left_in_the_temporary_directory_fails_the_run_named(tmp_path: Path) -> None:
    result, machine_temp = run_session(
        tmp_path,
        """
        import tempfile

        def test_leaks():
            handle, _ = tempfile.mkstemp(prefix="forgotten-", suffix=".txt")
        """,
    )
    assert result.returncode == 1, result.stdout + result.stderr
    assert "1 passed" in result.stdout
    assert "temporary files leaked" in result.stdout
    assert "forgotten-" in result.stdout
    assert list(machine_temp.iterdir()) == []


@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["one process", "two workers"])
def test_a_clean_run_passes_and_leaves_the_machine_temporary_directory_as_it_was(
    tmp_path: Path, workers: list[str]
) -> None:
    result, machine_temp = run_session(
        tmp_path,
        f"""
        import os
        import tempfile
        from pathlib import Path

        import pytest

        @pytest.mark.parametrize("case", range(4))
        def test_temporary_files(case, tmp_path):
            own = Path(tempfile.gettempdir())
            # Every process of the run, and what it starts, writes to the run's folder.
            assert own.parent == Path({str(tmp_path / "machine-temp")!r})
            assert os.environ["TMPDIR"] == str(own)
            with tempfile.TemporaryDirectory() as scratch:
                Path(scratch, "data").write_text("x")
            (tmp_path / "kept").write_text("pytest's tmp_path is pytest's to keep")
            # A third party's leftover by design (Dask's scratch space) is no leak of the run.
            (own / "dask-scratch-space").mkdir(exist_ok=True)
        """,
        *workers,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "4 passed" in result.stdout
    assert list(machine_temp.iterdir()) == []


def test_the_folder_of_a_killed_run_goes_at_the_start_of_the_next(tmp_path: Path) -> None:
    machine_temp = tmp_path / "machine-temp"
    machine_temp.mkdir()
    dead = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True
    )
    stale = machine_temp / f"fanfuse-tests-{int(dead.stdout)}-abc"
    (stale / "pytest-of-root").mkdir(parents=True)
    living = machine_temp / f"fanfuse-tests-{os.getpid()}-def"
    living.mkdir()
    unrelated = machine_temp / "fanfuse-tests-notes"
    unrelated.mkdir()
    result, _ = run_session(tmp_path, "def test_nothing():\n    pass\n", machine_temp=machine_temp)
    assert result.returncode == 0, result.stdout + result.stderr
    assert sorted(p.name for p in machine_temp.iterdir()) == sorted([living.name, unrelated.name])
