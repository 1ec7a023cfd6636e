"""The conversation from every entry point that searches a question: `open_index`'s retriever (sync and
async), `fanfuse search --history FILE / --turn`, the service's `history` field. Each gives the same
search for the same conversation; bad history is refused naming the turn (the file and line, the
`--turn`, the field's index); no history changes nothing. The framework adapters are in
test_history_adapters.py; a guard below keeps this list complete."""

from __future__ import annotations

import asyncio
import contextlib
import importlib.util
import inspect
import json
from pathlib import Path
from typing import Any

import pytest
from fanfuse.cli import build_parser, main
from fanfuse.cli.render import as_json
from fanfuse.index_retriever import open_index
from fanfuse.limits import CONVERSATION
from fanfuse.retrievers.tantivy_index import TantivyRetriever
from test_cli_search_options import without_timings

DOCUMENTS = [
    {"id": "owl", "text": "Barn owls hunt mice at night over farmland."},
    {"id": "owl-diet", "text": "An owl swallows its prey whole and coughs up pellets."},
    {"id": "hawk", "text": "Hawks hunt by day and eat mice, snakes and rabbits."},
    {"id": "hawk-diet", "text": "A red-tailed hawk tears its prey apart before eating."},
    {"id": "bat", "text": "Bats eat insects they find by echolocation at night."},
]
QUESTION = "what does it eat?"
HISTORY: list[Any] = ["tell me about barn owls", {"role": "assistant", "content": "They hunt at night."}]


@pytest.fixture(scope="module")
def index_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("history") / "idx"
    TantivyRetriever.build(DOCUMENTS, directory)
    return directory


def library(index_dir: Path, history: Any = None, question: str = QUESTION) -> Any:
    with open_index(index_dir) as retriever:
        result = retriever.search(question, history=history)
        asearched = asyncio.run(retriever.asearch(question, history=history))
    data = without_timings(json.loads(as_json(result)))
    assert without_timings(json.loads(as_json(asearched))) == data
    return data


def cli(index_dir: Path, capsys: pytest.CaptureFixture[str], *flags: str, question: str = QUESTION) -> Any:
    assert main(["search", "--index", str(index_dir), question, "--json", *flags]) == 0
    return without_timings(json.loads(capsys.readouterr().out))


