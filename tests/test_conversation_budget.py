"""The conversation's budget counts only the turns the expander reads, and what it drops is said.

An expander is given the most recent turns of the roles it reads (``Expander.history_roles``) within
``CONVERSATION.kept_turns`` turns and ``kept_chars`` characters; a long answer of the assistant costs a
history expander (which reads the user's turns only) nothing, and the number of older turns the budget
left out is ``diagnostics.expansion.dropped_turns``. Checked at every entry point that searches a
question: ``search`` / ``asearch``, ``fanfuse search --history`` (JSON and text), the service's
``history`` field, and the LangChain, LlamaIndex and Haystack adapters (whose results carry no
diagnostics: the search's one-line summary, logged at INFO, says it)."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import pytest
from fanfuse import multiquery
from fanfuse.cli import build_parser, main
from fanfuse.limits import CONVERSATION
from fanfuse.multiquery import Expander, HistoryExpander, MultiQueryRetriever, Turn
from fanfuse.multiquery.conversation import ROLES, History, check_history, recent
from fanfuse.multiquery.expand.llm_prompts import PROMPT_ROLES
from multiquery_toys import KeywordRetriever
from test_history_entry_points import QUESTION, cli, index_dir, library

__all__ = ["index_dir"]  # the fixture, imported for pytest

#: An answer of the assistant longer than the whole budget (a turn may be longer still).
LONG_ANSWER = "Barn owls are pale birds of prey. " * (CONVERSATION.kept_chars // 30)
#: The user's question, then the assistant's long answer: the follow-up refers to the question.
ANSWERED: list[Any] = ["tell me about barn owls", {"role": "assistant", "content": LONG_ANSWER}]
#: More user turns than the budget keeps: the oldest ones are dropped, and said to be.
EXTRA = 3
CHATTY: list[Any] = [f"and tell me about owls, part {i}" for i in range(CONVERSATION.kept_turns + EXTRA)]
SUMMARY = f"{EXTRA} older turn(s) of the conversation left out"


def test_the_budget_counts_only_the_roles_read() -> None:
    assert CONVERSATION.kept_chars < len(LONG_ANSWER) <= CONVERSATION.turn_chars
    history = check_history(ANSWERED)
    assert len(history) == 2  # checking cuts nothing: what is given is each expander's cut
    assert recent(history, ("user",)) == ((Turn("user", "tell me about barn owls"),), 0)
    assert recent(history, PROMPT_ROLES) == ((), 2)  # the answer is read, and crosses the budget
    assert recent(history, ()) == ((), 0)
    kept, dropped = recent(check_history(CHATTY), ("user",))
    assert [t.content for t in kept] == CHATTY[EXTRA:] and dropped == EXTRA
    big = "x" * (CONVERSATION.kept_chars // 2)
    kept, dropped = recent(check_history(["oldest", big, big, "newest"]), ROLES)
    # "newest" and one `big` fit; the second `big` would cross the budget, so it and all older go.
    assert [t.content for t in kept] == [big, "newest"] and dropped == 2


def test_every_expander_says_which_turns_it_reads() -> None:
    expanders = [getattr(multiquery, name) for name in multiquery.__all__]
    expanders = [cls for cls in expanders if isinstance(cls, type) and issubclass(cls, Expander)]
    assert expanders
    for cls in expanders:
        assert set(cls.history_roles) <= set(ROLES), cls
    assert HistoryExpander.history_roles == ("user",)
    assert multiquery.LLMExpander.history_roles == PROMPT_ROLES

    class QueryOnly(Expander):  # written without a conversation: given none, none counted
        def expand(self, query: str, *, max_variants: int) -> Any:
            raise NotImplementedError

    assert QueryOnly.history_roles == ()


def sources(data: Any) -> list[str]:
    return [v["source"] for v in data["diagnostics"]["variants"]]


def test_the_library_uses_the_users_turn_past_a_long_answer_and_says_what_it_dropped(
    index_dir: Path,
) -> None:
    answered = library(index_dir, ANSWERED)  # search and asearch, the same
    assert "history" in sources(answered)
    assert answered["diagnostics"]["expansion"]["dropped_turns"] == 0
    assert library(index_dir, ANSWERED[:1]) == answered  # the answer, not read, changes nothing
    chatty = library(index_dir, CHATTY)
    assert chatty["diagnostics"]["expansion"]["dropped_turns"] == EXTRA
    assert library(index_dir, CHATTY[EXTRA:])["diagnostics"]["expansion"]["dropped_turns"] == 0


def write_history(path: Path, turns: list[Any]) -> Path:
    path.write_text("".join(json.dumps(turn) + "\n" for turn in turns), encoding="utf-8")
    return path


def test_the_command_says_what_it_dropped(
    index_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    parser = build_parser()
    commands = next(a for a in parser._actions if a.dest == "command").choices
    with_history = {name for name, sub in commands.items() if any(a.dest == "history" for a in sub._actions)}
    assert with_history == {"search"}  # each command that takes a conversation is checked here
    answered = write_history(tmp_path / "answered.jsonl", ANSWERED)
    chatty = write_history(tmp_path / "chatty.jsonl", CHATTY)
    assert cli(index_dir, capsys, "--history", str(answered)) == library(index_dir, ANSWERED)
    assert cli(index_dir, capsys, "--history", str(chatty)) == library(index_dir, CHATTY)
    assert main(["search", "--index", str(index_dir), QUESTION, "--history", str(chatty)]) == 0
    out = capsys.readouterr().out
    assert f"the conversation's {EXTRA} oldest turn(s) left out" in out
    assert main(["search", "--index", str(index_dir), QUESTION, "--history", str(answered)]) == 0
    assert "left out" not in capsys.readouterr().out


def test_the_service_says_what_it_dropped(index_dir: Path) -> None:
    pytest.importorskip("fastapi")
    from fanfuse.service import app_for_index
    from fanfuse.service.schema import SearchRequest
    from fastapi.testclient import TestClient

    assert "history" in SearchRequest.model_json_schema()["properties"]
    with TestClient(app_for_index(index_dir)) as client:
        for turns in (ANSWERED, CHATTY):
            response = client.post("/search", json={"query": QUESTION, "history": turns})
            assert response.status_code == 200, response.text
            expansion = response.json()["diagnostics"]["expansion"]
            expected = library(index_dir, turns)["diagnostics"]["expansion"]
            assert expansion["dropped_turns"] == expected["dropped_turns"]
        schema = client.get("/openapi.json").json()["components"]["schemas"]
        assert "dropped_turns" in schema["ExpansionReport"]["properties"]


class RecordingHistoryExpander(HistoryExpander):
    """The history expander (it reads the user's turns), recording what it was given."""

    def __init__(self) -> None:
        super().__init__()
        self.seen: list[History] = []

    def expand(
        self, query: str, *, max_variants: int, strategy: str | None = None, history: History = ()
    ) -> Any:
        self.seen.append(history)
        return super().expand(query, max_variants=max_variants, strategy=strategy, history=history)


def _langchain(multi: MultiQueryRetriever, turns: list[Any]) -> None:
    from fanfuse.integrations.langchain import FanfuseRetriever
    from langchain_core.messages import AIMessage, HumanMessage

    messages = [HumanMessage(t) if isinstance(t, str) else AIMessage(t["content"]) for t in turns]
    FanfuseRetriever(retriever=multi).invoke(QUESTION, history=messages)


def _llamaindex(multi: MultiQueryRetriever, turns: list[Any]) -> None:
    from fanfuse.integrations.llamaindex import FanfuseRetriever
    from llama_index.core.llms import ChatMessage

    messages = [
        ChatMessage(role="user", content=t) if isinstance(t, str) else ChatMessage(**t) for t in turns
    ]
    FanfuseRetriever(multi, history=messages).retrieve(QUESTION)


def _haystack(multi: MultiQueryRetriever, turns: list[Any]) -> None:
    from fanfuse.integrations.haystack import FanfuseRetriever
    from haystack.dataclasses import ChatMessage

    messages = [
        ChatMessage.from_user(t) if isinstance(t, str) else ChatMessage.from_assistant(t["content"])
        for t in turns
    ]
    FanfuseRetriever(multi).run(QUESTION, history=messages)


ADAPTERS = {"langchain": ("langchain_core", _langchain), "llamaindex": ("llama_index.core", _llamaindex)}
ADAPTERS["haystack"] = ("haystack", _haystack)


@pytest.mark.parametrize("adapter", sorted(ADAPTERS))
def test_the_adapters_give_the_users_turn_and_log_what_was_dropped(
    adapter: str, caplog: pytest.LogCaptureFixture
) -> None:
    package, search = ADAPTERS[adapter]
    pytest.importorskip(package)
    expander = RecordingHistoryExpander()
    with MultiQueryRetriever(KeywordRetriever(), expander=expander) as multi:
        search(multi, ANSWERED)
        with caplog.at_level(logging.INFO, logger="fanfuse.multiquery"):
            search(multi, CHATTY)
    assert expander.seen[0] == (Turn("user", "tell me about barn owls"),)
    assert [t.content for t in expander.seen[1]] == CHATTY[EXTRA:]
    assert any(SUMMARY in record.getMessage() for record in caplog.records), caplog.text


def test_every_adapter_is_checked() -> None:
    """A guard: each module of the package that defines a framework's ``FanfuseRetriever``."""
    import fanfuse

    found = {
        path.stem
        for path in Path(fanfuse.__file__).parent.rglob("*.py")
        if "class FanfuseRetriever" in path.read_text(encoding="utf-8")
    }
    assert found == set(ADAPTERS)
