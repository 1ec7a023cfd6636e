"""A request field given where the search would not read it is refused naming it
(`fanfuse.service.idle_fields`); every field of the OpenAPI schema is either read by every search or
has a rule, and every rule is held on each of its fields; and every field, given over a real index on
a server of each setting, changes the answer or is refused naming it."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("fastapi")

from fanfuse._core import METHODS
from fanfuse.multiquery import LLMExpander
from fanfuse.options import methods_reading
from fanfuse.retrievers.tantivy_index import TantivyRetriever
from fanfuse.service import app_for_index
from fanfuse.service.idle_fields import RULES
from fastapi.testclient import TestClient
from test_cli_search_options import DOCUMENTS, QUERY

# The fields every search reads, whatever else the request says.
# The conversation is the question's context, not a setting: a chat client sends it with every
# request, whether the search expands or not.
ALWAYS_READ = {
    "query",
    "history",
    "top_k",
    "expander",
    "method",
    "tie_break",
    "filter",
    "dense",
    "rerank",
}

# For each rule and field: a request where the rule does not hold, on a server with the heuristic
# expander (expansion on, rrf).
IDLE: dict[tuple[str, str], dict[str, Any]] = {
    ("max_variants", "query expansion (an expander other than none)"): {
        "expander": "none",
        "max_variants": 3,
    },
    ("strategy", "query expansion (an expander other than none, max_variants above 1)"): {
        "max_variants": 1,
        "strategy": "paraphrase",
    },
    ("strategy", "the LLM expander (a server started with `fanfuse serve --expander llm`)"): {
        "strategy": "paraphrase"
    },
    ("norm", f"method {' or '.join(m for m in methods_reading('norm') if m in METHODS)}"): {"norm": "none"},
    ("rrf_k", "method rrf"): {"method": "isr", "rrf_k": 5},
    ("phi", "method rbc"): {"phi": 0.5},
    ("sigma", "method logn_isr"): {"sigma": 0.5},
    ("gamma", "method combgmnz"): {"method": "combsum", "gamma": 2},
    ("mmr_lambda", "rerank mmr (the request's, else the server's own reranker)"): {"mmr_lambda": 0.5},
}

# Requests where each field is read: none is refused as idle.
READ = [
    {"max_variants": 2},
    {"history": ["an earlier turn"]},
    {"method": "combsum", "norm": "none"},
    {"method": "rrf", "rrf_k": 5},
    {"method": "rbc", "phi": 0.5},
    {"method": "logn_isr", "sigma": 0.5},
    {"method": "combgmnz", "gamma": 2},
]


@pytest.fixture(scope="module")
def index_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("idle") / "idx"
    TantivyRetriever.build(DOCUMENTS, directory)
    return directory


@pytest.fixture(scope="module")
def client(index_dir: Path) -> Iterator[TestClient]:
    with TestClient(app_for_index(index_dir)) as test_client:
        yield test_client


def test_every_field_is_read_always_or_has_a_rule(client: TestClient) -> None:
    fields = set(client.get("/openapi.json").json()["components"]["schemas"]["SearchRequest"]["properties"])
    ruled = {field for rule in RULES for field in rule.names}
    assert fields == ALWAYS_READ | ruled
    assert not ALWAYS_READ & ruled
    assert set(IDLE) == {(field, rule.needs) for rule in RULES for field in rule.names}


@pytest.mark.parametrize(("field", "needs"), sorted(IDLE))
def test_a_field_where_it_would_do_nothing_is_refused_naming_it(
    client: TestClient, field: str, needs: str
) -> None:
    response = client.post("/search", json={"query": QUERY, **IDLE[field, needs]})
    assert response.status_code == 422, response.text
    (error,) = response.json()["detail"]
    assert error["loc"] == ["body", field]
    assert error["msg"].startswith(f"{field} goes with {needs} and would do nothing here; leave {field} out")


@pytest.mark.parametrize("body", READ, ids=lambda body: ",".join(body))
def test_a_field_where_it_is_read_is_searched(client: TestClient, body: dict[str, Any]) -> None:
    response = client.post("/search", json={"query": QUERY, **body})
    assert response.status_code == 200, response.text


def test_a_value_equal_to_the_default_is_given_all_the_same(client: TestClient) -> None:
    response = client.post("/search", json={"query": QUERY, "method": "isr", "rrf_k": 60})
    assert response.status_code == 422
    assert response.json()["detail"][0]["loc"] == ["body", "rrf_k"]


def test_strategy_is_read_by_a_server_with_the_llm_expander(index_dir: Path) -> None:
    # No model answers at this address: the search degrades to the question alone, and the field
    # was read (not refused).
    expander = LLMExpander(base_url="http://127.0.0.1:9", model="m", timeout=1.0)
    with TestClient(app_for_index(index_dir, expander=expander)) as client:
        response = client.post("/search", json={"query": QUERY, "strategy": "entity"})
        assert response.status_code == 200, response.text
        refused = client.post("/search", json={"query": QUERY, "strategy": "entity", "expander": "none"})
        assert refused.status_code == 422
        assert refused.json()["detail"][0]["msg"].startswith("strategy goes with query expansion")


def test_docs_service_lists_the_rules() -> None:
    page = (Path(__file__).resolve().parents[1] / "docs" / "service.md").read_text(encoding="utf-8")
    rows = {line.strip() for line in page.splitlines()}
    for rule in RULES:
        assert f"| {', '.join(f'`{f}`' for f in rule.names)} | {rule.needs} |" in rows


# Every field of the request, given over a real index: the other fields of the request, and its value.
# Each must change the answer or be refused naming it (422 at its place in the body).
FIELD_VALUES: dict[str, tuple[dict[str, Any], Any]] = {
    "history": ({}, ["tell me about bats"]),
    "top_k": ({}, 1),
    "expander": ({}, "none"),
    "max_variants": ({}, 1),
    "strategy": ({}, "entity"),
    "method": ({}, "isr"),
    "rrf_k": ({}, 5),
    "norm": ({}, "min-max"),
    "phi": ({}, 0.5),
    "sigma": ({}, 0.5),
    "gamma": ({}, 2),
    # Two documents of one text tie under a score method over the question alone.
    "tie_break": ({"method": "combsum", "expander": "none"}, "id"),
    "filter": ({}, {"lang": "en"}),
    "dense": ({}, True),
    "rerank": ({}, "mmr"),
    "mmr_lambda": ({}, 0.5),
}
FIELDS_APART = {"query": "the base of every request"}
# The server settings a request's fields are read against, and the value a field takes under one
# where the one above would only state what the server gives.
SERVERS: dict[str, tuple[dict[str, Any], dict[str, Any]]] = {
    "default": ({}, {}),
    "expansion-off": ({"expansion": False}, {"expander": "heuristic", "max_variants": 3}),
}
# What a field may leave unchanged under one of them, without being refused, and why.
SAME_UNDER = {("history", "expansion-off"): "the conversation is context, never refused for going unread"}


def test_every_field_of_the_request_has_a_value() -> None:
    assert set(FIELD_VALUES) | set(FIELDS_APART) == ALWAYS_READ | {f for rule in RULES for f in rule.names}


@pytest.fixture(scope="module")
def clients(index_dir: Path) -> Iterator[dict[str, TestClient]]:
    with contextlib.ExitStack() as stack:
        yield {
            name: stack.enter_context(TestClient(app_for_index(index_dir, **settings)))
            for name, (settings, _) in SERVERS.items()
        }


@pytest.mark.parametrize(
    ("field", "server"),
    [(f, s) for f in sorted(FIELD_VALUES) for s in sorted(SERVERS) if (f, s) not in SAME_UNDER],
)
def test_every_field_changes_the_answer_or_is_refused_naming_it(
    clients: dict[str, TestClient], field: str, server: str
) -> None:
    from test_cli_search_options import without_timings

    companions, value = FIELD_VALUES[field]
    value = SERVERS[server][1].get(field, value)
    base = clients[server].post("/search", json={"query": QUERY, **companions})
    assert base.status_code == 200, base.text
    given = clients[server].post("/search", json={"query": QUERY, **companions, field: value})
    if given.status_code == 422:
        assert [error["loc"] for error in given.json()["detail"]] == [["body", field]]
    else:
        assert given.status_code == 200, given.text
        assert without_timings(given.json()) != without_timings(base.json())
