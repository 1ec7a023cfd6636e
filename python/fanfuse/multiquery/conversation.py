"""The conversation a question comes from: the earlier turns of a chat, oldest first.

A search may be given ``history``: each turn a ``str`` (a user turn) or a message ``{"role": ...,
"content": ...}`` as chat APIs write it. ``check_history`` turns it into ``Turn``s once, where it
enters, so every expander reads the same thing:

- roles: ``user``, ``assistant``, ``system`` and ``tool``; content: a ``str``. Anything else is refused
  with the turn named (``history[3]["role"]``).
- a conversation longer than ``MAX_HISTORY_TURNS`` turns, or a turn longer than ``MAX_TURN_CHARS``
  characters, is refused as a mistake rather than cut silently;
- what is kept is the most recent turns: at most ``KEPT_TURNS`` of them, and no more than ``KEPT_CHARS``
  characters in all (a turn that would cross that budget is dropped with every older one). What a
  question refers to ("which one is cheaper?") is almost always in the last few turns, and a bounded
  history bounds the cost of every expander that reads it (an LLM prompt above all).
- blank turns are dropped.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from fanfuse._core import FusionError

__all__ = [
    "KEPT_CHARS",
    "KEPT_TURNS",
    "MAX_HISTORY_TURNS",
    "MAX_TURN_CHARS",
    "ROLES",
    "History",
    "Turn",
    "check_history",
    "user_turns",
]

#: The roles a turn may have (as OpenAI's, LangChain's, LlamaIndex's and Haystack's messages name them).
ROLES = ("user", "assistant", "system", "tool")
#: The most turns a search accepts; more is refused.
MAX_HISTORY_TURNS = 1000
#: The longest turn accepted, in characters (as long as a question may be).
MAX_TURN_CHARS = 10_000
#: The most recent turns kept.
KEPT_TURNS = 10
#: The characters kept, in all, from the most recent turns.
KEPT_CHARS = 4_000


@dataclass(frozen=True, slots=True)
class Turn:
    """One earlier turn of the conversation."""

    role: str
    content: str


History = tuple[Turn, ...]


def check_history(history: object, name: str = "history") -> History:
    """``history`` (None, or a list of str / ``{"role", "content"}`` messages, oldest first) checked and
    cut to the turns kept (see the module documentation)."""
    if history is None:
        return ()
    if isinstance(history, (str, bytes, Mapping)) or not isinstance(history, Sequence):
        raise TypeError(
            f"{name} must be a list of turns, oldest first, each a str (a user turn) or a "
            f'{{"role": ..., "content": ...}} message (got {type(history).__name__})'
        )
    if len(history) > MAX_HISTORY_TURNS:
        raise FusionError(
            f"{name} has {len(history)} turns; at most {MAX_HISTORY_TURNS} are accepted "
            f"(only the last {KEPT_TURNS} are used)"
        )
    turns = [_turn(item, f"{name}[{i}]") for i, item in enumerate(history)]
    kept: list[Turn] = []
    budget = KEPT_CHARS
    for turn in reversed(turns):
        if not turn.content.strip():
            continue
        if len(kept) == KEPT_TURNS or len(turn.content) > budget:
            break
        budget -= len(turn.content)
        kept.append(turn)
    return tuple(reversed(kept))


def _turn(item: object, name: str) -> Turn:
    if isinstance(item, Turn):
        role, content = item.role, item.content
    elif isinstance(item, str):
        role, content = "user", item
    elif isinstance(item, Mapping):
        unknown = sorted(map(str, item.keys() - {"role", "content"}))
        if unknown or "content" not in item or "role" not in item:
            raise FusionError(
                f'{name} must be a message with exactly the keys "role" and "content" '
                f"(got keys {sorted(map(str, item.keys()))})"
            )
        role, content = item["role"], item["content"]
        if not isinstance(role, str):
            raise TypeError(f'{name}["role"] must be a str (got {type(role).__name__})')
        if not isinstance(content, str):
            raise TypeError(f'{name}["content"] must be a str (got {type(content).__name__})')
        if role not in ROLES:
            raise FusionError(f'{name}["role"] must be one of {", ".join(ROLES)} (got {role!r})')
        name = f'{name}["content"]'
    else:
        raise TypeError(
            f'{name} must be a str (a user turn) or a {{"role": ..., "content": ...}} message '
            f"(got {type(item).__name__})"
        )
    if role not in ROLES:  # a Turn built by hand
        raise FusionError(f"{name}.role must be one of {', '.join(ROLES)} (got {role!r})")
    if len(content) > MAX_TURN_CHARS:
        raise FusionError(f"{name} has {len(content)} characters; at most {MAX_TURN_CHARS} are accepted")
    return Turn(role, content)


def user_turns(history: History) -> list[str]:
    """The user turns' texts, oldest first."""
    return [turn.content for turn in history if turn.role == "user"]
