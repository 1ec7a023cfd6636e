"""A throwaway PostgreSQL server for the database tests: initdb into a temporary directory, listen on
127.0.0.1 at a free port (and a Unix socket in that directory), stop and delete it afterwards.

Which installation: one with pgvector first (Debian's server with its postgresql-N-pgvector package,
or a server on PATH), then the server bundled in the pgserver wheel (PostgreSQL with pgvector, in the
dev extra: Debian 12 has no pgvector package), then any server without pgvector (the pgvector tests
then skip). PostgreSQL refuses to run as root, so as root the server runs as the `postgres` user
(Debian's package creates it), else as `nobody`.

That user must be able to reach the server's files and its data directory. The pgserver wheel's
server lives in the checkout's virtual environment, which that user cannot enter when the checkout is
in a private folder (a home directory, or one made by `mktemp -d`: mode 0700, owned by root). So as
root, an installation the user cannot reach is first copied, once per version, to a folder of the
system's temporary directory that it can (PostgreSQL finds its libraries and extensions relative to
its binaries, so the copy runs as the original would), and the data directory goes there too.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import pwd
import shutil
import socket
import stat
import subprocess
import tempfile
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

USER = "fanfuse"  # the superuser initdb creates; trust authentication on loopback only


@dataclass(frozen=True)
class Installation:
    bindir: Path
    origin: str  # "debian", "PATH" or "pgserver wheel"
    # Folders beside the installation that its binaries load from (the wheel's shared libraries,
    # found through an RPATH relative to the binaries).
    beside: tuple[Path, ...] = ()

    @property
    def has_pgvector(self) -> bool:
        return (self.sharedir / "extension" / "vector.control").is_file()

    @property
    def sharedir(self) -> Path:
        out = subprocess.run(
            [str(self.bindir / "pg_config"), "--sharedir"], capture_output=True, text=True, check=False
        )
        if out.returncode == 0 and out.stdout.strip():
            return Path(out.stdout.strip())
        return self.bindir.parent / "share" / "postgresql"


@dataclass(frozen=True)
class Server:
    installation: Installation
    host: str
    port: int
    socket_dir: Path
    version: str

    def conninfo(self, dbname: str = "postgres") -> str:
        return f"host={self.host} port={self.port} user={USER} dbname={dbname}"


def installations() -> list[Installation]:
    """Every server installation found, best first (see the module docstring)."""
    found = []
    debian = sorted(Path("/usr/lib/postgresql").glob("*/bin/postgres"), key=lambda p: int(p.parts[-3]))
    found += [Installation(p.parent, "debian") for p in reversed(debian)]
    on_path = shutil.which("postgres")
    if on_path and Path(on_path).resolve().parent not in {i.bindir.resolve() for i in found}:
        found.append(Installation(Path(on_path).resolve().parent, "PATH"))
    spec = importlib.util.find_spec("pgserver")
    if spec is not None and spec.submodule_search_locations:
        package = Path(next(iter(spec.submodule_search_locations)))
        bundled = package / "pginstall" / "bin"
        libraries = package.parent / "pgserver.libs"
        if (bundled / "postgres").is_file():
            beside = (libraries,) if libraries.is_dir() else ()
            found.append(Installation(bundled, "pgserver wheel", beside))
    return sorted(found, key=lambda i: not i.has_pgvector)  # stable: the order above within each kind


def _run_as() -> tuple[int, int] | None:
    """(uid, gid) to run the server as when we are root; None when we are not root."""
    if os.geteuid() != 0:
        return None
    for name in ("postgres", "nobody"):
        try:
            entry = pwd.getpwnam(name)
        except KeyError:
            continue
        return entry.pw_uid, entry.pw_gid
    raise RuntimeError(
        "running as root, and there is neither a 'postgres' nor a 'nobody' user to run PostgreSQL"
    )


def reaches(path: Path, uid: int, gid: int) -> bool:
    """Whether the user `uid` (group `gid`) can enter every directory down to `path` and read it."""
    path = path.resolve()
    for place in [*reversed(path.parents), path]:
        info = place.stat()
        if info.st_uid == uid:
            allowed = info.st_mode & stat.S_IXUSR
        elif info.st_gid == gid:
            allowed = info.st_mode & stat.S_IXGRP
        else:
            allowed = info.st_mode & stat.S_IXOTH
        if not allowed:
            return False
    return True


def reachable_copy(installation: Installation, uid: int, gid: int) -> Installation:
    """`installation` itself when the user can reach it; else a copy the user can reach (made once per
    installation and version, shared by every test process)."""
    if reaches(installation.bindir, uid, gid):
        return installation
    folders = [installation.bindir.parent, *installation.beside]
    base = Path(os.path.commonpath(folders))
    postgres = (installation.bindir / "postgres").stat()
    key = hashlib.sha256(f"{base}|{postgres.st_size}|{postgres.st_mtime_ns}".encode()).hexdigest()[:16]
    copy = Path(_shared_temp(None)) / f"fanfuse-pginstall-{key}"
    bindir = copy / installation.bindir.relative_to(base)
    if not (bindir / "postgres").is_file():
        staging = Path(tempfile.mkdtemp(prefix=f"{copy.name}-", dir=copy.parent))
        for folder in folders:  # the same layout under the copy, so relative RPATHs still resolve
            shutil.copytree(folder, staging / "install" / folder.relative_to(base), symlinks=True)
        for place, directories, files in os.walk(staging):
            for name in directories:
                os.chmod(Path(place) / name, 0o755)
            for name in files:
                file = Path(place) / name
                if not file.is_symlink():
                    os.chmod(file, file.stat().st_mode | 0o444)
        os.chmod(staging, 0o755)
        try:
            (staging / "install").rename(copy)  # another test process may have made it meanwhile
        except OSError:
            if not (bindir / "postgres").is_file():
                raise
        finally:
            shutil.rmtree(staging, ignore_errors=True)
    beside = tuple(copy / folder.relative_to(base) for folder in installation.beside)
    return Installation(bindir, installation.origin, beside)


def _shared_temp(owner: tuple[int, int] | None) -> str:
    """The temporary directory, or /tmp where `owner` cannot reach it (TMPDIR in a private folder)."""
    place = tempfile.gettempdir()
    if owner is None or reaches(Path(place), *owner):
        return place
    return "/tmp"


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def _run(command: list[str], owner: tuple[int, int] | None, log: Path) -> None:
    ids = {"user": owner[0], "group": owner[1], "extra_groups": []} if owner else {}
    env = {**os.environ, "LC_ALL": "C", "HOME": str(log.parent)}
    result = subprocess.run(command, capture_output=True, text=True, env=env, check=False, **ids)  # type: ignore[call-overload]
    if result.returncode != 0:
        tail = log.read_text(errors="replace")[-2000:] if log.is_file() else ""
        raise RuntimeError(
            f"{' '.join(command)} failed ({result.returncode}): {result.stderr.strip()}\n{tail}"
        )


def start(installation: Installation, attempts: int = 3) -> tuple[Server, Path]:
    """Start a server; returns it and its directory (give it to `stop`). A port taken between
    choosing and binding it (another test worker) is retried on a new port."""
    owner = _run_as()
    if owner:
        installation = reachable_copy(installation, *owner)
    root = Path(tempfile.mkdtemp(prefix="fanfuse-pg-", dir=_shared_temp(owner)))
    data, log = root / "data", root / "server.log"
    if owner:
        os.chown(root, *owner)
    bindir = installation.bindir
    _run(
        [str(bindir / "initdb"), "-D", str(data), "-U", USER, "--auth=trust", "-E", "UTF8", "--no-sync"],
        owner,
        log,
    )
    for attempt in range(attempts):
        port = _free_port()
        options = (
            f"-c listen_addresses=127.0.0.1 -p {port} -c unix_socket_directories={root} "
            "-c fsync=off -c synchronous_commit=off -c full_page_writes=off"
        )
        try:
            _run(
                [
                    str(bindir / "pg_ctl"),
                    "-D",
                    str(data),
                    "-l",
                    str(log),
                    "-w",
                    "-t",
                    "60",
                    "-o",
                    options,
                    "start",
                ],
                owner,
                log,
            )
        except RuntimeError:
            if attempt == attempts - 1:
                shutil.rmtree(root, ignore_errors=True)
                raise
            continue
        version = subprocess.run(
            [str(bindir / "postgres"), "--version"], capture_output=True, text=True
        ).stdout
        return Server(installation, "127.0.0.1", port, root, version.strip()), root
    raise AssertionError("unreachable")


def stop(server: Server, root: Path) -> None:
    owner = _run_as()
    try:
        _run(
            [
                str(server.installation.bindir / "pg_ctl"),
                "-D",
                str(root / "data"),
                "-m",
                "fast",
                "-w",
                "stop",
            ],
            owner,
            root / "server.log",
        )
    finally:
        shutil.rmtree(root, ignore_errors=True)


@contextmanager
def database(server: Server) -> Iterator[str]:
    """A new, empty database on `server` (its conninfo), dropped afterwards."""
    import psycopg
    from psycopg import sql

    name = f"test_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(server.conninfo(), autocommit=True) as admin:
        admin.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    try:
        yield server.conninfo(name)
    finally:
        with psycopg.connect(server.conninfo(), autocommit=True) as admin:
            admin.execute(sql.SQL("DROP DATABASE {} WITH (FORCE)").format(sql.Identifier(name)))
