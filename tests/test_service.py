"""`fanfuse serve`: POST /search answers as `fanfuse.open_index(DIR).search` does, bad fields are
refused with 422 naming them, a failing branch degrades the answer (200) and only all failing is an
error (503), and a search in flight does not hold the event loop."""

from __future__ import annotations

import json
import signal
import threading
import time
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("fastapi")
pytest.importorskip("uvicorn")

import httpx
from fanfuse._renamed import REMOVED_KEYWORDS
from fanfuse.cli import main
from fanfuse.cli.render import as_json
from fanfuse.index_retriever import open_index
from fanfuse.multiquery import MultiQueryRetriever
from fanfuse.retrievers.tantivy_index import TantivyRetriever
from fanfuse.service import app_for_index, create_app
from fanfuse.service.schema import RENAMED_FIELDS
from fastapi.testclient import TestClient
from multiquery_toys import FailingRetriever, Gate, KeywordRetriever
from service_server import serve_command, serving
from test_cli_search_options import DOCUMENTS, QUERY, without_timings

TIMEOUT = 30.0


@pytest.fixture(scope="module")
def index_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("service") / "idx"
    TantivyRetriever.build(DOCUMENTS, directory)
    return directory


@pytest.fixture(scope="module")
def client(index_dir: Path) -> Any:
    with TestClient(app_for_index(index_dir)) as test_client:
        yield test_client


def library(index_dir: Path, request: dict[str, Any], **options: Any) -> Any:
    """What `open_index(DIR).search` gives for the request's options (library names in `options`)."""
    with open_index(index_dir, dense=request.get("dense")) as retriever:
        return without_timings(json.loads(as_json(retriever.search(request["query"], **options))))


def answered(response: httpx.Response) -> Any:
    assert response.status_code == 200, response.text
    data = response.json()
    assert data["diagnostics"]["degraded"] is False
    return without_timings(data)


REQUESTS = [
    ({"query": QUERY}, {}),
    (
        {"query": QUERY, "top_k": 2, "max_variants": 2, "method": "combmnz"},
        {"top_k": 2, "max_variants": 2, "method": "combmnz"},
    ),
    ({"query": QUERY, "expander": "none", "rrf_k": 10}, {"expansion": False, "rrf_k": 10.0}),
    (
        {"query": QUERY, "method": "rbc", "phi": 0.5, "tie_break": "id"},
        {"method": "rbc", "phi": 0.5, "tie_break": "id"},
    ),
    ({"query": QUERY, "method": "condorcet"}, {"method": "condorcet"}),
]


def test_a_real_server_answers_as_open_index(index_dir: Path) -> None:
    with serving(app_for_index(index_dir)) as url, httpx.Client(base_url=url, timeout=TIMEOUT) as http:
        assert http.get("/healthz").json() == {
            "status": "ok",
            "index": str(index_dir),
            "retrievers": ["bm25"],
            "dense": False,
            "expander": "heuristic",
        }
        for request, options in REQUESTS:
            assert answered(http.post("/search", json=request)) == library(index_dir, request, **options)


def test_a_hybrid_index_is_served_hybrid_and_bm25_on_request(hybrid_dir: Path) -> None:
    with TestClient(app_for_index(hybrid_dir)) as test_client:
        hybrid = ["bm25", "dense", "dense-feedback"]
        assert test_client.get("/healthz").json()["retrievers"] == hybrid
        for request in ({"query": QUERY}, {"query": QUERY, "dense": True}, {"query": QUERY, "dense": False}):
            branches = {
                b["retriever"]
                for b in test_client.post("/search", json=request).json()["diagnostics"]["branches"]
            }
            assert branches == ({"bm25"} if request.get("dense") is False else set(hybrid))
            assert answered(test_client.post("/search", json=request)) == library(hybrid_dir, request)


def test_the_answer_has_provenance_and_branch_diagnostics(client: TestClient) -> None:
    data = client.post("/search", json={"query": QUERY, "max_variants": 3}).json()
    branches = data["diagnostics"]["branches"]
    assert [(b["variant_index"], b["retriever"]) for b in branches] == [(0, "bm25"), (1, "bm25"), (2, "bm25")]
    assert all(b["error"] is None and b["latency_ms"] >= 0 for b in branches)
    first = data["hits"][0]
    assert {p["variant_index"] for p in first["provenance"]} <= {0, 1, 2}
    assert all(p["rank"] >= 1 and p["retriever"] == "bm25" for p in first["provenance"])


