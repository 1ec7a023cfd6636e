"""The conversation before a question: how `history` is checked and cut, and that it reaches the expander
through `search` and `asearch` (and the variant cache's key), while an expander written without it still
works."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from fanfuse import ConversationTooLong, InvalidConversation
from fanfuse.limits import CONVERSATION
from fanfuse.multiquery import Expander, Expansion, MultiQueryRetriever, Variant, VariantCache
from fanfuse.multiquery.conversation import (
    ROLES,
    History,
    Turn,
    check_history,
    recent,
    user_turns,
)
from multiquery_toys import KeywordRetriever


def test_strings_are_user_turns_and_messages_keep_their_role() -> None:
    history = check_history(["Tell me about RRF", {"role": "assistant", "content": "It fuses lists."}])
    assert history == (Turn("user", "Tell me about RRF"), Turn("assistant", "It fuses lists."))
    assert user_turns(history) == ["Tell me about RRF"]
    assert check_history(None) == ()
    assert check_history([]) == ()


@pytest.mark.parametrize(
    ("history", "error", "named"),
    [
        ("a question", TypeError, "history must be a list"),
        ({"role": "user", "content": "x"}, TypeError, "history must be a list"),
        ([1], TypeError, "history[0] must be a str"),
        (["ok", None], TypeError, "history[1] must be a str"),
        (
            [{"role": "user"}],
            InvalidConversation,
            'history[0] must be a message with exactly the keys "role"',
        ),
        (
            [{"role": "user", "content": "x", "name": "bob"}],
            InvalidConversation,
            "history[0] must be a message",
        ),
        ([{"role": "bot", "content": "x"}], InvalidConversation, 'history[0]["role"] must be one of user'),
        ([{"role": 1, "content": "x"}], TypeError, 'history[0]["role"] must be a str'),
        ([{"role": "user", "content": ["x"]}], TypeError, 'history[0]["content"] must be a str'),
        (["ok", "x" * (CONVERSATION.turn_chars + 1)], ConversationTooLong, "history[1] has 10001 characters"),
        (
            [{"role": "user", "content": "x" * (CONVERSATION.turn_chars + 1)}],
            ConversationTooLong,
            'history[0]["content"] has 10001 characters',
        ),
        (["hi"] * (CONVERSATION.turns + 1), ConversationTooLong, "history has 1001 turns"),
    ],
)
def test_bad_history_is_refused_naming_the_turn(history: Any, error: type[Exception], named: str) -> None:
    with pytest.raises(error) as raised:
        check_history(history)
    assert named in str(raised.value)


def test_only_the_most_recent_turns_are_given() -> None:
    turns = [f"turn {i}" for i in range(CONVERSATION.kept_turns + 5)]
    assert len(check_history(turns)) == len(turns)  # checked, not cut: the cut is each expander's
    kept, dropped = recent(check_history(turns), ROLES)
    assert [t.content for t in kept] == turns[-CONVERSATION.kept_turns :] and dropped == 5


def test_the_character_budget_keeps_the_newest_turns_that_fit() -> None:
    big = "x" * (CONVERSATION.kept_chars // 2)
    kept, _ = recent(check_history(["oldest", big, big, "newest"]), ROLES)
    # "newest" and one `big` fit; the second `big` would cross the budget, so it and all older go.
    assert [t.content for t in kept] == [big, "newest"]


def test_blank_turns_are_dropped() -> None:
    assert check_history(["first", "  ", {"role": "assistant", "content": ""}, "last"]) == (
        Turn("user", "first"),
        Turn("user", "last"),
    )


class RecordingExpander(Expander):
    """Returns the last user turn as a variant and records every history it was given."""

    name = "recording"

    def __init__(self) -> None:
        self.seen: list[History] = []

    def expand(
        self, query: str, *, max_variants: int, strategy: str | None = None, history: History = ()
    ) -> Expansion:
        self.seen.append(history)
        earlier = user_turns(history)
        extra = (Variant(f"{earlier[-1]} {query}", "recording"),) if earlier else ()
        return Expansion((Variant(query, "original"), *extra)[:max_variants])

    def cache_key(self) -> str:
        return "recording"


class QueryOnlyExpander(Expander):
    """An expander written before conversations: its methods take no history."""

    name = "query-only"

    def __init__(self) -> None:
        self.calls = 0

    def expand(self, query: str, *, max_variants: int, strategy: str | None = None) -> Expansion:
        self.calls += 1
        return Expansion((Variant(query, "original"), Variant(f"{query} fusion", "query-only")))


def test_search_and_asearch_hand_the_checked_history_to_the_expander() -> None:
    expander = RecordingExpander()
    with MultiQueryRetriever(KeywordRetriever(), expander=expander) as retriever:
        result = retriever.search("ranked lists", history=["rank fusion"])
        message = {"role": "user", "content": "rrf"}
        asearched = asyncio.run(retriever.asearch("ranked lists", history=[message]))
        retriever.search("ranked lists")
    assert expander.seen == [(Turn("user", "rank fusion"),), (Turn("user", "rrf"),), ()]
    assert [v.text for v in result.diagnostics.variants] == ["ranked lists", "rank fusion ranked lists"]
    assert [v.text for v in asearched.diagnostics.variants] == ["ranked lists", "rrf ranked lists"]


def test_bad_history_fails_the_call_before_any_branch_runs() -> None:
    backend = KeywordRetriever()
    retriever = MultiQueryRetriever(backend, expander=RecordingExpander())
    with retriever, pytest.raises(TypeError, match=r"history\[0\] must be a str"):
        retriever.search("ranked lists", history=[3])
    assert backend.calls == []


def test_an_expander_without_a_history_parameter_still_expands() -> None:
    expander = QueryOnlyExpander()
    with MultiQueryRetriever(KeywordRetriever(), expander=expander) as retriever:
        result = retriever.search("ranked lists", history=["rank fusion"])
        asearched = asyncio.run(retriever.asearch("ranked lists", history=["rank fusion"]))
    assert expander.calls == 2
    assert [v.text for v in result.diagnostics.variants] == ["ranked lists", "ranked lists fusion"]
    assert [v.text for v in asearched.diagnostics.variants] == ["ranked lists", "ranked lists fusion"]


def test_the_variant_cache_tells_conversations_apart() -> None:
    expander, cache = RecordingExpander(), VariantCache()
    with MultiQueryRetriever(KeywordRetriever(), expander=expander, cache=cache) as retriever:
        first = retriever.search("ranked lists", history=["rank fusion"])
        other = retriever.search("ranked lists", history=["borda"])
        again = retriever.search("ranked lists", history=["rank fusion"])
    assert len(expander.seen) == 2  # the third search was answered from the cache
    assert first.diagnostics.variants[1].text == again.diagnostics.variants[1].text
    assert other.diagnostics.variants[1].text == "borda ranked lists"
    assert again.diagnostics.expansion.cached
