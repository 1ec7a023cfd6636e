"""Every refusal `fanfuse serve` answers (400, 413, 415, 422: each way a request is refused) is JSON
that validates against the schema its OpenAPI document declares for that status; and HEAD is
answered wherever GET is (RFC 9110, section 9.3.2): the GET's status and headers, no body."""

from __future__ import annotations

import codecs
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("fastapi")
pytest.importorskip("uvicorn")

import httpx
import jsonschema
from fanfuse.limits import REQUEST
from fanfuse.retrievers.tantivy_index import TantivyRetriever
from fanfuse.service import app_for_index
from fastapi.testclient import TestClient
from service_server import serving
from test_cli_search_options import DOCUMENTS, QUERY

JSON = "application/json"
# Each way a request to POST /search is refused: (body, content type, the status expected).
REFUSED: dict[str, tuple[bytes, str | None, int]] = {
    "not UTF-8": (codecs.BOM_UTF16_LE + json.dumps({"query": QUERY}).encode("utf-16-le"), JSON, 400),
    "too long": (b'{"query": "' + b"x" * REQUEST.body_bytes + b'"}', JSON, 413),
    "no content type": (json.dumps({"query": QUERY}).encode(), None, 415),
    "another content type": (json.dumps({"query": QUERY}).encode(), "text/plain", 415),
    "not JSON": (b"{query", JSON, 422),
    "too deep": (b"[" * 100_000 + b"]" * 100_000, JSON, 422),
    "no query": (b"{}", JSON, 422),
    "wrong type": (json.dumps({"query": QUERY, "top_k": "ten"}).encode(), JSON, 422),
    "unknown field": (json.dumps({"query": QUERY, "topk": 3}).encode(), JSON, 422),
    "renamed field": (json.dumps({"query": QUERY, "variants": 3}).encode(), JSON, 422),
    "many unknown fields": (
        json.dumps({"query": QUERY, **{f"k{i}": 0 for i in range(50)}}).encode(),
        JSON,
        422,
    ),
    "many errors": (json.dumps({"query": QUERY, "history": [1] * 50}).encode(), JSON, 422),
    "idle field": (json.dumps({"query": QUERY, "phi": 0.5}).encode(), JSON, 422),
    "refused by the server": (json.dumps({"query": QUERY, "dense": True}).encode(), JSON, 422),
    "refused by the search": (json.dumps({"query": QUERY, "filter": {"nokey": 1}}).encode(), JSON, 422),
}


@pytest.fixture(scope="module")
def index_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("refusal-schema") / "idx"
    TantivyRetriever.build(DOCUMENTS, directory)
    return directory


@pytest.fixture(scope="module")
def client(index_dir: Path) -> Iterator[TestClient]:
    with TestClient(app_for_index(index_dir)) as test_client:
        yield test_client


def declared_schema(document: dict[str, Any], status: int) -> dict[str, Any]:
    """The JSON schema POST /search declares for an answer of `status`, with the document's
    components, so that its references resolve."""
    response = document["paths"]["/search"]["post"]["responses"][str(status)]
    assert JSON in response.get("content", {}), (status, response)
    return {**response["content"][JSON]["schema"], "components": document["components"]}


def test_each_refusal_declares_a_schema(client: TestClient) -> None:
    document = client.get("/openapi.json").json()
    for status in (400, 413, 415, 422):
        declared_schema(document, status)


@pytest.mark.parametrize("way", sorted(REFUSED))
def test_each_refusal_validates_against_the_schema_of_its_status(client: TestClient, way: str) -> None:
    body, content_type, status = REFUSED[way]
    headers = {} if content_type is None else {"content-type": content_type}
    response = client.post("/search", content=body, headers=headers)
    assert response.status_code == status, response.text[:300]
    assert response.headers["content-type"] == JSON
    document = client.get("/openapi.json").json()
    jsonschema.validate(response.json(), declared_schema(document, status))


def test_head_is_answered_wherever_get_is(index_dir: Path) -> None:
    with serving(app_for_index(index_dir)) as url, httpx.Client(base_url=url, timeout=30) as http:
        paths = ["/", "/healthz", "/options", "/openapi.json", "/page/page.js"]
        for path in paths:
            got, head = http.get(path), http.head(path)
            assert got.status_code == 200, path
            assert head.status_code == 200, (path, head.status_code, head.text)
            assert head.content == b"", path
            for header in ("content-type", "content-length"):
                assert head.headers.get(header) == got.headers.get(header), (path, header)
        # HEAD where there is no GET: refused as GET is.
        assert http.head("/search").status_code == http.get("/search").status_code == 405
        assert http.get("/healthz").status_code == 200  # the connection serves on after each HEAD