def test_the_openapi_schema_lists_the_options(client: TestClient) -> None:
    schema = client.get("/openapi.json").json()
    request = schema["components"]["schemas"]["SearchRequest"]
    assert request["required"] == ["query"]
    assert "rrf" in request["properties"]["method"]["enum"]
    assert None in request["properties"]["tie_break"]["enum"]  # left out, as null, is accepted
    assert set(schema["paths"]) == {"/search", "/healthz", "/options"}
    assert "SearchResult" in schema["components"]["schemas"]


@pytest.mark.parametrize(
    ("body", "field", "message"),
    [
        ({}, "query", "Field required"),
        ({"query": "   "}, "query", "white space"),
        ({"query": QUERY, "top_k": 0}, "top_k", "greater than or equal to 1"),
        ({"query": QUERY, "top_k": "ten"}, "top_k", "valid integer"),
        ({"query": QUERY, "top_k": "10"}, "top_k", "valid integer"),
        ({"query": QUERY, "method": "isr", "sigma": False}, "sigma", "valid number"),
        ({"query": QUERY, "max_variants": 99}, "max_variants", "less than or equal to"),
        ({"query": QUERY, "method": "nope"}, "method", "'nope' is not one of rrf, isr"),
        ({"query": QUERY, "norm": "zmuv"}, "norm", "norm goes with method combsum or"),
        ({"query": QUERY, "method": "rbc", "phi": 0.0}, "phi", "greater than 0"),
        ({"query": QUERY, "rrf_k": -1}, "rrf_k", "greater than 0"),
        ({"query": QUERY, "expander": "llm"}, "expander", "this server's expander is heuristic"),
        ({"query": QUERY, "expander": "model"}, "expander", "'heuristic', 'llm' or 'none'"),
        ({"query": QUERY, "strategy": "condense"}, "strategy", "strategy goes with the LLM expander"),
        ({"query": QUERY, "strategy": "nope"}, "strategy", "'nope' is not one of paraphrase"),
        ({"query": QUERY, "dense": True}, "dense", "fanfuse serve --dense"),
        ({"query": QUERY, "topk": 3}, "topk", "not a field of SearchRequest (did you mean top_k?)"),
        ({"query": QUERY, "filter": ["lang"]}, "filter", "valid dictionary"),
    ],
)
def test_a_bad_field_is_refused_by_name(client: TestClient, body: Any, field: str, message: str) -> None:
    response = client.post("/search", json=body)
    assert response.status_code == 422
    errors = response.json()["detail"]
    assert errors[0]["loc"] == ["body", field], errors
    assert message in errors[0]["msg"], errors


@pytest.mark.parametrize(("old", "new"), sorted(RENAMED_FIELDS.items()))
def test_a_field_under_its_old_name_is_refused_naming_the_new_one(
    client: TestClient, old: str, new: str
) -> None:
    fields = client.get("/openapi.json").json()["components"]["schemas"]["SearchRequest"]["properties"]
    assert new in fields and old not in fields
    response = client.post("/search", json={"query": QUERY, old: 1})
    assert response.status_code == 422
    message = f"{old} is renamed to {new}; use {new}"
    assert response.json()["detail"] == [{"type": "extra_forbidden", "loc": ["body", old], "msg": message}]


@pytest.mark.parametrize(
    ("gone", "why"), sorted(REMOVED_KEYWORDS["fanfuse.service.schema.SearchRequest"].items())
)
def test_a_removed_field_is_refused_saying_why(client: TestClient, gone: str, why: str) -> None:
    fields = client.get("/openapi.json").json()["components"]["schemas"]["SearchRequest"]["properties"]
    assert gone not in fields
    response = client.post("/search", json={"query": QUERY, gone: "max"})
    assert response.status_code == 422
    message = f"{gone} is removed: {why}"
    assert response.json()["detail"] == [{"type": "extra_forbidden", "loc": ["body", gone], "msg": message}]


def misspelt(field: str) -> str:
    return field[:-2] + field[-1]  # its last but one letter dropped


