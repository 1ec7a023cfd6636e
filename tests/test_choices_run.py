"""Every choice a command or the service lists runs: each `choices=` of every argparse action of
every command (read from the parsers), and each value of every enum of the service's request schema
(read from its OpenAPI schema), given to the service and to the `fanfuse search` flag of the same
word. A listed choice that is refused whatever else is given (a fusion method refused because of
weights the user never set) fails here; a new choice or enum value gets a case of its own.

A few choices act only beside another option (a normalisation on a score method, a strategy on the
LLM expander): `WITH` gives that option, and nothing else is adjusted per choice."""

from __future__ import annotations

import argparse
import dataclasses
import importlib.util
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from cli_process import with_flag
from command_inputs import write_inputs
from fanfuse import METHODS, FusionError, open_index
from fanfuse.cli import build_parser, command_parsers, main
from fanfuse.multiquery.fusion import takes_weights
from fanfuse.retrievers.tantivy_index import TantivyRetriever
from llm_server import ScriptedChatServer, llm_server
from test_cli_search_options import DOCUMENTS, QUERY

__all__ = ["llm_server"]  # the fixture, imported for pytest

# A valid invocation of each command that has choices, in the test's input directory.
BASE = {
    "search": ["search", QUERY, "--index", "idx", "--json"],
    "fuse": ["fuse", "a.trec", "b.trec", "-o", "out.trec"],
    "eval": ["eval", "a.trec", "b.trec", "--qrels", "qrels.txt"],
    "tune": ["tune", "a.trec", "b.trec", "--qrels", "qrels.txt", "--folds", "3"],
    "serve": ["serve", "--index", "idx"],
}
LLM = "{llm}"  # the LLM flags: --expander llm, the scripted server's URL and a model name
# What a choice needs beside it, by option (flag or service field) and, if only some values, value.
WITH: dict[tuple[str, str | None], list[str]] = {
    ("--strategy", None): [LLM],
    ("--expander", "llm"): [LLM],
    ("--norm", None): ["--method", "combsum"],
    # The rerank reads the vectors a hybrid index stores.
    ("--rerank", "mmr"): ["--index", "dense-idx"],
}
LLM_ANSWER = json.dumps({"queries": ["owl hunting", "nocturnal predators"]})


def parser_choices() -> list[tuple[str, str, str]]:
    """(command, flag, choice) for every choice of every option of every command."""
    return [
        (command, action.option_strings[-1], str(choice))
        for command, parser in command_parsers(build_parser()).items()
        for action in parser._actions
        if action.choices is not None and not isinstance(action, argparse._SubParsersAction)
        for choice in action.choices
    ]


def schema_enums() -> list[tuple[str, str]]:
    """(field, value) for every value of every enum of the service's request, nested ones named
    `history.role` (a message's field)."""
    from fanfuse.service.schema import SearchRequest

    schema = SearchRequest.model_json_schema()
    found: list[tuple[str, str]] = []

    def walk(properties: dict[str, Any], prefix: str) -> None:
        for name, spec in properties.items():
            for value in spec.get("enum", []):
                if value is not None:
                    found.append((prefix + name, value))

    walk(schema["properties"], "")
    for definition, spec in schema.get("$defs", {}).items():
        if definition == "Message":
            walk(spec["properties"], "history.")
    assert found, "the schema lists no enum: the test reads it wrong"
    return found


def needs(option: str, value: str) -> list[str]:
    return WITH.get((option, value), WITH.get((option, None), []))


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = write_inputs(tmp_path_factory.mktemp("choices"))
    TantivyRetriever.build(DOCUMENTS, directory / "idx")
    # The same documents with their vectors stored (neural with the embed extra, else TF-IDF + SVD).
    open_index(TantivyRetriever.build(DOCUMENTS, directory / "dense-idx"), dense=True).close()
    return directory


def cli_argv(files: Path, base: list[str], extra: list[str], server: ScriptedChatServer) -> list[str]:
    def words(given: list[str]) -> list[str]:
        out = []
        for word in given:
            if word == LLM:
                out += ["--expander", "llm", "--llm-base-url", server.base_url, "--llm-model", "scripted"]
            else:
                out.append(str(files / word) if (files / word).exists() or word.endswith(".trec") else word)
        return out

    argv = words(base)
    added = words(extra)
    for flag, value in zip(added[::2], added[1::2], strict=True):  # each flag given once
        argv = with_flag(argv, flag, [value])
    return argv


CASES = parser_choices()


def test_the_commands_with_choices_have_an_invocation() -> None:
    assert {command for command, _, _ in CASES} <= BASE.keys()


@pytest.mark.parametrize(("command", "flag", "choice"), CASES, ids=[" ".join(c) for c in CASES])
def test_every_choice_of_every_command_runs(
    files: Path,
    llm_server: ScriptedChatServer,
    capsys: pytest.CaptureFixture[str],
    command: str,
    flag: str,
    choice: str,
) -> None:
    for _ in range(8):  # one answer per model call (several for the server's searches)
        llm_server.answer(LLM_ANSWER)
    argv = cli_argv(files, BASE[command], [*needs(flag, choice), flag, choice], llm_server)
    if command == "serve":
        served(argv)
        return
    assert main(argv) == 0, capsys.readouterr().err
    if command == "search":
        expansion = json.loads(capsys.readouterr().out)["diagnostics"]["expansion"]
        assert expansion["fallback_reason"] is None, expansion


