"""The conversation through the framework adapters, against the real packages: LangChain messages and
chat histories, LlamaIndex `ChatMessage`s and chat memories (inside a real `ContextChatEngine`),
Haystack `ChatMessage`s (inside a real pipeline). Each reaches the expander as the same turns, sync and
async; a message that is not a turn of a conversation is refused naming it."""

from __future__ import annotations

import asyncio
import os
from typing import Any

import pytest
from fanfuse import InvalidConversation
from fanfuse.multiquery import MultiQueryRetriever, Turn
from multiquery_toys import KeywordRetriever
from test_multiquery_history import RecordingExpander

os.environ.setdefault("HAYSTACK_TELEMETRY_ENABLED", "False")  # no telemetry calls from the tests

QUESTION = "which one combines ranked lists"
# The same conversation in every framework's messages: a user turn, the assistant's answer, a user turn.
TURNS = (
    Turn("user", "tell me about reciprocal rank fusion"),
    Turn("assistant", "It fuses the ranked lists of several retrievers."),
    Turn("user", "and borda count?"),
)


def recording() -> tuple[MultiQueryRetriever, RecordingExpander]:
    expander = RecordingExpander()
    return MultiQueryRetriever(KeywordRetriever(), expander=expander), expander


def test_langchain_messages_and_chat_histories() -> None:
    pytest.importorskip("langchain_core")
    from fanfuse.integrations.langchain import FanfuseRetriever
    from langchain_core.messages import AIMessage, HumanMessage, SystemMessage

    multi, expander = recording()
    retriever = FanfuseRetriever(retriever=multi)
    messages = [HumanMessage(TURNS[0].content), AIMessage(TURNS[1].content), HumanMessage(TURNS[2].content)]
    documents = retriever.invoke(QUESTION, history=messages)
    asyncio.run(retriever.ainvoke(QUESTION, history=messages))
    # Multimodal content: its text blocks are the turn.
    blocks = [{"type": "text", "text": TURNS[2].content}, {"type": "image_url", "image_url": {"url": "x"}}]
    retriever.invoke(QUESTION, history=[SystemMessage("be brief"), HumanMessage(content=blocks)])
    retriever.invoke(QUESTION)  # no history: the question alone
    multi.close()
    assert expander.seen == [TURNS, TURNS, (Turn("system", "be brief"), TURNS[2]), ()]
    assert "rrf" in [d.id for d in documents]


def test_langchain_chat_history_object_and_search_kwargs() -> None:
    pytest.importorskip("langchain_core")
    from fanfuse.integrations.langchain import FanfuseRetriever
    from langchain_core.messages import HumanMessage

    class ChatHistory:  # what BaseChatMessageHistory subclasses offer: the messages, oldest first
        def __init__(self) -> None:
            self.messages = [HumanMessage(TURNS[0].content)]

    multi, expander = recording()
    FanfuseRetriever(retriever=multi).invoke(QUESTION, history=ChatHistory())
    FanfuseRetriever(retriever=multi, search_kwargs={"history": ChatHistory()}).invoke(QUESTION)
    multi.close()
    assert expander.seen == [TURNS[:1], TURNS[:1]]


def test_llamaindex_chat_engine_searches_in_its_memory() -> None:
    pytest.importorskip("llama_index.core")
    from fanfuse.integrations.llamaindex import FanfuseRetriever
    from llama_index.core.chat_engine import ContextChatEngine
    from llama_index.core.llms import ChatMessage, MockLLM
    from llama_index.core.memory import ChatMemoryBuffer

    multi, expander = recording()
    memory = ChatMemoryBuffer.from_defaults()
    retriever = FanfuseRetriever(multi, history=memory)
    engine = ContextChatEngine.from_defaults(retriever=retriever, llm=MockLLM(max_tokens=8), memory=memory)
    engine.chat(TURNS[0].content)
    engine.chat(QUESTION)
    # The engine retrieves before it stores the question: each search sees the turns before it.
    assert expander.seen[0] == ()
    assert [t.role for t in expander.seen[1]] == ["user", "assistant"]
    assert expander.seen[1][0] == TURNS[0]
    retriever.history = [ChatMessage(role=t.role, content=t.content) for t in TURNS]
    retriever.retrieve(QUESTION)
    asyncio.run(retriever.aretrieve(QUESTION))
    multi.close()
    assert expander.seen[2:] == [TURNS, TURNS]


def test_haystack_pipeline_takes_the_history_input() -> None:
    pytest.importorskip("haystack")
    from fanfuse.integrations.haystack import FanfuseRetriever
    from haystack import Pipeline
    from haystack.dataclasses import ChatMessage

    multi, expander = recording()
    messages = [
        ChatMessage.from_user(TURNS[0].content),
        ChatMessage.from_assistant(TURNS[1].content),
        ChatMessage.from_user(TURNS[2].content),
    ]
    pipeline = Pipeline()
    pipeline.add_component("retriever", FanfuseRetriever(multi))
    output = pipeline.run({"retriever": {"query": QUESTION, "history": messages}})
    component = FanfuseRetriever(multi)
    asyncio.run(component.run_async(QUESTION, history=messages))
    component.run(QUESTION)
    multi.close()
    assert expander.seen == [TURNS, TURNS, ()]
    assert output["retriever"]["documents"]


def _langchain_bad() -> Any:
    from fanfuse.integrations.langchain import FanfuseRetriever
    from langchain_core.messages import HumanMessage, RemoveMessage

    multi, _ = recording()
    return lambda: FanfuseRetriever(retriever=multi).invoke(
        QUESTION, history=[HumanMessage("ok"), RemoveMessage(id="x")]
    )


def _llamaindex_bad() -> Any:
    from fanfuse.integrations.llamaindex import FanfuseRetriever

    multi, _ = recording()
    return lambda: FanfuseRetriever(multi, history=["ok", 7]).retrieve(QUESTION)


def _haystack_bad() -> Any:
    from fanfuse.integrations.haystack import FanfuseRetriever

    multi, _ = recording()
    return lambda: FanfuseRetriever(multi).run(QUESTION, history=["ok", {"role": "bot", "content": "x"}])


@pytest.mark.parametrize(
    ("package", "make", "error", "named"),
    [
        ("langchain_core", _langchain_bad, InvalidConversation, "history[1] is a LangChain RemoveMessage"),
        ("llama_index.core", _llamaindex_bad, TypeError, "history[1] must be a str"),
        ("haystack", _haystack_bad, InvalidConversation, 'history[1]["role"] must be one of'),
    ],
)
def test_a_bad_turn_is_refused_naming_it(package: str, make: Any, error: type[Exception], named: str) -> None:
    pytest.importorskip(package)
    with pytest.raises(error) as raised:
        make()()
    assert named in str(raised.value)
