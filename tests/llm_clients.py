"""Every way ``LLMExpander`` reaches a model, built against one base URL: ``base_url`` itself, and the
user's own clients from the real packages (``openai``, LangChain's ``ChatOpenAI``, LlamaIndex's
``OpenAILike``), each skipped with a reason where its package is not installed. The clients are made
with ``max_retries=0`` (a test's scripted reply is used once) and ``temperature=0``."""

from __future__ import annotations

from typing import Any

import pytest
from fanfuse.multiquery import LLMExpander

#: The kinds of client, in the order the tests list them.
KINDS = ("base_url", "openai", "async-openai", "langchain", "llamaindex")


def client_for(kind: str, base_url: str, api_key: str, model: str = "scripted") -> Any:
    """The user's own client of ``kind`` (None for ``base_url``, which needs none)."""
    if kind == "base_url":
        return None
    if kind in ("openai", "async-openai"):
        openai = pytest.importorskip("openai", reason="the openai package is not installed")
        cls = openai.OpenAI if kind == "openai" else openai.AsyncOpenAI
        return cls(base_url=base_url, api_key=api_key, max_retries=0)
    if kind == "langchain":
        langchain_openai = pytest.importorskip(
            "langchain_openai", reason="langchain-openai (LangChain's OpenAI chat model) is not installed"
        )
        return langchain_openai.ChatOpenAI(
            base_url=base_url, api_key=api_key, model=model, max_retries=0, temperature=0
        )
    if kind == "llamaindex":
        openai_like = pytest.importorskip(
            "llama_index.llms.openai_like",
            reason="llama-index-llms-openai-like (LlamaIndex's OpenAI-compatible LLM) is not installed",
        )
        return openai_like.OpenAILike(
            api_base=base_url, api_key=api_key, model=model, is_chat_model=True, max_retries=0, temperature=0
        )
    raise ValueError(kind)


def expander_for(
    kind: str, base_url: str, api_key: str, model: str = "scripted", **options: Any
) -> LLMExpander:
    """An ``LLMExpander`` reaching ``base_url`` through a client of ``kind``."""
    client = client_for(kind, base_url, api_key, model)
    if client is None:
        return LLMExpander(base_url, model=model, api_key=api_key, **options)
    if kind in ("openai", "async-openai"):
        return LLMExpander(client=client, model=model, **options)
    settings = {name: options.pop(name) for name in ("temperature", "max_tokens") if name in options}
    if settings:  # a framework model keeps its own settings: set them on it
        raise ValueError(f"set {', '.join(settings)} on the {kind} client")
    return LLMExpander(client=client, **options)
