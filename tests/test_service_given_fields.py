"""A request field counts as given when it is in the body, whatever its value, null included
(docs/service.md): a field the search would not read is refused so given too. `norm` is read by the
methods that normalise scores; beside another, `"none"` and null are refused as any norm is. A
null for a field every search reads is its default, as leaving it out. An empty filter is the
filter of no condition, accepted as the library accepts it (one check, `filters.conditions`, for
every entry point)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("fastapi")

from fanfuse._core import METHODS
from fanfuse.index_retriever import open_index
from fanfuse.options import methods_reading
from fanfuse.retrievers.tantivy_index import TantivyRetriever
from fanfuse.service import app_for_index
from fanfuse.service.idle_fields import RULES
from fastapi.testclient import TestClient
from test_cli_search_options import DOCUMENTS, QUERY, without_timings

# For each field with a rule: the request beside which the field would do nothing, on a server with
# the heuristic expander (expansion on) and rrf.
IDLE_BESIDE: dict[str, dict[str, Any]] = {
    "max_variants": {"expander": "none"},
    "strategy": {},
    "norm": {},
    "rrf_k": {"method": "isr"},
    "phi": {},
    "sigma": {},
    "gamma": {},
    "mmr_lambda": {},
}


@pytest.fixture(scope="module")
def index_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("given") / "idx"
    TantivyRetriever.build(DOCUMENTS, directory)
    return directory


@pytest.fixture(scope="module")
def client(index_dir: Path) -> Iterator[TestClient]:
    with TestClient(app_for_index(index_dir)) as test_client:
        yield test_client


def test_every_field_with_a_rule_is_tried() -> None:
    assert set(IDLE_BESIDE) == {field for rule in RULES for field in rule.names}


@pytest.mark.parametrize("value", ["none", None, "min-max"], ids=["none", "null", "min-max"])
def test_norm_beside_a_method_that_reads_no_norm_is_refused_whatever_its_value(
    client: TestClient, value: str | None
) -> None:
    response = client.post("/search", json={"query": QUERY, "norm": value})
    assert response.status_code == 422, response.text
    (error,) = response.json()["detail"]
    assert error["loc"] == ["body", "norm"], error
    assert error["msg"].startswith("norm goes with method "), error


# Of the methods a search takes: a search fuses with no trained model.
@pytest.mark.parametrize("method", [m for m in methods_reading("norm") if m in METHODS])
def test_norm_none_is_read_by_a_method_that_normalises(client: TestClient, method: str) -> None:
    response = client.post("/search", json={"query": QUERY, "method": method, "norm": "none"})
    assert response.status_code == 200, response.text


@pytest.mark.parametrize("field", sorted(IDLE_BESIDE))
def test_a_null_is_given_where_the_field_would_do_nothing(client: TestClient, field: str) -> None:
    response = client.post("/search", json={"query": QUERY, **IDLE_BESIDE[field], field: None})
    assert response.status_code == 422, response.text
    (error,) = response.json()["detail"]
    assert error["loc"] == ["body", field], error
    assert error["msg"].startswith(f"{field} goes with "), error


@pytest.mark.parametrize("field", ["top_k", "method", "tie_break", "filter", "dense", "expander", "rerank"])
def test_a_null_for_a_field_every_search_reads_is_its_default(client: TestClient, field: str) -> None:
    base = client.post("/search", json={"query": QUERY})
    given = client.post("/search", json={"query": QUERY, field: None})
    assert given.status_code == 200, given.text
    assert without_timings(given.json()) == without_timings(base.json())


def test_an_empty_filter_is_no_condition_as_in_the_library(client: TestClient, index_dir: Path) -> None:
    response = client.post("/search", json={"query": QUERY, "filter": {}})
    assert response.status_code == 200, response.text
    with open_index(index_dir, dense=False) as retriever:
        hits = [hit.id for hit in retriever.search(QUERY, filter={}).hits]
    assert [hit["id"] for hit in response.json()["hits"]] == hits
