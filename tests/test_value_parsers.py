"""One parser per kind of value, whichever way it enters: a metadata filter (`fanfuse search --filter
KEY=VALUE`, a Python `filter=` and the service's `filter` field) and a conversation (`--history`
JSONL, a Python `history=` and the service's `history` field) are accepted or refused alike by the
three, and an accepted one means the same thing (the same conditions, the same turns). Hypothesis
generates the values, nested and empty lists, ints past 64 bits, non-finite floats, lone surrogates,
roles and keys that do not exist, and a byte order mark opening the file. A real search then finds
the same documents by a filter value between 2**63 and 2**64 - 1 through each of the three."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import pytest
from fanfuse import FusionError, InputError, open_index
from fanfuse.cli import main
from fanfuse.cli.conversation import history_of
from fanfuse.errors import InvalidFilter
from fanfuse.multiquery.conversation import check_history
from fanfuse.retrievers.filters import conditions, filter_from_flags
from fanfuse.retrievers.tantivy_index import TantivyRetriever
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from rrf_strategies import examples

pytest.importorskip("pydantic")
from fanfuse.limits import CONVERSATION
from fanfuse.service.schema import SearchRequest
from pydantic import ValidationError

REFUSED = "refused"

SCALARS = (
    st.text(max_size=12)
    | st.booleans()
    | st.integers(-(2**70), 2**70)
    | st.sampled_from([2**63 - 1, 2**63, 2**64 - 1, 2**64, -(2**63) - 1])
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.none()
)
JSON_VALUES = st.recursive(
    SCALARS,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=4), inner, max_size=2),
)
# Keys a `--filter KEY=VALUE` can spell: any text without "=" (blank and surrogate ones included).
KEYS = st.text(max_size=8).filter(lambda key: "=" not in key)
FILTERS = st.dictionaries(KEYS, JSON_VALUES, min_size=1, max_size=4)


def meaning(filter: Any) -> Any:
    """What a filter asks for, or REFUSED: per key, the set of terms it matches."""
    try:
        return sorted((c.key, sorted(c.terms)) for c in conditions(filter))
    except (InvalidFilter, TypeError):
        return REFUSED


def by_python(filter: dict[str, Any]) -> Any:
    return meaning(filter)


def by_flags(filter: dict[str, Any]) -> Any:
    try:
        parsed = filter_from_flags([f"{key}={json.dumps(value)}" for key, value in filter.items()])
    except InvalidFilter:
        return REFUSED
    return meaning(parsed)


def by_service(filter: dict[str, Any]) -> Any:
    try:
        request = SearchRequest.model_validate_json(json.dumps({"query": "q", "filter": filter}))
    except ValidationError:
        return REFUSED
    return meaning(request.filter)


# 5,000 generated filters under CI=true, each through every entry point.
@settings(examples(0.2), deadline=None)
@given(filter=FILTERS)
def test_a_filter_means_the_same_through_every_entry_point(filter: dict[str, Any]) -> None:
    expected = by_python(filter)
    assert by_flags(filter) == expected, filter
    assert by_service(filter) == expected, filter


@pytest.mark.parametrize(
    ("filter", "accepted"),
    [
        ({"n": 2**63 + 1}, True),  # the service made it a float that matched nothing
        ({"n": 2**64 - 1}, True),
        ({"k": [[1]]}, False),  # the command flattened it to [1]; the others refuse it
        ({"k": [1, [2]]}, False),
        ({"k": []}, False),
        ({"k": float("inf")}, False),
    ],
)
def test_the_examples(filter: dict[str, Any], accepted: bool) -> None:
    results = {by_python(filter) != REFUSED, by_flags(filter) != REFUSED, by_service(filter) != REFUSED}
    assert results == {accepted}, filter
    if accepted:
        return
    # Refused with the same words: the command's names its flag, the service's is its one error.
    with pytest.raises(InvalidFilter) as python:
        conditions(filter)
    with pytest.raises(InvalidFilter) as flags:
        filter_from_flags([f"{key}={json.dumps(value)}" for key, value in filter.items()])
    assert str(flags.value) == f"--filter: {python.value}"
    with pytest.raises(ValidationError) as service:
        SearchRequest.model_validate_json(json.dumps({"query": "q", "filter": filter}))
    assert [e["msg"] for e in service.value.errors()] == [f"Value error, {python.value}"]


ROLES = st.sampled_from(["user", "assistant", "system", "tool", "bot", "", "User"])
TURNS = st.one_of(
    st.text(max_size=30),
    st.fixed_dictionaries({"role": ROLES, "content": st.text(max_size=30)}),
    st.fixed_dictionaries({"role": ROLES, "content": JSON_VALUES}),
    st.fixed_dictionaries({"role": ROLES}),
    st.fixed_dictionaries({"role": ROLES, "content": st.text(max_size=5), "name": st.text(max_size=3)}),
    JSON_VALUES,
)
# Long enough to pass the turns kept and, now and then, the turns accepted.
HISTORIES = st.lists(TURNS, max_size=8) | st.lists(
    st.just("a turn"), min_size=CONVERSATION.turns - 1, max_size=CONVERSATION.turns + 1
)


def turns_of(history: Any) -> Any:
    try:
        return check_history(history)
    except (FusionError, InputError, TypeError):
        return REFUSED


def history_by_file(history: list[Any], directory: Path, bom: bool) -> Any:
    path = directory / "history.jsonl"
    text = "".join(json.dumps(turn) + "\n" for turn in history)
    path.write_bytes((b"\xef\xbb\xbf" if bom else b"") + text.encode("utf-8", "surrogatepass"))
    try:
        return tuple(history_of(argparse.Namespace(history=str(path), turn=[])))
    except (FusionError, InputError):
        return REFUSED


def history_by_service(history: list[Any]) -> Any:
    try:
        request = SearchRequest.model_validate_json(json.dumps({"query": "q", "history": history}))
    except ValidationError:
        return REFUSED
    return turns_of(request.model_dump()["history"])


# 5,000 generated conversations under CI=true, each through every entry point.
@settings(examples(0.2), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(history=HISTORIES, bom=st.booleans())
def test_a_conversation_means_the_same_through_every_entry_point(
    history: list[Any], bom: bool, tmp_path: Path
) -> None:
    expected = turns_of(history)
    assert history_by_file(history, tmp_path, bom) == expected, history
    assert history_by_service(history) == expected, history


# --- a real search through each entry point -----------------------------------------------------

BIG = 2**63 + 1  # between 2**63 and 2**64 - 1
DOCUMENTS = [
    {"id": "big", "text": "common words", "n": BIG},
    {"id": "max", "text": "common words", "n": 2**64 - 1},
    {"id": "one", "text": "common words", "n": 1},
]


@pytest.fixture(scope="module")
def index_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("values") / "idx"
    TantivyRetriever.build(DOCUMENTS, directory)
    return directory


@pytest.mark.parametrize("value", [BIG, 2**64 - 1, 1])
def test_a_filter_value_past_63_bits_finds_its_document_everywhere(
    index_dir: Path, value: int, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("uvicorn")
    import httpx
    from fanfuse.service import app_for_index
    from service_server import serving

    wanted = [d["id"] for d in DOCUMENTS if d["n"] == value]
    with open_index(index_dir, dense=False, expansion=False) as retriever:
        assert [h.id for h in retriever.search("common", filter={"n": value}).hits] == wanted
    argv = ["search", "common", "--index", str(index_dir), "--no-dense", "--expander", "none", "--json"]
    assert main([*argv, "--filter", f"n={value}"]) == 0
    assert [h["id"] for h in json.loads(capsys.readouterr().out)["hits"]] == wanted
    with (
        serving(app_for_index(index_dir, dense=False)) as url,
        httpx.Client(base_url=url, timeout=60) as http,
    ):
        response = http.post("/search", json={"query": "common", "expander": "none", "filter": {"n": value}})
    assert response.status_code == 200, response.text
    assert [h["id"] for h in response.json()["hits"]] == wanted
