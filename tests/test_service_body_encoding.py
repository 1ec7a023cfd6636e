"""Every operation of `fanfuse serve` that takes a body (read from the OpenAPI schema) reads it as JSON
sent with content-type application/json, encoded as UTF-8 (RFC 8259, section 8.1): a body sent
without that content type is answered 415 saying so, one in another encoding (UTF-16, UTF-32, with or
without a byte order mark, Latin-1) 400 naming the rule, never searched, and both are documented."""

from __future__ import annotations

import gzip
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("fastapi")

from fanfuse.retrievers.tantivy_index import TantivyRetriever
from fanfuse.service import app_for_index
from fastapi.testclient import TestClient
from test_cli_search_options import DOCUMENTS, QUERY

# A body each operation accepts.
VALID: dict[tuple[str, str], dict[str, Any]] = {("post", "/search"): {"query": QUERY + " é"}}
JSON = "application/json"
NOT_JSON_TYPES = [None, "text/plain", "application/x-www-form-urlencoded", "multipart/form-data", "json"]
OTHER_ENCODINGS = ["utf-16", "utf-16-le", "utf-16-be", "utf-32", "utf-32-le", "utf-32-be"]
OTHER_ENCODINGS += ["latin-1", "cp1252"]


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TestClient]:
    directory: Path = tmp_path_factory.mktemp("body") / "idx"
    TantivyRetriever.build(DOCUMENTS, directory)
    with TestClient(app_for_index(directory)) as test_client:
        yield test_client


def operations(client: TestClient) -> dict[tuple[str, str], dict[str, Any]]:
    paths = client.get("/openapi.json").json()["paths"]
    return {
        (method, path): operation
        for path, item in paths.items()
        for method, operation in item.items()
        if "requestBody" in operation
    }


def send(client: TestClient, method: str, path: str, body: bytes, content_type: str | None) -> Any:
    headers = {} if content_type is None else {"content-type": content_type}
    return client.request(method.upper(), path, content=body, headers=headers)


def test_every_operation_with_a_body_has_one_here(client: TestClient) -> None:
    assert set(operations(client)) == set(VALID)


@pytest.mark.parametrize(("method", "path"), sorted(VALID))
@pytest.mark.parametrize("content_type", NOT_JSON_TYPES)
def test_a_body_not_sent_as_json_is_refused_saying_how_to_send_it(
    client: TestClient, method: str, path: str, content_type: str | None
) -> None:
    body = VALID[method, path]
    response = send(client, method, path, json.dumps(body).encode(), content_type)
    assert response.status_code == 415, response.text
    detail = response.json()["detail"]
    assert "the body must be JSON sent with content-type application/json" in detail, detail
    assert f"(got {content_type})" in detail if content_type else "(got no content-type)" in detail
    assert response.headers["accept-post"] == JSON  # what a POST takes (Accept-Post, W3C LDP)


@pytest.mark.parametrize(("method", "path"), sorted(VALID))
@pytest.mark.parametrize("encoding", OTHER_ENCODINGS)
def test_a_body_in_another_encoding_is_refused_naming_the_rule(
    client: TestClient, method: str, path: str, encoding: str
) -> None:
    body = json.dumps(VALID[method, path], ensure_ascii=False).encode(encoding)
    for content_type in (JSON, f"{JSON}; charset={encoding}"):
        response = send(client, method, path, body, content_type)
        assert response.status_code == 400, (content_type, response.text)
        detail = response.json()["detail"]
        assert detail.startswith("the body must be JSON encoded as UTF-8 (RFC 8259, section 8.1"), detail
        if encoding.startswith("utf-"):
            assert encoding[:6].upper() in detail, detail  # the encoding it looks like


@pytest.mark.parametrize(("method", "path"), sorted(VALID))
def test_a_utf8_body_with_a_stray_nul_is_no_json_not_another_encoding(
    client: TestClient, method: str, path: str
) -> None:
    for body in (b"\x00", b"{\x00}", b'{"query": "a\x00"}'[:3] + b"\x00"):
        response = send(client, method, path, body, JSON)
        assert response.status_code == 422, (body, response.text)
        assert response.json()["detail"][0]["type"] == "json_invalid", body


@pytest.mark.parametrize(("method", "path"), sorted(VALID))
def test_a_utf8_body_is_read_with_any_json_content_type(client: TestClient, method: str, path: str) -> None:
    body = json.dumps(VALID[method, path], ensure_ascii=False).encode()
    for content_type in (JSON, f"{JSON}; charset=utf-8", "Application/JSON", "application/merge-patch+json"):
        response = send(client, method, path, body, content_type)
        assert response.status_code == 200, (content_type, response.text)
    # A byte order mark before UTF-8 JSON may be ignored (RFC 8259, section 8.1), and is.
    response = send(client, method, path, b"\xef\xbb\xbf" + body, JSON)
    assert response.status_code == 200, response.text


@pytest.mark.parametrize(("method", "path"), sorted(VALID))
def test_the_refusals_are_documented(client: TestClient, method: str, path: str) -> None:
    responses = operations(client)[method, path]["responses"]
    assert "application/json" in responses["415"]["description"]
    assert "UTF-8" in responses["400"]["description"]


@pytest.mark.parametrize(("method", "path"), sorted(VALID))
@pytest.mark.parametrize("coding", ["gzip", "deflate", "br", "zstd", "GZIP", "gzip, identity"])
def test_a_compressed_body_is_refused_naming_its_content_coding(
    client: TestClient, method: str, path: str, coding: str
) -> None:
    body = gzip.compress(json.dumps(VALID[method, path]).encode())
    response = client.request(
        method.upper(), path, content=body, headers={"content-type": JSON, "content-encoding": coding}
    )
    assert response.status_code == 415, response.text
    detail = response.json()["detail"]
    assert detail.startswith("the body must be sent uncompressed (got content-encoding "), detail
    assert coding.lower() in detail
    assert response.headers["accept-encoding"] == "identity"  # RFC 9110, section 15.5.16


@pytest.mark.parametrize(("method", "path"), sorted(VALID))
def test_a_body_said_to_be_uncoded_is_read(client: TestClient, method: str, path: str) -> None:
    body = json.dumps(VALID[method, path]).encode()
    for coding in ("identity", "Identity", "", " "):  # an empty list of codings is none
        response = client.request(
            method.upper(), path, content=body, headers={"content-type": JSON, "content-encoding": coding}
        )
        assert response.status_code == 200, (coding, response.text)


def test_a_405_allows_head_wherever_it_allows_get(client: TestClient) -> None:
    paths = client.get("/openapi.json").json()["paths"]
    for each, item in paths.items():
        refused = client.request("DELETE", each)
        assert refused.status_code == 405, each
        allowed = {m.strip() for m in refused.headers["allow"].split(",")}
        expected = {m.upper() for m in item} | ({"HEAD"} if "get" in item else set())
        assert allowed == expected, each
