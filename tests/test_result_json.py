"""One shape for a search result: the library's result types, the JSON `fanfuse search --json` prints,
and the service's answer and its OpenAPI schema. Every member of every result type (enumerated from
the types, from `SearchResult` down) is in the OpenAPI schema under the type's own name with its
description, and in the JSON of the command and of the service by the same name, with a value of the
type the schema states."""

from __future__ import annotations

import dataclasses
import inspect
import json
import typing
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fanfuse.cli import main
from fanfuse.multiquery import MultiQueryRetriever, diagnostics
from fanfuse.multiquery.result_json import as_data, json_fields
from fanfuse.retrievers.tantivy_index import TantivyRetriever
from multiquery_toys import FailingRetriever
from test_cli_search_options import DOCUMENTS, QUERY


def nested_types(kind: Any) -> Iterator[type]:
    """The dataclasses in the type `kind` (itself, or in its unions and lists)."""
    if dataclasses.is_dataclass(kind):
        yield typing.cast(type, kind)
    for arg in typing.get_args(kind):
        yield from nested_types(arg)


def result_types() -> list[type]:
    """`SearchResult` and every type its JSON holds, at any depth."""
    found: list[type] = []
    todo: list[type] = [diagnostics.SearchResult]
    while todo:
        kind = todo.pop()
        if kind not in found:
            found.append(kind)
            todo += [inner for member in json_fields(kind) for inner in nested_types(member.kind)]
    return found


def test_the_result_types_are_the_dataclasses_of_the_library() -> None:
    library = {getattr(diagnostics, name) for name in diagnostics.__all__}
    assert set(result_types()) == {kind for kind in library if dataclasses.is_dataclass(kind)}


@pytest.mark.parametrize("kind", result_types(), ids=lambda kind: kind.__name__)
def test_each_type_and_member_says_what_it_holds(kind: type) -> None:
    assert kind.__doc__ and not kind.__doc__.startswith(f"{kind.__name__}("), "the dataclass's own doc"
    assert all(member.description for member in json_fields(kind)), json_fields(kind)


@pytest.fixture(scope="module")
def index_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("result_json") / "idx"
    TantivyRetriever.build(DOCUMENTS, directory)
    return directory


@pytest.fixture(scope="module")
def served(index_dir: Path) -> tuple[dict[str, Any], list[Any]]:
    """The service's OpenAPI schema, and its answers: a whole one and a degraded one."""
    pytest.importorskip("fastapi")
    from fanfuse.service import app_for_index, create_app
    from fastapi.testclient import TestClient

    with TestClient(app_for_index(index_dir)) as client:
        openapi = client.get("/openapi.json").json()
        whole = client.post("/search", json={"query": QUERY})
    degraded = MultiQueryRetriever([TantivyRetriever(index_dir), FailingRetriever()])
    with TestClient(create_app(degraded)) as client:
        failing = client.post("/search", json={"query": QUERY})
    assert whole.status_code == failing.status_code == 200, (whole.text, failing.text)
    return openapi, [whole.json(), failing.json()]


@pytest.mark.parametrize("kind", result_types(), ids=lambda kind: kind.__name__)
def test_the_openapi_schema_has_each_type_by_its_name_with_its_members(
    kind: type, served: tuple[dict[str, Any], list[Any]]
) -> None:
    spec = served[0]["components"]["schemas"][kind.__name__]
    members = json_fields(kind)
    assert list(spec["properties"]) == [member.name for member in members]
    assert spec["required"] == [member.name for member in members]
    assert spec["additionalProperties"] is False
    described = {name: field.get("description") for name, field in spec["properties"].items()}
    assert described == {member.name: member.description for member in members}
    assert spec["description"] == inspect.getdoc(kind)


def test_the_answer_of_a_search_is_documented_as_the_search_result(
    served: tuple[dict[str, Any], list[Any]],
) -> None:
    responses = served[0]["paths"]["/search"]["post"]["responses"]
    assert responses["200"]["content"]["application/json"]["schema"] == {
        "$ref": "#/components/schemas/SearchResult"
    }


def test_the_command_the_library_and_the_service_write_each_member_with_the_schemas_type(
    index_dir: Path, served: tuple[dict[str, Any], list[Any]], capsys: pytest.CaptureFixture[str]
) -> None:
    jsonschema = pytest.importorskip("jsonschema")
    openapi, answers = served
    assert main(["search", "--index", str(index_dir), QUERY, "--json"]) == 0
    printed = json.loads(capsys.readouterr().out)
    with MultiQueryRetriever([TantivyRetriever(index_dir), FailingRetriever()]) as retriever:
        library = as_data(retriever.search(QUERY))
    documents = [printed, library, *answers]
    schema = {"$ref": "#/components/schemas/SearchResult", "components": openapi["components"]}
    validator = jsonschema.Draft202012Validator(schema)
    for document in documents:
        errors = [
            f"{list(error.absolute_path)}: {error.message}" for error in validator.iter_errors(document)
        ]
        assert errors == [], errors
    # Every member is there to check: hits with provenance, and a failed branch (its error a string).
    for document in documents:
        assert document["hits"] and all(hit["provenance"] for hit in document["hits"])
    errors = [branch["error"] for document in documents for branch in document["diagnostics"]["branches"]]
    assert any(isinstance(error, str) for error in errors) and None in errors


def test_the_answer_when_every_branch_failed_has_the_documented_shape(
    served: tuple[dict[str, Any], list[Any]],
) -> None:
    jsonschema = pytest.importorskip("jsonschema")
    from fanfuse.service import create_app
    from fastapi.testclient import TestClient

    openapi = served[0]
    documented = openapi["paths"]["/search"]["post"]["responses"]["503"]["content"]["application/json"]
    with TestClient(create_app(MultiQueryRetriever([FailingRetriever()]))) as client:
        answer = client.post("/search", json={"query": QUERY})
    assert answer.status_code == 503
    schema = {**documented["schema"], "components": openapi["components"]}
    assert answer.json()["branches"]
    jsonschema.validate(answer.json(), schema, cls=jsonschema.Draft202012Validator)
