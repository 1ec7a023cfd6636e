"""Shared test setup: Hypothesis profiles, the location of the real MT-RAG data, a hybrid index, a
throwaway PostgreSQL server for the database tests, and the run's own temporary folder (its hooks are
tests/session_temp.py's)."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import postgres_server as postgres_server_module
import pytest
from hypothesis import HealthCheck, settings
from postgres_server import Server
from session_temp import pytest_configure, pytest_sessionfinish, pytest_unconfigure  # noqa: F401 (pytest's hooks)
from tmpfs_mount import Mount, mounting

# Example budgets: "dev" for quick local runs, "ci" for CI (CI=true), where the core properties
# together run well over 100k examples. FANFUSE_HYPOTHESIS_PROFILE overrides both.
settings.register_profile("dev", max_examples=200, deadline=None)
settings.register_profile(
    "ci", max_examples=25_000, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
# The other CPythons' runs (scripts/test-python.sh): the same core behind the same binding code, so a
# tenth of the CI budget checks their conversions; the full budget runs once, on the development one.
settings.register_profile(
    "other-python", max_examples=2_500, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
_default = "ci" if os.environ.get("CI", "").lower() in ("1", "true", "yes") else "dev"
settings.load_profile(os.environ.get("FANFUSE_HYPOTHESIS_PROFILE", _default))

MTRAG = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "mtrag"


@pytest.fixture(scope="session")
def mtrag_dir() -> Path:
    """The real MT-RAG runs and qrels beside the repository; tests using it skip where it is absent."""
    if not MTRAG.is_dir():
        pytest.skip(f"MT-RAG data not found at {MTRAG}")
    return MTRAG


@pytest.fixture(scope="session")
def small_runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """Two TREC runs over six queries (paths "run0", "run1") and their qrels ("qrels"): small valid
    input for tests that check what a bad option does to an otherwise good call."""
    directory = tmp_path_factory.mktemp("small-runs")
    paths = {}
    for r in range(2):
        path = directory / f"run{r}.trec"
        path.write_text(
            "".join(f"q{q} Q0 d{(q + d + r) % 5} {d + 1} {3 - d} r{r}\n" for q in range(6) for d in range(3))
        )
        paths[f"run{r}"] = str(path)
    qrels = directory / "qrels"
    qrels.write_text("".join(f"q{q} 0 d{q % 5} 1\n" for q in range(6)))
    paths["qrels"] = str(qrels)
    return paths


@pytest.fixture(scope="session")
def hybrid_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An index built by `fanfuse index --dense` (the built-in model, real vectors) over the search
    options' documents; tests using it skip where the embed extra is not installed."""
    from fanfuse.cli import main
    from test_cli_search_options import DOCUMENTS
    from test_open_index import needs_embed

    needs_embed()
    root = tmp_path_factory.mktemp("hybrid")
    corpus = root / "corpus.jsonl"
    corpus.write_text("".join(json.dumps(d) + "\n" for d in DOCUMENTS), encoding="utf-8")
    assert main(["index", str(corpus), "--index", str(root / "idx"), "--dense"]) == 0
    return root / "idx"


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[Server]:
    """A throwaway PostgreSQL server for this test session (tests/postgres_server.py), stopped and
    deleted at the end; skips only where no server is installed."""
    pytest.importorskip("psycopg", reason="psycopg is not installed (the postgres extra)")
    found = postgres_server_module.installations()
    if not found:
        pytest.skip(
            "no PostgreSQL server installed: scripts/ensure-postgres.sh installs Debian's when run as "
            "root with apt; or install the dev extra (pgserver bundles a server)"
        )
    server, root = postgres_server_module.start(found[0])
    try:
        yield server
    finally:
        postgres_server_module.stop(server, root)


@pytest.fixture()
def postgres_db(postgres_server: Server) -> Iterator[str]:
    """A new, empty database on the session's server: its conninfo. Dropped afterwards."""
    with postgres_server_module.database(postgres_server) as conninfo:
        yield conninfo


@pytest.fixture()
def pgvector_db(postgres_server: Server, postgres_db: str) -> str:
    """`postgres_db` on a server that has pgvector; skips, naming the server, where it has not."""
    if not postgres_server.installation.has_pgvector:
        pytest.skip(
            f"{postgres_server.version} ({postgres_server.installation.origin}) has no pgvector; "
            "install Debian's postgresql-N-pgvector or the dev extra (pgserver)"
        )
    return postgres_db


def pytest_report_header() -> str:
    """Which PostgreSQL the database tests will start, in the header of every run's log."""
    found = postgres_server_module.installations()
    if not found:
        return "postgres: none installed (the database tests skip)"
    best = found[0]
    return f"postgres: {best.bindir} ({best.origin}, {'with' if best.has_pgvector else 'without'} pgvector)"


@pytest.fixture
def tmpfs() -> Iterator[Mount]:
    """`tmpfs(size, place)`: a tmpfs of `size` ("64k", "8m") mounted at `place` until the test ends;
    the test skips where mounting is not allowed."""
    yield from mounting()
