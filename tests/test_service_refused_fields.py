"""A value the search refuses is answered 422 at its field's place in the body, `["body", FIELD]`,
for every field of the request (read from the OpenAPI schema), however the refusal names it: by the
core's `option` (under the core's name), by a message that starts with it, or by a message that names
it as what to change (`lower gamma`), as the core's refusals made while fusing do. The real case: a
combgmnz gamma whose scores overflow a float."""

from __future__ import annotations

from collections.abc import Callable, Coroutine, Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("fastapi")

from fanfuse import FusionError
from fanfuse.multiquery import LLMExpander, MultiQueryRetriever
from fanfuse.retrievers.tantivy_index import TantivyRetriever
from fanfuse.service import app_for_index
from fastapi.testclient import TestClient
from test_cli_search_options import DOCUMENTS, QUERY

# Each field given where the search reads it, on a hybrid server with the LLM expander (the search
# itself is replaced, so no model is asked): the request's other fields, and the field's value.
READ_WITH: dict[str, tuple[dict[str, Any], Any]] = {
    "query": ({}, QUERY),
    "history": ({}, ["an earlier turn"]),
    "top_k": ({}, 3),
    "expander": ({}, "llm"),
    "strategy": ({}, "entity"),
    "max_variants": ({}, 2),
    "method": ({}, "isr"),
    "norm": ({"method": "combsum"}, "min-max"),
    "rrf_k": ({}, 5),
    "phi": ({"method": "rbc"}, 0.5),
    "sigma": ({"method": "logn_isr"}, 0.5),
    "gamma": ({"method": "combgmnz"}, 2),
    "tie_break": ({}, "id"),
    "filter": ({}, {"lang": "en"}),
    "dense": ({}, True),
    "rerank": ({}, "mmr"),
    "mmr_lambda": ({"rerank": "mmr"}, 0.5),
}
# The core's name of a field where it is not the field's.
CORE_NAMES = {"rrf_k": "k"}
# Fields whose names are the words of any message about a search: a refusal names them only by
# starting with them.
CONTEXT = {"query", "history"}


def fields(client: TestClient) -> list[str]:
    schema = client.get("/openapi.json").json()
    return list(schema["components"]["schemas"]["SearchRequest"]["properties"])


@pytest.fixture(scope="module")
def client(hybrid_dir: Path) -> Iterator[TestClient]:
    expander = LLMExpander(base_url="http://127.0.0.1:9", model="m", timeout=1.0)
    with TestClient(app_for_index(hybrid_dir, expander=expander)) as test_client:
        yield test_client


def raising(error: Exception) -> Callable[..., Coroutine[Any, Any, Any]]:
    """A `MultiQueryRetriever.asearch` that refuses every search with `error`."""

    async def refused(self: MultiQueryRetriever, query: str, **options: Any) -> Any:
        raise error

    return refused


def refusal(message: str, option: str | None = None) -> FusionError:
    error = FusionError(message)
    if option is not None:
        error.option = option  # type: ignore[attr-defined]
    return error


def ways_of_naming(field: str) -> dict[str, FusionError]:
    """A refusal of `field`'s value in each way the core and the library word one. The remedy's
    message quotes another field's name (an id, a method), which names nothing."""
    ways = {
        "option": refusal(f"{field}'s value is refused", CORE_NAMES.get(field, field)),
        "leading": refusal(f"{field} must be something else"),
    }
    if field not in CONTEXT:
        other = "top_k" if field != "top_k" else "gamma"
        ways["remedy"] = refusal(
            f"the fused score of id \"{other}\" is inf under method '{other}': its terms overflow the "
            f"range of a float (about 1.8e308); lower {field}, or scale the scores or weights down"
        )
    return ways


def test_every_field_is_given_somewhere(client: TestClient) -> None:
    assert sorted(READ_WITH) == sorted(fields(client))


@pytest.mark.parametrize("field", sorted(READ_WITH))
def test_a_refusal_by_the_search_is_at_its_field(
    client: TestClient, monkeypatch: pytest.MonkeyPatch, field: str
) -> None:
    companions, value = READ_WITH[field]
    body = {"query": QUERY, **companions, field: value}
    for way, error in ways_of_naming(field).items():
        monkeypatch.setattr(MultiQueryRetriever, "asearch", raising(error))
        response = client.post("/search", json=body)
        assert response.status_code == 422, (way, response.text)
        assert response.json()["detail"] == [
            {"type": "value_error", "loc": ["body", field], "msg": str(error)}
        ], way


@pytest.mark.parametrize("gamma", [1e10, 1e300])
def test_a_combgmnz_gamma_that_overflows_is_refused_at_gamma(tmp_path: Path, gamma: float) -> None:
    TantivyRetriever.build(DOCUMENTS, tmp_path / "idx")
    with TestClient(app_for_index(tmp_path / "idx")) as test_client:
        response = test_client.post("/search", json={"query": QUERY, "method": "combgmnz", "gamma": gamma})
    assert response.status_code == 422, response.text
    (error,) = response.json()["detail"]
    assert error["loc"] == ["body", "gamma"], error
    assert "overflow" in error["msg"] and "lower gamma" in error["msg"], error


def test_a_refusal_naming_no_field_or_several_is_at_the_body(
    client: TestClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    overflow = (
        "the fused score of id \"a\" is inf under method 'combgmnz': its terms overflow the range of a "
        "float (about 1.8e308)"
    )
    # No remedy; a remedy naming two fields; what happened naming the method, the remedy no field
    # given (gamma is the server's, not the request's).
    for message in ("the lists disagree", "x; lower gamma or max_variants", f"{overflow}; lower gamma"):
        monkeypatch.setattr(MultiQueryRetriever, "asearch", raising(FusionError(message)))
        body = {"query": QUERY, "method": "combgmnz", "max_variants": 2}
        body |= {} if message.startswith("the fused") else {"gamma": 2}
        response = client.post("/search", json=body)
        assert response.status_code == 422
        assert response.json()["detail"][0]["loc"] == ["body"], message