@pytest.mark.parametrize("model", ["SearchRequest", "Message"])
def test_a_misspelt_field_is_refused_naming_the_field_meant(client: TestClient, model: str) -> None:
    """Every field of the request schema (the body's and a conversation message's), misspelt."""
    schemas = client.get("/openapi.json").json()["components"]["schemas"]
    fields = list(schemas[model]["properties"])
    for field in fields:
        wrong = misspelt(field)
        assert wrong not in fields and wrong not in RENAMED_FIELDS, wrong
        message = {"role": "user", "content": "earlier", wrong: 1}
        body = {"query": QUERY, **({wrong: 1} if model == "SearchRequest" else {"history": [message]})}
        response = client.post("/search", json=body)
        assert response.status_code == 422
        (error,) = (e for e in response.json()["detail"] if e["type"] == "extra_forbidden")
        assert error["loc"][-1] == wrong and error["loc"][-2] in ("body", model), error
        head, _, listed = error["msg"].partition("; its fields: ")
        assert head.startswith(f"{wrong} is not a field of {model} (did you mean "), error
        assert field in head.removesuffix("?)").split("did you mean ")[1].split(" or "), error
        assert listed.split(", ") == fields, error


def test_an_unknown_field_is_named_without_echoing_a_long_name(client: TestClient) -> None:
    response = client.post("/search", json={"query": QUERY, "x" * 100_000: 1})
    assert response.status_code == 422
    (error,) = response.json()["detail"]
    assert error["msg"].startswith("x" * 40 + "... is not a field of SearchRequest; its fields: query, ")
    assert len(error["msg"]) < 300


def test_a_body_that_is_not_json_is_refused(client: TestClient) -> None:
    response = client.post("/search", content=b"{query", headers={"content-type": "application/json"})
    assert response.status_code == 422
    assert response.json()["detail"][0]["type"] == "json_invalid"
    # Not even text: 400, as the schema documents.
    response = client.post("/search", content=b"\xff\xfe{", headers={"content-type": "application/json"})
    assert response.status_code == 400
    assert "400" in client.get("/openapi.json").json()["paths"]["/search"]["post"]["responses"]


def test_a_failing_branch_degrades_the_answer() -> None:
    retriever = MultiQueryRetriever([KeywordRetriever(), FailingRetriever()], max_variants=2)
    with TestClient(create_app(retriever)) as test_client:
        response = test_client.post("/search", json={"query": "rank fusion of lists"})
    assert response.status_code == 200
    diagnostics = response.json()["diagnostics"]
    assert diagnostics["degraded"] is True
    failed = [b for b in diagnostics["branches"] if b["error"]]
    assert {b["retriever"] for b in failed} == {"failing"} and len(failed) == 2
    assert "ConnectionError: index server unreachable" in failed[0]["error"]
    hits = response.json()["hits"]
    assert hits and all(p["retriever"] == "keyword" for h in hits for p in h["provenance"])


def test_every_branch_failing_is_503_with_each_error() -> None:
    with TestClient(create_app(MultiQueryRetriever([FailingRetriever()], max_variants=2))) as test_client:
        # A question with stopwords, so the heuristic expander adds its content-word variant.
        response = test_client.post("/search", json={"query": "what is rank fusion"})
    assert response.status_code == 503
    data = response.json()
    assert data["detail"].startswith("all 2 branches failed")
    assert [b["error"] for b in data["branches"]] == ["ConnectionError: index server unreachable"] * 2


def test_a_search_in_flight_leaves_the_server_answering() -> None:
    """A branch held at a gate: /healthz still answers, then the search completes once opened."""
    gate = Gate(timeout=TIMEOUT)
    retriever = MultiQueryRetriever([KeywordRetriever(gate=gate)], expansion=False)
    with serving(create_app(retriever)) as url, httpx.Client(base_url=url, timeout=TIMEOUT) as http:
        answers: list[httpx.Response] = []
        searching = threading.Thread(
            target=lambda: answers.append(http.post("/search", json={"query": "rank fusion"}))
        )
        searching.start()
        try:
            assert gate.wait_until_arrived(1)
            assert http.get("/healthz").status_code == 200
            assert not answers  # the search is still held at the gate
        finally:
            gate.open()
            searching.join(TIMEOUT)
        assert answers[0].status_code == 200 and answers[0].json()["hits"]


