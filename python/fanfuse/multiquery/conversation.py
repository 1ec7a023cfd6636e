"""The conversation a question comes from: the earlier turns of a chat, oldest first.

A search may be given ``history``: each turn a ``str`` (a user turn) or a message ``{"role": ...,
"content": ...}`` as chat APIs write it. ``check_history`` turns it into ``Turn``s once, where it
enters, so every expander reads the same thing:

- roles: ``user``, ``assistant``, ``system`` and ``tool``; content: a ``str``. Anything else is refused
  with the turn named (``history[3]["role"]``).
- a conversation longer than ``CONVERSATION.turns`` turns, or a turn longer than
  ``CONVERSATION.turn_chars`` characters, is refused as a mistake rather than cut silently
  (``fanfuse.limits``);
- blank turns are dropped.

What an expander is given is ``recent``'s cut, made for the roles of the turns it reads
(``Expander.history_roles``: the history expander reads the user's turns only, an LLM's prompt the
user's and the assistant's): the most recent of those turns, at most ``CONVERSATION.kept_turns`` of
them and no more than ``CONVERSATION.kept_chars`` characters in all (a turn that would cross that
budget is dropped with every older one of those roles). A turn of a role the expander does not read
costs nothing, so a long answer of the assistant cannot push the user's earlier turns out of a
history expander's budget; and how many turns the budget dropped is in the search's diagnostics
(``ExpansionReport.dropped_turns``). What a question refers to ("which one is cheaper?") is almost
always in the last few turns, and a bounded history bounds the cost of every expander that reads it
(an LLM prompt above all).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from fanfuse.errors import ConversationTooLong, InvalidConversation
from fanfuse.limits import CONVERSATION, check_choice
from fanfuse.text import check_unicode

__all__ = [
    "ROLES",
    "History",
    "Turn",
    "check_history",
    "check_turn",
    "converted_messages",
    "recent",
    "user_turns",
]

#: The roles a turn may have (as OpenAI's, LangChain's, LlamaIndex's and Haystack's messages name them).
ROLES = ("user", "assistant", "system", "tool")


@dataclass(frozen=True, slots=True)
class Turn:
    """One earlier turn of the conversation."""

    role: str
    content: str


History = tuple[Turn, ...]


def check_history(history: object, name: str = "history") -> History:
    """``history`` (None, or a list of str / ``{"role", "content"}`` messages, oldest first) checked,
    blank turns left out (see the module documentation; ``recent`` cuts it for an expander)."""
    if history is None:
        return ()
    if isinstance(history, (str, bytes, Mapping)) or not isinstance(history, Sequence):
        raise TypeError(
            f"{name} must be a list of turns, oldest first, each a str (a user turn) or a "
            f'{{"role": ..., "content": ...}} message (got {type(history).__name__})'
        )
    if len(history) > CONVERSATION.turns:
        raise ConversationTooLong(
            f"{name} has {len(history)} turns; at most {CONVERSATION.turns} are accepted "
            f"(only the last {CONVERSATION.kept_turns} are used)"
        )
    turns = [check_turn(item, f"{name}[{i}]") for i, item in enumerate(history)]
    return tuple(turn for turn in turns if turn.content.strip())


def recent(history: History, roles: Collection[str]) -> tuple[History, int]:
    """The turns of ``history`` an expander reading ``roles`` is given (the most recent of those roles,
    within the budget: see the module documentation), and how many older turns of those roles the
    budget dropped."""
    read = [turn for turn in history if turn.role in roles]
    kept: list[Turn] = []
    budget = CONVERSATION.kept_chars
    for turn in reversed(read):
        if len(kept) == CONVERSATION.kept_turns or len(turn.content) > budget:
            break
        budget -= len(turn.content)
        kept.append(turn)
    return tuple(reversed(kept)), len(read) - len(kept)


def check_turn(item: object, name: str) -> Turn:
    """One turn (a ``str``, a ``{"role", "content"}`` message or a ``Turn``) checked; errors name it as
    ``name`` (``history[3]``, or a file and line)."""
    if isinstance(item, Turn):
        role, content = item.role, item.content
    elif isinstance(item, str):
        role, content = "user", item
    elif isinstance(item, Mapping):
        unknown = sorted(map(str, item.keys() - {"role", "content"}))
        if unknown or "content" not in item or "role" not in item:
            raise InvalidConversation(
                f'{name} must be a message with exactly the keys "role" and "content" '
                f"(got keys {sorted(map(str, item.keys()))})"
            )
        role, content = item["role"], item["content"]
        if not isinstance(role, str):
            raise TypeError(f'{name}["role"] must be a str (got {type(role).__name__})')
        if not isinstance(content, str):
            raise TypeError(f'{name}["content"] must be a str (got {type(content).__name__})')
        check_choice(f'{name}["role"]', role, ROLES, InvalidConversation)
        name = f'{name}["content"]'
    else:
        raise TypeError(
            f'{name} must be a str (a user turn) or a {{"role": ..., "content": ...}} message '
            f"(got {type(item).__name__})"
        )
    check_choice(f"{name}.role", role, ROLES, InvalidConversation)  # a Turn built by hand
    if not isinstance(content, str):
        raise TypeError(f"{name}.content must be a str (got {type(content).__name__})")
    if len(content) > CONVERSATION.turn_chars:
        raise ConversationTooLong(
            f"{name} has {len(content)} characters; at most {CONVERSATION.turn_chars} are accepted"
        )
    return Turn(role, check_unicode(name, content, InvalidConversation))


def user_turns(history: History) -> list[str]:
    """The user turns' texts, oldest first."""
    return [turn.content for turn in history if turn.role == "user"]


def converted_messages(history: Any, message_type: type, turn: Callable[[Any, int], dict[str, str]]) -> Any:
    """A framework's conversation as ``check_history`` reads it: each ``message_type`` item as
    ``turn(message, index)`` (a ``{"role", "content"}`` message); anything else, and a ``history`` that
    is not a list, is left as it is for ``check_history`` to judge."""
    if not isinstance(history, Sequence) or isinstance(history, (str, bytes)):
        return history
    return [turn(item, i) if isinstance(item, message_type) else item for i, item in enumerate(history)]
