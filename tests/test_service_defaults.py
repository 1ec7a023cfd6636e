"""GET /options lists every request field of POST /search with this server's default, and that default
is the one a request leaving the field out gets: for each field, on a server with `fanfuse serve`'s
settings and on one whose retriever sets its own, a search giving the listed default answers as the
search leaving it out. A field lists null only where leaving it out picks no value of it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("fastapi")

from fanfuse.index_retriever import open_index
from fanfuse.multiquery import LLMExpander
from fanfuse.service import app_for_index, create_app
from fastapi.testclient import TestClient
from test_cli_search_options import QUERY, without_timings

# The request's other fields where a field is read only beside them.
READ_WITH: dict[str, dict[str, Any]] = {
    "phi": {"method": "rbc"},
    "sigma": {"method": "logn_isr"},
    "gamma": {"method": "combgmnz"},
    "mmr_lambda": {"rerank": "mmr"},
    "strategy": {},
}
# The fields whose default may be null, and what leaving them out does.
NULL_MEANS = {
    "norm": "the method's own normalisation",
    "filter": "no filter",
    "rerank": "the fused order",
    "strategy": "no strategy: the heuristic expander asks no model",
}
# No model answers at this address: each search falls back to the question alone, the same way
# whatever the strategy, so only that the strategy is read and not refused is compared.
LLM = {"base_url": "http://127.0.0.1:9", "model": "m", "timeout": 1.0}
# The page's own controls, not listed among the options.
OWN_CONTROLS = {"query", "history"}
SERVERS = {
    "fanfuse serve": {},
    "own settings": {"top_k": 3, "rrf_k": 5, "max_variants": 2, "rerank": "mmr", "mmr_lambda": 0.2},
    "llm expander": {"expander": "llm"},
}


@pytest.fixture(scope="module", params=sorted(SERVERS))
def client(request: pytest.FixtureRequest, hybrid_dir: Path) -> Iterator[TestClient]:
    settings = SERVERS[request.param]
    if settings.get("expander") == "llm":
        app = app_for_index(hybrid_dir, expander=LLMExpander(**LLM, strategy="entity"))
    elif settings:
        app = create_app(open_index(hybrid_dir, **settings))
    else:
        app = app_for_index(hybrid_dir)
    with TestClient(app) as test_client:
        yield test_client


def listed(client: TestClient) -> dict[str, Any]:
    return {field["name"]: field["default"] for field in client.get("/options").json()["fields"]}


def test_every_request_field_is_listed(client: TestClient) -> None:
    schema = client.get("/openapi.json").json()["components"]["schemas"]["SearchRequest"]
    assert set(listed(client)) == set(schema["properties"]) - OWN_CONTROLS


def test_a_default_is_null_only_where_leaving_the_field_out_picks_no_value(client: TestClient) -> None:
    nulls = {field for field, default in listed(client).items() if default is None}
    may_be_null = set(NULL_MEANS)
    if client.get("/healthz").json()["expander"] == "llm":
        may_be_null.remove("strategy")  # the model is asked for one
    assert nulls <= may_be_null, nulls - may_be_null


def test_each_listed_default_is_the_one_a_request_without_it_gets(client: TestClient) -> None:
    for field, default in listed(client).items():
        if default is None:
            continue
        body = {"query": QUERY, **READ_WITH.get(field, {})}
        left_out = client.post("/search", json=body)
        given = client.post("/search", json={**body, field: default})
        assert left_out.status_code == 200, (field, left_out.text)
        assert given.status_code == 200, (field, default, given.text)
        assert without_timings(given.json()) == without_timings(left_out.json()), (field, default)


def test_mmr_lambda_alone_weighs_the_servers_own_reranker(hybrid_dir: Path) -> None:
    """On a server whose retriever reranks by MMR, `mmr_lambda` without `rerank` weighs that reranker,
    as `/options` lists it (`rerank: mmr`); on one without a reranker it is refused as idle."""
    body = {"query": QUERY, "mmr_lambda": 0.3}
    with TestClient(create_app(open_index(hybrid_dir, rerank="mmr", mmr_lambda=0.9))) as reranking:
        alone = reranking.post("/search", json=body)
        named = reranking.post("/search", json={**body, "rerank": "mmr"})
        assert alone.status_code == named.status_code == 200, alone.text
        assert without_timings(alone.json()) == without_timings(named.json())
    with TestClient(app_for_index(hybrid_dir)) as plain:
        refused = plain.post("/search", json=body)
    assert refused.status_code == 422
    assert refused.json()["detail"][0]["loc"] == ["body", "mmr_lambda"]
