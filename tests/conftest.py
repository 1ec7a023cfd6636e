"""Shared test setup: Hypothesis profiles and the location of the real MT-RAG data."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

# Example budgets: "dev" for quick local runs, "ci" for CI (CI=true), where the core properties
# together run well over 100k examples. FANFUSE_HYPOTHESIS_PROFILE overrides both.
settings.register_profile("dev", max_examples=200, deadline=None)
settings.register_profile(
    "ci", max_examples=25_000, deadline=None, suppress_health_check=[HealthCheck.too_slow]
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
