"""docs/service.md's table of routes lists every operation of the app's OpenAPI schema, and each JSON
answer it shows is the one a server answers: `fanfuse serve` over an index built by `fanfuse index
--dense`, as the examples say. A value written `...` varies (the index's path) and is not compared."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("fastapi")

from fanfuse.service import app_for_index
from fastapi.testclient import TestClient

DOCS = Path(__file__).resolve().parents[1] / "docs" / "service.md"
ANY = object()
# The routes the schema leaves out: the search page and the schema itself.
UNLISTED_IN_SCHEMA = {"GET /", "GET /openapi.json"}


def routes_table() -> dict[str, str]:
    """The table under `## The API`: each route (`GET /healthz`) and what its row says."""
    section = DOCS.read_text(encoding="utf-8").split("## The API", 1)[1]
    rows = {}
    for line in section.splitlines():
        if not line.startswith("| `"):
            if rows:
                break
            continue
        route, what = (cell.strip() for cell in line.strip().strip("|").split("|", 1))
        rows[route.strip("`")] = what.strip().removesuffix("|").strip()
    return rows


def example(what: str) -> dict[str, Any] | None:
    """The JSON answer a row shows (a cell that is one code span holding an object), else None."""
    match = re.fullmatch(r"`(\{.*\})`", what)
    if match is None:
        return None
    shown: dict[str, Any] = json.loads(re.sub(r":\s*\.\.\.", ': "..."', match.group(1)))
    return {key: ANY if value == "..." else value for key, value in shown.items()}


def test_the_table_lists_every_operation(hybrid_dir: Path) -> None:
    with TestClient(app_for_index(hybrid_dir)) as client:
        paths = client.get("/openapi.json").json()["paths"]
    operations = {f"{method.upper()} {path}" for path, item in paths.items() for method in item}
    assert set(routes_table()) == operations | UNLISTED_IN_SCHEMA


def test_each_answer_shown_is_the_servers(hybrid_dir: Path) -> None:
    shown = {route: example(what) for route, what in routes_table().items()}
    examples = {route: answer for route, answer in shown.items() if answer is not None}
    assert "GET /healthz" in examples
    with TestClient(app_for_index(hybrid_dir)) as client:
        for route, answer in examples.items():
            method, path = route.split(" ", 1)
            served = client.request(method, path).json()
            assert set(served) == set(answer), route
            assert {k: v for k, v in served.items() if answer[k] is not ANY} == {
                k: v for k, v in answer.items() if v is not ANY
            }, route
