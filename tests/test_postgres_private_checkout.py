"""The database tests' server starts wherever the checkout is: as root, PostgreSQL runs as another
user, which cannot enter a private folder (mode 0700, owned by root, as `mktemp -d` makes and as a home
directory is). Here the server's files are put in such a folder, as a checkout's virtual environment
holds the pgserver wheel's server, and the server must still start and answer."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import postgres_server
import pytest

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="only root starts the server as another user")


@pytest.fixture
def private_folder() -> Iterator[Path]:
    folder = Path(tempfile.mkdtemp(prefix="fanfuse-private-checkout-"))
    try:
        assert (folder.stat().st_mode & 0o777, folder.stat().st_uid) == (0o700, 0)
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def relocatable() -> list[postgres_server.Installation]:
    """The installations that run from wherever their folder is copied (the pgserver wheel's)."""
    return [i for i in postgres_server.installations() if i.origin == "pgserver wheel"]


@pytest.mark.skipif(not relocatable(), reason="the pgserver wheel (dev extra) is not installed")
def test_a_server_whose_files_are_in_a_private_folder_starts(private_folder: Path) -> None:
    import psycopg

    original = relocatable()[0]
    site = original.bindir.parents[2]  # site-packages: pgserver/pginstall/bin
    inside = private_folder / "checkout" / ".venv" / "site-packages"
    for folder in [original.bindir.parent, *original.beside]:
        shutil.copytree(folder, inside / folder.relative_to(site), symlinks=True)
    installation = postgres_server.Installation(
        inside / original.bindir.relative_to(site),
        original.origin,
        tuple(inside / folder.relative_to(site) for folder in original.beside),
    )
    uid, gid = postgres_server._run_as() or (0, 0)
    assert not postgres_server.reaches(installation.bindir, uid, gid)

    server, root = postgres_server.start(installation)
    try:
        assert postgres_server.reaches(server.installation.bindir, uid, gid)
        with postgres_server.database(server) as conninfo, psycopg.connect(conninfo) as connection:
            assert connection.execute("SELECT 1 + 1").fetchone() == (2,)
    finally:
        postgres_server.stop(server, root)


def test_reaches_reads_every_directory_on_the_way(private_folder: Path) -> None:
    nested = private_folder / "a" / "b"
    nested.mkdir(parents=True)
    os.chmod(private_folder, 0o755)
    os.chmod(private_folder / "a", 0o700)
    nobody = (65534, 65534)
    assert postgres_server.reaches(private_folder, *nobody)
    assert not postgres_server.reaches(nested, *nobody)
    os.chmod(private_folder / "a", 0o711)
    assert postgres_server.reaches(nested, *nobody)