def test_the_serve_command_answers_as_the_search_command(
    index_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["search", "--index", str(index_dir), QUERY, "--json", "--top-k", "3"]) == 0
    searched = without_timings(json.loads(capsys.readouterr().out))
    with serve_command("--index", str(index_dir)) as (url, process):
        response = httpx.post(f"{url}/search", json={"query": QUERY, "top_k": 3}, timeout=TIMEOUT)
        assert answered(response) == searched
    # Stopped by SIGTERM after a graceful shutdown, it ends by that signal as every command does.
    assert process.returncode == -signal.SIGTERM
    assert process.stderr is not None and process.stderr.read().strip() == "fanfuse serve: interrupted"


def test_serve_refuses_a_missing_index(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["serve", "--index", str(tmp_path / "missing")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("fanfuse serve: error: ") and len(err.strip().splitlines()) == 1


@pytest.mark.parametrize("loop", ["asyncio", "uvloop"])
def test_served_connections_send_without_delay(loop: str) -> None:
    """The served socket's connections have TCP_NODELAY, as asyncio and uvloop (the loop `fanfuse
    serve` runs on where installed) set it for TCP sockets: an answer written in two parts (head,
    body) is not held back waiting for the client's ACK."""
    import asyncio
    import socket

    new_loop = pytest.importorskip("uvloop").new_event_loop if loop == "uvloop" else asyncio.new_event_loop

    from fanfuse.cli.serve import listening_socket

    async def accepted_nodelay() -> int:
        connected: asyncio.Future[int] = asyncio.get_running_loop().create_future()

        class Probe(asyncio.Protocol):
            def connection_made(self, transport: asyncio.BaseTransport) -> None:
                accepted = transport.get_extra_info("socket")
                connected.set_result(accepted.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY))
                transport.close()

        listening = listening_socket("127.0.0.1", 0)
        server = await asyncio.get_running_loop().create_server(Probe, sock=listening)
        try:
            _, writer = await asyncio.open_connection(*listening.getsockname()[:2])
            writer.close()
            return await asyncio.wait_for(connected, TIMEOUT)
        finally:
            server.close()

    event_loop = new_loop()
    try:
        assert event_loop.run_until_complete(accepted_nodelay()) != 0
    finally:
        event_loop.close()


def children(pid: int) -> list[int]:
    found = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        found += [int(c) for c in (task / "children").read_text().split()]
    return found


def running(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="reads the process tree from /proc")
def test_workers_are_processes_on_one_port_that_answer_alike_and_stop_together(index_dir: Path) -> None:
    with TestClient(app_for_index(index_dir)) as client:
        expected = without_timings(client.post("/search", json={"query": QUERY}).json())
    with serve_command("--index", str(index_dir), "--workers", "2") as (url, process):
        answers = [httpx.post(f"{url}/search", json={"query": QUERY}, timeout=TIMEOUT) for _ in range(6)]
        spawned = children(process.pid)  # the workers, and multiprocessing's resource tracker
        workers = [p for p in spawned if b"spawn_main" in Path(f"/proc/{p}/cmdline").read_bytes()]
        assert len(workers) == 2
        assert all(without_timings(a.json()) == expected for a in answers)
    assert process.returncode in (0, -signal.SIGTERM)
    assert not any(running(p) for p in workers)  # stopped before the supervisor returned
    deadline = time.monotonic() + TIMEOUT  # the tracker ends once it reads its pipe's end
    while any(running(p) for p in spawned) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not any(running(p) for p in spawned)


def test_workers_is_checked_by_name(index_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["serve", "--index", str(index_dir), "--workers", "0"])
    assert "--workers" in capsys.readouterr().err


def test_a_served_answer_is_the_same_document_as_before(index_dir: Path) -> None:
    from fanfuse.multiquery.result_json import as_data
    from fanfuse.service.app import json_bytes

    with TestClient(app_for_index(index_dir)) as client:
        served = client.post("/search", json={"query": QUERY, "top_k": 3})
    assert served.status_code == 200
    with open_index(index_dir) as retriever:
        data = as_data(retriever.search(QUERY, top_k=3))
    assert without_timings(json.loads(json_bytes(data))) == without_timings(served.json())
