"""What ``LLMExpander`` asks a chat model for: one entry per strategy, and the messages of a request.

``StrategyName`` is the one list of strategy names, and ``STRATEGIES`` has an entry for each:
``LLMExpander(strategy=...)``, ``search(..., strategy=...)``, ``fanfuse search --strategy`` and the
service's ``strategy`` field all take them.

Given the conversation before the question (``history``), every strategy reads it: the earlier user
and assistant turns are written into the request above the question, and the model is told to resolve
what the question refers to from them. ``condense`` is the strategy made for that (LangChain's
history-aware retriever and LlamaIndex's condense-question chat engine do the same): standalone
rewrites of the last question; without a conversation there is nothing to condense and the question
is searched alone, with no request. ``hyde`` asks for a short passage that answers the question, as a
document would (hypothetical document embeddings): it reads like a document, not a query, so it is
searched only by the retrievers that read plain text (the dense side), never by BM25.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from fanfuse.limits import check_choice
from fanfuse.multiquery.conversation import History

__all__ = ["PROMPT_ROLES", "STRATEGIES", "Strategy", "StrategyName", "check_strategy", "messages"]

StrategyName = Literal["paraphrase", "entity", "stepback", "decompose", "condense", "hyde"]


@dataclass(frozen=True, slots=True)
class Strategy:
    """``ask``: what the system prompt asks for (``{n}``: how many). ``passage``: the answer is one
    passage of prose (``hyde``), not a list of queries. ``needs_history``: without a conversation the
    strategy has nothing to do."""

    ask: str
    passage: bool = False
    needs_history: bool = False


STRATEGIES: dict[StrategyName, Strategy] = {
    "paraphrase": Strategy(
        "Rewrite the search query in {n} different ways that keep its meaning exactly: "
        "use synonyms, other word order and other phrasing."
    ),
    "entity": Strategy(
        "Write {n} search queries that each focus on one named entity, product or key concept of the "
        "query, in the words a document about it would use."
    ),
    "stepback": Strategy(
        "Write {n} more general 'step-back' queries about the broader topic or background knowledge "
        "the query depends on."
    ),
    "decompose": Strategy(
        "Break the query into {n} simpler sub-questions that together answer it; each must make sense "
        "on its own."
    ),
    "condense": Strategy(
        "Rewrite the last question of the conversation as {n} standalone search queries: each must be "
        "understood without the conversation, naming whatever the question refers to.",
        needs_history=True,
    ),
    "hyde": Strategy(
        "Write a short passage, two or three sentences, that answers the question as a document "
        "about it would. Answer with the passage only: no JSON, no heading, no preamble.",
        passage=True,
    ),
}

_ROLE_NAMES = {"user": "User", "assistant": "Assistant"}
#: The roles of the conversation's turns written into the prompt.
PROMPT_ROLES = tuple(_ROLE_NAMES)


def check_strategy(strategy: object) -> StrategyName:
    return check_choice("strategy", strategy, STRATEGIES)


def messages(
    strategy: StrategyName, query: str, history: History, n: int, instructions: str | None
) -> list[dict[str, str]]:
    """The chat messages asking for ``n`` variants of ``query`` (one passage for ``hyde``)."""
    chosen = STRATEGIES[strategy]
    turns = [(_ROLE_NAMES[t.role], t.content) for t in history if t.role in _ROLE_NAMES]
    system = "You write search queries for a document retrieval system. " + chosen.ask.format(n=n)
    if turns:
        system += (
            " The question comes from a conversation: use the earlier turns to resolve what it refers "
            "to (it, they, that one, a topic left unsaid)."
        )
    if instructions:
        system += f" {instructions.strip()}"
    if not chosen.passage:
        system += (
            f' Answer with JSON only, exactly {n} strings: {{"queries": ["...", ...]}}.'
            " Do not repeat the original query."
        )
    if not turns:
        return [{"role": "system", "content": system}, {"role": "user", "content": query}]
    conversation = "\n".join(f"{role}: {' '.join(content.split())}" for role, content in turns)
    asked = f"Conversation:\n{conversation}\n\nQuestion: {query}"
    return [{"role": "system", "content": system}, {"role": "user", "content": asked}]
