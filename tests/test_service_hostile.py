"""`fanfuse serve` (a real process) against hostile requests generated from its own OpenAPI schema:
every request field, given every hostile value of each JSON type the schema allows there (and a
value of every type it does not), is answered 422 naming the field, 413 when the body is past the
bound, or 200 where the value is valid; never 5xx, never a traceback in the server's log, and the
server answers after. A hostile body costs the server no memory it keeps."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("fastapi")
pytest.importorskip("uvicorn")

import httpx
from fanfuse.limits import REQUEST
from fanfuse.retrievers.tantivy_index import TantivyRetriever
from service_server import serve_command
from test_cli_search_options import DOCUMENTS

# (JSON text, whether no field may accept it). Past the body bound: 413 whatever the field.
NUMBERS = [
    ("NaN", True),
    ("Infinity", True),
    ("-Infinity", True),
    ("1e400", True),
    ("-1e400", True),
    ("9" * 5000, True),  # more digits than Python converts
    ("-0.0", False),
    ("0", False),
    ("1e308", False),
    ("-1e308", False),
    ("5e-324", False),
    ("1" + "0" * 400, False),
    ("9223372036854775808", False),
    ("-9223372036854775809", False),
    ("1.5", False),
]
STRINGS = [
    ('"\\ud800"', True),  # a lone surrogate: JSON can spell it, UTF-8 cannot carry it
    ('"x \\udfff"', True),
    ('"\\u0000"', False),
    ('""', False),
    ('" "', False),
    (json.dumps("y" * (REQUEST.query_chars + 1)), True),
    (json.dumps("z" * (REQUEST.body_bytes + 1)), True),
]
DEEP = ("[" * 100_000 + "]" * 100_000, True)
SAMPLES = {  # one value of each JSON type, for the types a field does not take
    "number": ("1.5", False),
    "integer": ("3", False),
    "string": ('"x"', False),
    "boolean": ("true", False),
    "null": ("null", False),
    "array": ("[]", False),
    "object": ("{}", False),
}


def json_types(node: dict[str, Any]) -> set[str]:
    if "anyOf" in node:
        return set().union(*(json_types(part) for part in node["anyOf"]))
    return {node["type"]} if "type" in node else set(SAMPLES)


def hostile(node: dict[str, Any]) -> list[tuple[str, bool]]:
    """Hostile JSON values for a schema node: by each type it takes, inside its objects and arrays,
    and one value of each type it does not take."""
    kinds = json_types(node)
    values = [SAMPLES[kind] for kind in SAMPLES if kind not in kinds]
    for part in node.get("anyOf", [node]):
        kind = part.get("type")
        if kind in ("number", "integer"):
            values += NUMBERS
        elif kind == "string":
            values += STRINGS
        elif kind == "array":
            values += [DEEP, ("[" + ",".join(["1"] * (REQUEST.filter_values + 1)) + "]", True)]
            values += [(f"[{value}]", never) for value, never in hostile(part["items"])]
        elif kind == "object":
            values += [
                DEEP,
                ("{" + ",".join(f'"k{i}": 1' for i in range(REQUEST.filter_keys + 1)) + "}", True),
            ]
            values += [(f"{{{key}: 1}}", never) for key, never in STRINGS]
            # The values' schema: for every key, or for the keys matching a pattern.
            items = part.get("additionalProperties") or next(iter(part["patternProperties"].values()))
            values += [(f'{{"k": {value}}}', never) for value, never in hostile(items)]
    return list(dict.fromkeys(values))


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Any]]:
    directory = tmp_path_factory.mktemp("hostile") / "idx"
    # A document with the metadata key "k" that the hostile filters name, so that their values reach
    # the search (a key no document has is refused before).
    TantivyRetriever.build([*DOCUMENTS, {"id": "keyed", "text": "owls", "k": 1}], directory)
    with serve_command("--index", str(directory), "--no-dense") as served:
        yield served


def request_fields(url: str) -> dict[str, dict[str, Any]]:
    schema = httpx.get(f"{url}/openapi.json").json()
    reference = schema["paths"]["/search"]["post"]["requestBody"]["content"]["application/json"]["schema"]
    name = reference["$ref"].rsplit("/", 1)[1]
    fields: dict[str, dict[str, Any]] = schema["components"]["schemas"][name]["properties"]
    return fields


def assert_refused_naming(answer: dict[str, Any], field: str, body: str) -> None:
    for error in answer["detail"]:
        location = error["loc"]
        assert location[0] == "body" and error["msg"], (body[:200], answer)
        if error["type"] != "json_invalid":
            assert location[1] == field, (body[:200], answer)


def test_every_field_with_every_hostile_value(server: tuple[str, Any]) -> None:
    url, process = server
    fields = request_fields(url)
    assert set(fields) >= {"query", "top_k", "max_variants", "rrf_k", "phi", "sigma", "gamma", "filter"}
    answered: dict[int, int] = {}
    with httpx.Client(base_url=url, timeout=60) as client:
        for field, node in fields.items():
            for value, never_valid in hostile(node):
                body = (
                    f'{{"query": {value}}}'
                    if field == "query"
                    else f'{{"query": "owls", "{field}": {value}}}'
                )
                response = client.post("/search", content=body, headers={"content-type": "application/json"})
                status = response.status_code
                answered[status] = answered.get(status, 0) + 1
                if len(body.encode()) > REQUEST.body_bytes:
                    assert status == 413, (field, value[:80], response.text[:300])
                    continue
                assert status in (200, 422), (field, value[:80], response.text[:300])
                if status == 422:
                    assert_refused_naming(response.json(), field, body)
                else:
                    assert not never_valid, (field, value[:80], "accepted")
        assert client.get("/healthz").status_code == 200
    assert process.poll() is None
    assert answered[422] > 200 and answered[413] > 0 and answered[200] > 20, answered


def filter_body(values: int) -> bytes:
    listed = ",".join(str(1_000_000_000 + i) for i in range(values))
    return f'{{"query": "owls", "filter": {{"product": [{listed}]}}}}'.encode()


def peak_kib(pid: int) -> int:
    status = Path(f"/proc/{pid}/status").read_text()
    return int(next(line for line in status.splitlines() if line.startswith("VmHWM:")).split()[1])


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads the server's peak memory in /proc")
def test_a_hostile_body_costs_no_memory(server: tuple[str, Any]) -> None:
    # Unbounded, the 22 MB body took 1.6 GB of server memory and the 1 MB one 340 MB (docs/service.md).
    url, process = server
    with httpx.Client(base_url=url, timeout=120) as client:
        client.get("/healthz")
        before = peak_kib(process.pid)
        long_body = filter_body(2_000_000)  # 22 MB
        assert (
            client.post(
                "/search", content=long_body, headers={"content-type": "application/json"}
            ).status_code
            == 413
        )
        just_inside = filter_body(90_000)  # 0.99 MB: a filter list 90 times the longest accepted
        assert len(just_inside) <= REQUEST.body_bytes
        refused = client.post("/search", content=just_inside, headers={"content-type": "application/json"})
        assert refused.status_code == 422 and refused.json()["detail"][0]["loc"][:2] == ["body", "filter"]
        assert client.get("/healthz").status_code == 200
    grown_mb = (peak_kib(process.pid) - before) / 1024
    assert grown_mb < 60, f"the server's peak memory grew by {grown_mb:.0f} MB"


def unknown_fields_body() -> bytes:
    """A body within the bound of as many unknown fields as it holds (over 80,000)."""
    count = REQUEST.body_bytes // 11
    while True:
        body = ('{"query": "owls", ' + ", ".join(f'"k{i}": 0' for i in range(count)) + "}").encode()
        if len(body) <= REQUEST.body_bytes:
            return body
        count -= 1000


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads the server's peak memory in /proc")
def test_a_body_of_unknown_fields_costs_no_memory(server: tuple[str, Any]) -> None:
    # An error built, named and answered for each unknown field took 260 MB (docs/service.md).
    url, process = server
    with httpx.Client(base_url=url, timeout=120) as client:
        client.get("/healthz")
        before = peak_kib(process.pid)
        body = unknown_fields_body()
        refused = client.post("/search", content=body, headers={"content-type": "application/json"})
        assert refused.status_code == 422 and len(refused.content) < 16 * 1024, len(refused.content)
        assert refused.json()["detail"][0]["loc"] == ["body", "k0"]
        assert client.get("/healthz").status_code == 200
    grown_mb = (peak_kib(process.pid) - before) / 1024
    assert grown_mb < 60, f"the server's peak memory grew by {grown_mb:.0f} MB"


DOCS = Path(__file__).resolve().parents[1] / "docs" / "service.md"


def docs_table(heading_line: str) -> dict[str, list[str]]:
    """The Markdown table that follows the line starting with `heading_line`: first cell -> cells."""
    lines = DOCS.read_text().split("\n")
    start = next(i for i, line in enumerate(lines) if line.startswith(heading_line))
    rows = {}
    for line in lines[start + 1 :]:
        if not line.startswith("|"):
            if rows:
                break
            continue
        cells = [cell.strip() for cell in line.strip("|").split("|")]
        rows[cells[0]] = cells[1:]
    return rows


def test_the_docs_state_the_ranges_of_the_table() -> None:
    from fanfuse.service.schema import SearchRequest

    fields = docs_table("The request (only `query` is required")
    for name, field in SearchRequest.model_fields.items():
        description = field.description or ""
        if ": " in description and name in ("top_k", "max_variants", "rrf_k", "phi", "sigma", "gamma"):
            accepted = description.rsplit(": ", 1)[1]  # the schema's words, from fanfuse.limits
            assert fields[f"`{name}`"][-1].startswith(accepted), (name, accepted)
    assert f"at most {REQUEST.query_chars} characters" in fields["`query`"][-1]
    filter_cell = fields["`filter`"][-1]
    for words in (
        f"at most {REQUEST.filter_keys} keys",
        f"each at most {REQUEST.filter_key_chars} characters",
        f"at most {REQUEST.filter_value_chars} characters",
        f"a list of 1 to {REQUEST.filter_values} of them",
    ):
        assert words in filter_cell, words
    bounds = docs_table("| bound | most |")
    assert {name: int(cells[0]) for name, cells in bounds.items() if name.startswith("`")} == {
        f"`{name}`": value for name, value in dataclasses.asdict(REQUEST).items()
    }
