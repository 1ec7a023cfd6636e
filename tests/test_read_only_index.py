"""An index on a read-only file system is searched: Tantivy takes a lock file to open an index in
place, which failed there as "index is corrupt (Failed to acquire Lockfile)"; fanfuse searches a
private copy instead."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from cli_process import CLI
from fanfuse.retrievers.tantivy_index import TantivyRetriever
from test_cli_search_options import DOCUMENTS, QUERY, without_timings


def read_only(directory: Path, command: list[str]) -> subprocess.CompletedProcess[str]:
    """`command` run where `directory` is read-only: a read-only bind mount in a mount namespace of
    its own (root ignores file modes), else the directory's write bits removed."""
    if os.geteuid() != 0:
        for path in [directory, *directory.rglob("*")]:
            path.chmod(path.stat().st_mode & ~0o222)
        try:
            return subprocess.run(command, capture_output=True, text=True, timeout=300)
        finally:
            for path in [directory, *directory.rglob("*")]:
                path.chmod(path.stat().st_mode | 0o200)
    if shutil.which("unshare") is None:
        pytest.skip("unshare is not installed: no read-only place can be made here")
    script = 'mount --bind "$1" "$1" && mount -o remount,ro,bind "$1" "$1" && shift && exec "$@"'
    mounted = subprocess.run(["unshare", "-m", "true"], capture_output=True, text=True)
    if mounted.returncode != 0:
        pytest.skip(f"no mount namespace here ({mounted.stderr.strip()}): no read-only place can be made")
    return subprocess.run(
        ["unshare", "-m", "sh", "-c", script, "sh", str(directory), *command],
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_a_read_only_index_is_searched(tmp_path: Path) -> None:
    TantivyRetriever.build(DOCUMENTS, tmp_path / "idx")
    files = sorted(p.relative_to(tmp_path) for p in (tmp_path / "idx").rglob("*"))
    search = [*CLI, "search", QUERY, "--index", str(tmp_path / "idx"), "--json"]
    writable = subprocess.run(search, capture_output=True, text=True, timeout=300)
    assert writable.returncode == 0, writable.stderr
    probe = read_only(tmp_path / "idx", ["sh", "-c", f"touch {tmp_path / 'idx' / 'probe'}"])
    assert probe.returncode != 0, "the directory is not read-only"
    found = read_only(tmp_path / "idx", search)
    assert found.returncode == 0, found.stderr
    assert without_timings(json.loads(found.stdout)) == without_timings(json.loads(writable.stdout))
    assert sorted(p.relative_to(tmp_path) for p in (tmp_path / "idx").rglob("*")) == files
