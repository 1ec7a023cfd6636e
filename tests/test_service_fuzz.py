"""`fanfuse serve`'s API fuzzed from its own OpenAPI schema (schemathesis): whatever the generated
request, no 5xx, and every answer matches the status codes and the response schema it documents.
The test run takes a bounded number of examples (the CI profile's share); docs/service.md records a
longer run."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

pytest.importorskip("schemathesis")
pytest.importorskip("fastapi")

import schemathesis
from fanfuse.retrievers.tantivy_index import TantivyRetriever
from fanfuse.service import app_for_index
from fanfuse.service.schema import SearchRequest
from fastapi import FastAPI
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given, settings, strategies
from rrf_strategies import examples
from schemathesis.checks import positive_data_acceptance
from test_cli_search_options import DOCUMENTS


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FastAPI]:
    directory = tmp_path_factory.mktemp("fuzz") / "idx"
    TantivyRetriever.build(DOCUMENTS, directory)
    app = app_for_index(directory)
    with TestClient(app):  # runs the app's startup and, at the end, its shutdown
        yield app


@pytest.fixture(scope="module")
def api_schema(service: FastAPI) -> Any:
    return schemathesis.openapi.from_asgi("/openapi.json", service)


# Left out: that a schema-valid request is accepted. Some combinations of valid values are refused by
# the core (a norm with a method that reads ranks only); what is checked instead is that every refusal
# names the field it is about.
FIELDS = set(SearchRequest.model_fields)


def assert_names_a_field(answer: Any) -> None:
    for error in answer["detail"]:
        location = error["loc"]
        assert location[0] == "body" and error["msg"], answer
        if len(location) > 1 and error["type"] not in ("json_invalid", "extra_forbidden"):
            assert location[1] in FIELDS, answer


def test_the_api_keeps_to_its_schema(api_schema: Any) -> None:
    # Each operation's own strategy under plain Hypothesis (schemathesis's pytest fixture loader
    # does not run under this pytest).
    operations = [result.ok() for result in api_schema.get_all_operations()]
    assert sorted(op.path for op in operations) == ["/healthz", "/options", "/search"]

    @given(case=strategies.one_of([op.as_strategy() for op in operations]))
    @settings(
        examples(0.004),
        deadline=None,
        suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
    )
    def call(case: Any) -> None:
        response = case.call_and_validate(excluded_checks=[positive_data_acceptance])
        if response.status_code == 422:
            assert_names_a_field(response.json())

    call()
