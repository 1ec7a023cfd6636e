"""`fanfuse serve --expander E`, for each of the command's choices: `GET /healthz` names the expander a
search gets that names none (the one the search page's header shows), and `GET /options` lists the
same as the default of the request's `expander`, and offers exactly the expanders a search takes."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("fastapi")
pytest.importorskip("uvicorn")

import httpx
from fanfuse.cli import build_parser, command_parsers
from fanfuse.retrievers.tantivy_index import TantivyRetriever
from service_server import serve_command
from test_cli_search_options import DOCUMENTS


def expander_choices() -> list[str]:
    serve = command_parsers(build_parser("serve"))["serve"]
    (action,) = (action for action in serve._actions if "--expander" in action.option_strings)
    assert action.choices is not None
    return list(action.choices)


# What a choice needs besides: the LLM expander's model and where it is served (nothing answers
# there; no search is made).
MORE_FLAGS = {"llm": ["--llm-model", "m", "--llm-base-url", "http://127.0.0.1:9"]}


@pytest.fixture(scope="module")
def index_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("expander") / "idx"
    TantivyRetriever.build(DOCUMENTS, directory)
    return directory


@pytest.mark.parametrize("expander", expander_choices())
def test_healthz_and_options_name_the_servers_expander(index_dir: Path, expander: str) -> None:
    flags = ["--expander", expander, *MORE_FLAGS.get(expander, [])]
    with serve_command("--index", str(index_dir), "--no-dense", *flags) as (url, _):
        health = httpx.get(f"{url}/healthz", timeout=30).json()
        fields = httpx.get(f"{url}/options", timeout=30).json()["fields"]
    (default,) = (field["default"] for field in fields if field["name"] == "expander")
    assert health["expander"] == default == expander, (health, default)


@pytest.mark.parametrize("expander", expander_choices())
def test_options_offer_exactly_the_expanders_a_search_takes(index_dir: Path, expander: str) -> None:
    """The page builds its form from `/options`: each value offered is searched, and each other
    value of the schema is refused naming the field."""
    flags = ["--expander", expander, *MORE_FLAGS.get(expander, [])]
    with serve_command("--index", str(index_dir), "--no-dense", *flags) as (url, _):
        schema = httpx.get(f"{url}/openapi.json", timeout=30).json()
        (field,) = (
            f for f in httpx.get(f"{url}/options", timeout=30).json()["fields"] if f["name"] == "expander"
        )
        declared = schema["components"]["schemas"]["SearchRequest"]["properties"]["expander"]
        every = [value for kind in declared["anyOf"] for value in kind.get("enum", [])]
        for value in every:
            answer = httpx.post(f"{url}/search", json={"query": "owls", "expander": value}, timeout=30)
            if value in field["enum"]:
                assert answer.status_code == 200, (value, answer.text)
            else:
                assert answer.status_code == 422, (value, answer.text)
                assert answer.json()["detail"][0]["loc"] == ["body", "expander"]
    assert expander in field["enum"] and "none" in field["enum"]