def served(argv: list[str]) -> None:
    """Starts `fanfuse serve ARGV` and searches it once: the answer is whole (not degraded)."""
    pytest.importorskip("uvicorn")
    import httpx
    from service_server import serve_command

    with serve_command(*argv[1:]) as (url, _), httpx.Client(base_url=url, timeout=60) as http:
        response = http.post("/search", json={"query": QUERY})
    assert response.status_code == 200, response.text
    diagnostics = response.json()["diagnostics"]
    assert diagnostics["degraded"] is False and diagnostics["expansion"]["fallback_reason"] is None


ENUMS = schema_enums() if importlib.util.find_spec("pydantic") is not None else []


@dataclasses.dataclass
class Services:
    """The service over the index with the default expander and with the LLM one, which asks `chat`."""

    heuristic: str
    llm: str
    dense: str
    chat: ScriptedChatServer


@pytest.fixture(scope="module")
def services(files: Path) -> Iterator[Services]:
    pytest.importorskip("uvicorn")
    from fanfuse.multiquery import LLMExpander
    from fanfuse.service import app_for_index
    from service_server import serving

    chat = ScriptedChatServer()
    chat.start()
    expander = LLMExpander(base_url=chat.base_url, model="scripted")
    try:
        with (
            serving(app_for_index(files / "idx")) as plain,
            serving(app_for_index(files / "idx", expander=expander)) as llm,
            serving(app_for_index(files / "dense-idx")) as dense,
        ):
            yield Services(plain, llm, dense, chat)
    finally:
        chat.stop()


def request_for(field: str, value: str) -> dict[str, Any]:
    """A search request giving `value` to `field`, with what it needs beside it."""
    body: dict[str, Any] = {"query": QUERY}
    extra = needs("--" + field.replace("_", "-"), value)
    if LLM in extra or field in ("expander", "strategy"):
        body["expander"] = "llm" if value != "none" and value != "heuristic" else value
    flags = [w for w in extra if w != LLM]
    for flag, given in zip(flags[::2], flags[1::2], strict=True):
        body[flag[2:].replace("-", "_")] = given
    if field == "history.role":
        body["history"] = [{"role": value, "content": "Tell me about owls."}]
    else:
        body[field] = value
    return body


@pytest.mark.parametrize(("field", "value"), ENUMS, ids=[f"{f}={v}" for f, v in ENUMS])
def test_every_enum_value_of_the_service_runs_there_and_as_the_search_flag(
    files: Path,
    services: Services,
    capsys: pytest.CaptureFixture[str],
    field: str,
    value: str,
) -> None:
    import httpx

    chat = services.chat
    body = request_for(field, value)
    uses_llm = body.get("expander") == "llm"
    for _ in range(8):
        chat.answer(LLM_ANSWER)
    # The service searches the index it was started with: the one the choice needs, by server.
    index = body.pop("index", "idx")
    url = services.dense if index == "dense-idx" else services.llm if uses_llm else services.heuristic
    with httpx.Client(base_url=url, timeout=60) as http:
        response = http.post("/search", json=body)
    assert response.status_code == 200, response.text
    diagnostics = response.json()["diagnostics"]
    assert diagnostics["degraded"] is False, diagnostics

    # The same request as `fanfuse search` flags (the field's word), the history as a file.
    argv = ["search", body.pop("query"), "--index", str(files / index), "--json"]
    if "history" in body:
        history = files / f"history-{value}.jsonl"
        history.write_text("".join(json.dumps(turn) + "\n" for turn in body.pop("history")))
        argv += ["--history", str(history)]
    if body.get("expander") == "llm":
        argv += ["--llm-base-url", chat.base_url, "--llm-model", "scripted"]
    for name, given in body.items():
        argv += ["--" + name.replace("_", "-"), str(given)]
    for _ in range(8):
        chat.answer(LLM_ANSWER)
    assert main(argv) == 0, capsys.readouterr().err
    expansion = json.loads(capsys.readouterr().out)["diagnostics"]["expansion"]
    assert expansion["fallback_reason"] is None, expansion


UNWEIGHTED = [m for m in METHODS if not takes_weights(m)]


def test_the_methods_without_a_weighted_form_are_found() -> None:
    assert {"isr", "combmax"} <= set(UNWEIGHTED) and "rrf" not in UNWEIGHTED


@pytest.mark.parametrize("method", UNWEIGHTED)
def test_a_method_without_weights_fuses_with_unit_weights_and_refuses_given_ones(
    files: Path, method: str
) -> None:
    """open_index's default weights give way to the method (at construction and per call); weights
    the caller gives are refused, naming the weights."""
    with open_index(files / "idx", method=method) as retriever:
        assert retriever.variant_weights == [1.0] and retriever.search(QUERY).hits
    with open_index(files / "idx") as retriever:
        assert retriever.variant_weights != [1.0]
        result = retriever.search(QUERY, method=method)
        assert result.hits and {v.weight for v in result.diagnostics.variants} == {1.0}
        with pytest.raises(FusionError, match="variant_weights x retriever_weights"):
            retriever.search(QUERY, method=method, variant_weights=[2.0, 1.0])
    with pytest.raises(FusionError, match="variant_weights x retriever_weights"):
        open_index(files / "idx", method=method, variant_weights=[2.0, 1.0])


def test_docs_name_the_methods_without_a_weighted_form() -> None:
    page = (Path(__file__).resolve().parents[1] / "docs" / "multiquery.md").read_text(encoding="utf-8")
    listed = page.split("have no per-list weights:", 1)[1].split("(", 1)[0]
    assert re.findall(r"`(\w+)`", listed) == UNWEIGHTED
