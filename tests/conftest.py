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