def cli_error(index_dir: Path, capsys: pytest.CaptureFixture[str], *flags: str) -> str:
    assert main(["search", "--index", str(index_dir), QUESTION, *flags]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1, captured.err
    return lines[0]


def test_the_history_changes_the_search_and_no_history_changes_nothing(index_dir: Path) -> None:
    alone = library(index_dir)
    assert library(index_dir, []) == alone
    with_history = library(index_dir, HISTORY)
    assert with_history != alone
    sources = [v["source"] for v in with_history["diagnostics"]["variants"]]
    assert "history" in sources
    assert "history" not in [v["source"] for v in alone["diagnostics"]["variants"]]


def test_the_command_reads_a_jsonl_history_and_turns(
    index_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "conversation.jsonl"
    path.write_text("".join(json.dumps(turn) + "\n" for turn in HISTORY) + "\n", encoding="utf-8")
    assert cli(index_dir, capsys, "--history", str(path)) == library(index_dir, HISTORY)
    # --turn adds user turns after the file's.
    flags = ["--history", str(path), "--turn", "and barn owl pellets"]
    assert cli(index_dir, capsys, *flags) == library(index_dir, [*HISTORY, "and barn owl pellets"])
    assert cli(index_dir, capsys, "--turn", HISTORY[0]) == library(index_dir, HISTORY[:1])
    assert cli(index_dir, capsys) == library(index_dir)


def test_the_command_reads_the_history_from_standard_input(
    index_dir: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import io

    monkeypatch.setattr("sys.stdin", io.StringIO(json.dumps(HISTORY[0]) + "\n"))
    assert cli(index_dir, capsys, "--history", "-") == library(index_dir, HISTORY[:1])


@pytest.mark.parametrize(
    ("lines", "message"),
    [
        (['"fine"', "{not json"], "--history {path}:2: not valid JSON"),
        (['{"role": "bot", "content": "x"}'], '--history {path}:1["role"] must be one of user, assistant'),
        (["", "7"], "--history {path}:2 must be a str (a user turn) or a"),
        (['{"role": "user"}'], '--history {path}:1 must be a message with exactly the keys "role"'),
        (['{"role": "user", "content": 3}'], '--history {path}:1["content"] must be a str (got int)'),
        (
            [json.dumps("x" * (CONVERSATION.turn_chars + 1))],
            "--history {path}:1 has 10001 characters; at most",
        ),
        (['"ok"'] * (CONVERSATION.turns + 1), "--history {path} has more than 1000 turns"),
        ([json.dumps("\ud800")], "--history {path}:1 is not valid Unicode"),
    ],
)
def test_a_bad_history_file_is_refused_naming_the_line(
    index_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], lines: list[str], message: str
) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    assert message.format(path=path) in cli_error(index_dir, capsys, "--history", str(path))


def test_unreadable_histories_are_refused_naming_the_file(
    index_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "missing.jsonl"
    assert f"--history {str(missing)!r}: no such file or directory; give a JSONL file of turns" in cli_error(
        index_dir, capsys, "--history", str(missing)
    )
    latin = tmp_path / "latin.jsonl"
    latin.write_bytes(b'"ok"\n"caf\xe9"\n')
    assert f"--history {latin}:2: not UTF-8" in cli_error(index_dir, capsys, "--history", str(latin))
    huge = tmp_path / "huge.jsonl"
    huge.write_text(json.dumps("x" * 20 * CONVERSATION.turn_chars), encoding="utf-8")
    assert f"--history {huge}:1: the line is longer than" in cli_error(
        index_dir, capsys, "--history", str(huge)
    )
    too_long = "x" * (CONVERSATION.turn_chars + 1)
    assert "--turn 2 has 10001 characters" in cli_error(index_dir, capsys, "--turn", "ok", "--turn", too_long)


def test_the_service_takes_the_history_field(index_dir: Path) -> None:
    pytest.importorskip("fastapi")
    from fanfuse.service import app_for_index
    from fastapi.testclient import TestClient

    with TestClient(app_for_index(index_dir)) as client:
        answered = client.post("/search", json={"query": QUESTION, "history": HISTORY})
        alone = client.post("/search", json={"query": QUESTION})
        bad = [
            client.post("/search", json={"query": QUESTION, "history": body})
            for body in (
                ["ok", {"role": "bot", "content": "x"}],
                ["ok", 7],
                ["x" * (CONVERSATION.turn_chars + 1)],
                ["ok"] * (CONVERSATION.turns + 1),
                "not a list",
                [{"role": "user", "content": "x", "name": "bob"}],
            )
        ]
    for response, expected in ((answered, library(index_dir, HISTORY)), (alone, library(index_dir))):
        assert response.status_code == 200, response.text
        assert without_timings(response.json()) == expected
    for response in bad:
        assert response.status_code == 422, response.text
        locations = [error["loc"] for error in response.json()["detail"]]
        assert all(location[:2] == ["body", "history"] for location in locations), locations
    assert [loc[2] for loc in (r.json()["detail"][0]["loc"] for r in bad[:2])] == [1, 1]


def history_weights(data: Any) -> list[float]:
    return [v["weight"] for v in data["diagnostics"]["variants"] if v["source"] == "history"]


def test_every_entry_point_reads_each_question_by_its_words(
    index_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A question that depends on its history ("it") gets the history readings at full weight (half
    the question's 3 each), one on its own topic at the independent share (half that), whichever way
    it comes in."""
    own_topic = "which hawks hunt rabbits by day"
    searches = {
        "library": lambda q: library(index_dir, HISTORY, q),
        "command": lambda q: cli(index_dir, capsys, "--turn", HISTORY[0], question=q),
    }
    with contextlib.ExitStack() as stack:
        if importlib.util.find_spec("fastapi") is not None:
            from fanfuse.service import app_for_index
            from fastapi.testclient import TestClient

            client = stack.enter_context(TestClient(app_for_index(index_dir)))
            searches["service"] = lambda q: without_timings(
                client.post("/search", json={"query": q, "history": HISTORY}).json()
            )
        for name, search in searches.items():
            dependent, independent = history_weights(search(QUESTION)), history_weights(search(own_topic))
            assert dependent and set(dependent) == {1.5}, name
            assert independent and set(independent) == {0.75}, name


def test_every_framework_adapter_reads_each_question_by_its_words(
    index_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The adapters hand the conversation to the default's `HistoryExpander`, which reads each question
    (its variants' weights recorded as it writes them)."""
    from fanfuse.multiquery import HistoryExpander

    written: list[set[float]] = []
    expand = HistoryExpander.expand

    def recording(self: HistoryExpander, query: str, **options: Any) -> Any:
        expansion = expand(self, query, **options)
        written.append({v.weight for v in expansion.variants if v.source == "history"})
        return expansion

    monkeypatch.setattr(HistoryExpander, "expand", recording)
    own_topic = "which hawks hunt rabbits by day"
    searches: dict[str, Any] = {}
    multi = open_index(index_dir)
    if importlib.util.find_spec("langchain_core") is not None:
        from fanfuse.integrations.langchain import FanfuseRetriever as LangChain

        searches["langchain"] = lambda q: LangChain(retriever=multi).invoke(q, history=HISTORY)
    if importlib.util.find_spec("llama_index") is not None:
        from fanfuse.integrations.llamaindex import FanfuseRetriever as LlamaIndex

        searches["llamaindex"] = lambda q: LlamaIndex(multi, history=HISTORY).retrieve(q)
    if importlib.util.find_spec("haystack") is not None:
        from fanfuse.integrations.haystack import FanfuseRetriever as Haystack

        searches["haystack"] = lambda q: Haystack(multi).run(q, history=HISTORY)
    if not searches:
        multi.close()
        pytest.skip("no framework installed")
    with multi:
        for name, search in searches.items():
            written.clear()
            search(QUESTION)
            search(own_topic)
            assert written == [{0.5}, {0.25}], name


def test_every_entry_point_that_searches_a_question_takes_the_history() -> None:
    """A guard: a new command with a question, or a new adapter, must take the conversation too."""
    parser = build_parser()
    commands = next(a for a in parser._actions if a.dest == "command").choices
    with_question = {name for name, sub in commands.items() if any(a.dest == "query" for a in sub._actions)}
    assert with_question == {"search"}
    options = {a.dest for a in commands["search"]._actions}
    assert {"history", "turn"} <= options
    pytest.importorskip("fastapi")
    from fanfuse.service.schema import SearchRequest

    assert "history" in SearchRequest.model_json_schema()["properties"]
    import importlib

    for module in ("langchain", "llamaindex", "haystack"):
        try:
            adapter = importlib.import_module(f"fanfuse.retrievers.{module}").FanfuseRetriever
        except ImportError:
            continue
        methods = [getattr(adapter, name, None) for name in ("_get_relevant_documents", "run", "__init__")]
        assert any("history" in inspect.signature(m).parameters for m in methods if callable(m)), module
