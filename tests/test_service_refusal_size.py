"""A refusal's size is bounded whatever a body under the size bound holds: a body of ~95,000 unknown
fields, a conversation of messages each holding many, a conversation of wrong-typed turns. The first
unknown field is named, with the fields accepted there, and the count of the rest is said; no entry
repeats the list of fields. Validating such a body builds a bounded number of errors (building and
naming one for each unknown field would take seconds and hundreds of MB)."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from typing import Any

import pytest

pytest.importorskip("fastapi")

from fanfuse.limits import CONVERSATION, REQUEST
from fanfuse.retrievers.tantivy_index import TantivyRetriever
from fanfuse.service import app_for_index
from fanfuse.service.schema import SearchRequest
from fastapi.testclient import TestClient
from pydantic import ValidationError
from test_cli_search_options import DOCUMENTS, QUERY

# The most bytes a refusal may take, whatever the body: a few dozen entries of a few hundred
# characters, against the 24 MB that 95,000 unknown fields were answered with.
MOST_BYTES = 16 * 1024


def largest(make: Callable[[int], str]) -> tuple[str, int]:
    """The longest body `make(n)` within the body bound, and its n."""
    low, high = 1, 2
    while len(make(high).encode()) <= REQUEST.body_bytes:
        low, high = high, high * 2
    while high - low > 1:
        middle = (low + high) // 2
        low, high = (middle, high) if len(make(middle).encode()) <= REQUEST.body_bytes else (low, middle)
    return make(low), low


def unknown_fields(count: int) -> str:
    return '{"query": "log", ' + ", ".join(f'"k{i}": 0' for i in range(count)) + "}"


def messages_with_unknown_fields(count: int) -> str:
    message = '{"role": "user", "content": "a", ' + ", ".join(f'"x{j}": 0' for j in range(count)) + "}"
    return '{"query": "log", "history": [' + ", ".join([message] * CONVERSATION.turns) + "]}"


def wrong_typed_turns() -> str:
    return '{"query": "log", "history": [' + ", ".join(["1"] * CONVERSATION.turns) + "]}"


def bad_messages(length: int) -> str:
    message = '{"role": "' + "r" * length + '", "content": 1, "' + "y" * length + '": 0}'
    return '{"query": "log", "history": [' + ", ".join([message] * CONVERSATION.turns) + "]}"


BODIES: dict[str, Callable[[], str]] = {
    "unknown fields": lambda: largest(unknown_fields)[0],
    "messages with unknown fields": lambda: largest(messages_with_unknown_fields)[0],
    "wrong-typed turns": wrong_typed_turns,
    "messages wrong in every way": lambda: largest(bad_messages)[0],
}


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TestClient]:
    directory = tmp_path_factory.mktemp("refusal-size") / "idx"
    TantivyRetriever.build(DOCUMENTS, directory)
    with TestClient(app_for_index(directory)) as test_client:
        yield test_client


def refused(client: TestClient, body: str) -> tuple[bytes, list[dict[str, Any]]]:
    response = client.post("/search", content=body, headers={"content-type": "application/json"})
    assert response.status_code == 422, response.text[:300]
    assert len(response.content) <= MOST_BYTES, (len(response.content), response.text[:600])
    detail: list[dict[str, Any]] = response.json()["detail"]
    return response.content, detail


@pytest.mark.parametrize("name", sorted(BODIES))
def test_a_refusal_is_small_whatever_the_body_holds(client: TestClient, name: str) -> None:
    _, detail = refused(client, BODIES[name]())
    assert detail and all(error["loc"][0] == "body" and error["msg"] for error in detail), detail
    # The list of a model's fields is given once, not with every unknown field.
    assert sum("its fields: " in error["msg"] for error in detail) <= 2, detail


def test_many_unknown_fields_name_the_first_and_count_the_rest(client: TestClient) -> None:
    body, count = largest(unknown_fields)
    assert count > 80_000
    _, detail = refused(client, body)
    first = detail[0]
    assert first["type"] == "extra_forbidden" and first["loc"] == ["body", "k0"], first
    assert first["msg"].startswith("k0 is not a field of SearchRequest; its fields: query, history, "), first
    named = [error["loc"][-1] for error in detail if len(error["loc"]) == 2]
    assert named == [f"k{i}" for i in range(len(named))]
    rest = count - len(named)
    (summary,) = (error for error in detail if re.search(rf"\b{rest}\b", error["msg"]))
    assert summary["type"] == "extra_forbidden" and summary["loc"] == ["body"], summary
    assert "SearchRequest" in summary["msg"], summary


def test_a_few_unknown_fields_are_each_named(client: TestClient) -> None:
    body = {"query": QUERY, "topk": 1, "methd": "rrf"}
    response = client.post("/search", json=body)
    assert response.status_code == 422
    detail = response.json()["detail"]
    assert [error["loc"] for error in detail] == [["body", "topk"], ["body", "methd"]]
    assert detail[0]["msg"].startswith(
        "topk is not a field of SearchRequest (did you mean top_k?); its fields"
    )
    assert detail[1]["msg"] == "methd is not a field of SearchRequest (did you mean method?)"


def test_unlisted_refusals_are_counted(client: TestClient) -> None:
    _, detail = refused(client, wrong_typed_turns())
    assert detail[0]["loc"][:3] == ["body", "history", 0], detail[0]
    last = detail[-1]
    assert last["loc"] == ["body", "history"], last
    listed = len(detail) - 1
    # Each wrong-typed turn is refused twice: as a string, and as a message.
    assert re.search(rf"\b{2 * CONVERSATION.turns - listed}\b more\b", last["msg"]), last


@pytest.mark.parametrize(
    "body",
    [
        json.loads(unknown_fields(95_000)),
        json.loads(messages_with_unknown_fields(120)),
    ],
    ids=["unknown fields", "messages with unknown fields"],
)
def test_validating_builds_a_bounded_number_of_errors(body: dict[str, Any]) -> None:
    with pytest.raises(ValidationError) as refusal:
        SearchRequest.model_validate(body)
    per_object = 10  # the unknown fields named of one object, and the count of the rest
    assert refusal.value.error_count() <= CONVERSATION.turns * (per_object + 2)
    if "history" not in body:
        assert refusal.value.error_count() <= per_object
