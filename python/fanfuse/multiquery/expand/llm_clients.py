"""The ways ``LLMExpander`` reaches a chat model, each an adapter with one job: send the messages, hand
back what came back.

- ``HTTPChat``: ``base_url``, any OpenAI-compatible ``/chat/completions`` endpoint, through
  ``llm_http.py`` (one deadline, no redirects, bounded answers);
- ``OpenAIChat``: the user's own ``openai.OpenAI`` or ``openai.AsyncOpenAI`` client (its base URL, key,
  proxies and headers), one attempt (``max_retries=0``) bounded by the time left;
- ``LangChainChat``: a LangChain chat model (``BaseChatModel``: ``ChatOpenAI``, ``ChatOllama``, ...);
- ``LlamaIndexChat``: a LlamaIndex LLM (``OpenAILike``, ``Ollama``, ...).

An adapter decides nothing: ``LLMExpander`` (``llm.py``) runs its ``call`` within the deadline, removes
every secret the adapter names (``secrets()``, read after each call: a client may fetch its key
lazily) from whatever came back or was raised, reads the answer out of the reply (``content``), and
falls back on any failure. The optional packages are never imported here to find out what a client
is: an object of their classes exists only once its package is imported, so ``sys.modules`` says.
"""

from __future__ import annotations

import json
import re
import sys
from abc import ABC, abstractmethod
from collections.abc import Hashable, Mapping
from dataclasses import dataclass
from typing import Any

from fanfuse.errors import InvalidSetting
from fanfuse.multiquery.expand.llm_deadline import remaining
from fanfuse.multiquery.expand.llm_http import Endpoint, char_kind, exchange
from fanfuse.multiquery.expand.llm_parse import UnusableAnswer, completion_text

__all__ = [
    "CLIENT_KINDS",
    "DEFAULT_TEMPERATURE",
    "ChatClient",
    "ClientKind",
    "HTTPChat",
    "Messages",
    "client_adapter",
    "client_kind",
]

Messages = list[dict[str, str]]
#: The sampling temperature of a request the expander makes (base_url, an openai client).
DEFAULT_TEMPERATURE = 0.3
#: The endpoint of a ``base_url`` left out, and of no ``FANFUSE_LLM_BASE_URL``.
DEFAULT_BASE_URL = "https://api.openai.com/v1"


@dataclass(frozen=True, slots=True)
class ClientKind:
    """One kind of user's client ``LLMExpander(client=...)`` takes: an instance of ``module.cls``."""

    name: str
    module: str
    cls: str
    described: str

    def holds(self, client: object) -> bool:
        loaded = sys.modules.get(self.module)
        kind = getattr(loaded, self.cls, None) if loaded is not None else None
        return isinstance(kind, type) and isinstance(client, kind)


#: Every kind of user's client ``LLMExpander(client=...)`` takes, the first that holds a client first.
CLIENT_KINDS = (
    ClientKind("openai", "openai", "OpenAI", "an openai.OpenAI client"),
    ClientKind("async-openai", "openai", "AsyncOpenAI", "an openai.AsyncOpenAI client"),
    ClientKind(
        "langchain", "langchain_core.language_models.chat_models", "BaseChatModel", "a LangChain chat model"
    ),
    ClientKind("llamaindex", "llama_index.core.base.llms.base", "BaseLLM", "a LlamaIndex LLM"),
)


def client_kind(client: object) -> ClientKind | None:
    """The kind of ``client``, or None when it is none of ``CLIENT_KINDS``."""
    return next((kind for kind in CLIENT_KINDS if kind.holds(client)), None)


class ChatClient(ABC):
    """One way to reach a chat model (see the module documentation)."""

    #: Whether ``acall`` is the client's own coroutine (else ``call`` runs in a thread).
    native_async = False

    @abstractmethod
    def call(self, messages: Messages, deadline: float) -> str:
        """The reply as text (blocking); an exception on failure."""

    async def acall(self, messages: Messages, deadline: float) -> str:
        raise NotImplementedError

    def content(self, reply: str) -> str:
        """The model's answer in the reply (already redacted)."""
        return reply

    @abstractmethod
    def secrets(self) -> list[str]:
        """Every secret the client holds, to be removed from what it returns or raises."""

    @abstractmethod
    def cache_key(self) -> Hashable:
        """What identifies the model the client reaches."""

    @abstractmethod
    def describe(self) -> str:
        """For ``repr``: where the requests go, never a secret."""


class HTTPChat(ChatClient):
    def __init__(self, endpoint: Endpoint, model: str, api_key: str | None, settings: dict[str, Any]):
        self.endpoint, self.model, self.api_key, self.settings = endpoint, model, api_key, settings

    def call(self, messages: Messages, deadline: float) -> str:
        body = json.dumps({"model": self.model, "messages": messages, **self.settings}).encode()
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        # Bytes that are not UTF-8 stay visible as lone surrogates, so a variant made of them is
        # recognised and dropped (llm.py) instead of becoming a string of replacement characters.
        return exchange(self.endpoint, body, headers, deadline).decode("utf-8", "surrogateescape")

    def content(self, reply: str) -> str:
        return completion_text(reply)

    def secrets(self) -> list[str]:
        return [self.api_key] if self.api_key else []

    def cache_key(self) -> Hashable:
        return ("http", self.endpoint.url, self.model)

    def describe(self) -> str:
        return f"url={self.endpoint.url!r}, model={self.model!r}"


class OpenAIChat(ChatClient):
    def __init__(self, client: Any, model: str, settings: dict[str, Any], is_async: bool):
        self.client, self.model, self.native_async = client, model, is_async
        extra = dict(settings)
        self.settings = {name: extra.pop(name) for name in ("temperature", "max_tokens") if name in extra}
        self.extra_body = extra or None

    def _request(self, deadline: float) -> Any:
        return self.client.with_options(timeout=remaining(deadline), max_retries=0).chat.completions

    def call(self, messages: Messages, deadline: float) -> str:
        completions = self._request(deadline)
        return _choice_text(
            completions.create(
                model=self.model, messages=messages, extra_body=self.extra_body, **self.settings
            )
        )

    async def acall(self, messages: Messages, deadline: float) -> str:
        completions = self._request(deadline)
        return _choice_text(
            await completions.create(
                model=self.model, messages=messages, extra_body=self.extra_body, **self.settings
            )
        )

    def secrets(self) -> list[str]:
        return _secrets_of(self.client)

    def cache_key(self) -> Hashable:
        return ("openai", str(self.client.base_url), self.model)

    def describe(self) -> str:
        return f"client={type(self.client).__name__}, url={str(self.client.base_url)!r}, model={self.model!r}"


class _FrameworkChat(ChatClient):
    """A framework's model object, used with its own settings (model, temperature, retries)."""

    kind = ""

    def __init__(self, model: Any):
        self.model = model

    def secrets(self) -> list[str]:
        return _secrets_of(self.model)

    def cache_key(self) -> Hashable:
        # The object itself (its settings are its own): another object, another cache entry.
        return (self.kind, type(self.model).__qualname__, id(self.model), _model_name(self.model))

    def describe(self) -> str:
        return f"client={type(self.model).__name__}, model={_model_name(self.model)!r}"


class LangChainChat(_FrameworkChat):
    kind = "langchain"

    def call(self, messages: Messages, deadline: float) -> str:
        content = self.model.invoke(messages).content
        if isinstance(content, list):  # content blocks: the text ones, in order
            content = "".join(
                block if isinstance(block, str) else str(block.get("text", ""))
                for block in content
                if isinstance(block, str) or (isinstance(block, Mapping) and block.get("type") == "text")
            )
        if not isinstance(content, str):
            raise UnusableAnswer("the chat model's message has no text content")
        return content


class LlamaIndexChat(_FrameworkChat):
    kind = "llamaindex"

    def call(self, messages: Messages, deadline: float) -> str:
        from llama_index.core.base.llms.types import ChatMessage  # loaded: the LLM object is one of its

        response = self.model.chat([ChatMessage(role=m["role"], content=m["content"]) for m in messages])
        content = response.message.content
        if not isinstance(content, str):
            raise UnusableAnswer("the LLM's message has no text content")
        return content


_FRAMEWORK_ADAPTERS: dict[str, type[_FrameworkChat]] = {
    "langchain": LangChainChat,
    "llamaindex": LlamaIndexChat,
}


def client_adapter(
    client: object, model: str | None, default_model: str | None, settings: dict[str, Any], given: list[str]
) -> ChatClient:
    """The adapter for a user's client. ``model``: the one given (``default_model``: from the
    environment); ``settings``: the request fields given (temperature, max_tokens, extra_body's);
    ``given``: the names of the arguments that set them, for an error."""
    kind = client_kind(client)
    if kind is None:
        accepted = [k.described for k in CLIENT_KINDS]
        raise TypeError(
            f"client must be {', '.join(accepted[:-1])} or {accepted[-1]} (got {type(client).__name__})"
        )
    if kind.name in ("openai", "async-openai"):
        chosen = model or default_model
        if not chosen:
            raise InvalidSetting("an openai client needs a model: pass model=... (or set FANFUSE_LLM_MODEL)")
        settings = {"temperature": DEFAULT_TEMPERATURE, **settings}
        return OpenAIChat(client, chosen, settings, kind.name == "async-openai")
    adapter = _FRAMEWORK_ADAPTERS[kind.name](client)
    if given:
        raise InvalidSetting(
            f"{', '.join(given)}: the client ({type(client).__name__}) is used with its own settings; "
            "set them on it, not on LLMExpander"
        )
    return adapter


def _choice_text(completion: Any) -> str:
    try:
        content = completion.choices[0].message.content
    except (AttributeError, IndexError, TypeError):
        raise UnusableAnswer("the endpoint's reply is not a chat completion") from None
    if not isinstance(content, str):
        raise UnusableAnswer("the chat completion has no text content")
    return content


# Attribute and header names that hold a secret: api_key, openai_api_key, access_token, X-Api-Key,
# Authorization; not max_tokens.
_SECRET_NAME = re.compile(r"(?:key|token|secret|password|authorization)$", re.IGNORECASE)
_SCHEMES = re.compile(r"^(?:bearer|basic|token)\s+", re.IGNORECASE)


def _secrets_of(obj: object, depth: int = 2) -> list[str]:
    """The secrets an object holds: its ``SecretStr`` values, the strings of attributes and header
    entries named like a key, token, secret, password or authorization (without ``Bearer``), and
    those of the clients it holds (a LangChain model's openai client), ``depth`` levels down."""
    found = []
    attributes = dict(getattr(obj, "__dict__", {}))
    attributes.update(getattr(obj, "__pydantic_private__", None) or {})
    for name in ("api_key", "auth_headers", "default_headers"):  # properties of an openai client
        if name not in attributes:
            attributes[name] = getattr(obj, name, None)
    for name, value in attributes.items():
        if callable(getattr(value, "get_secret_value", None)):
            value = value.get_secret_value()
        if isinstance(value, str):
            if value and _SECRET_NAME.search(name):
                found.append(_SCHEMES.sub("", value.strip()))
        elif isinstance(value, Mapping):
            found += [
                _SCHEMES.sub("", item.strip())
                for key, item in value.items()
                if isinstance(key, str) and isinstance(item, str) and item and _SECRET_NAME.search(key)
            ]
        elif depth and hasattr(value, "api_key"):
            found += _secrets_of(value, depth - 1)
    return [secret for secret in dict.fromkeys(found) if secret]


def _model_name(obj: object) -> str | None:
    for name in ("model_name", "model"):
        value = getattr(obj, name, None)
        if isinstance(value, str):
            return value
    return None


def http_chat(
    base_url: str | None,
    model: str | None,
    api_key: str | None,
    settings: dict[str, Any],
    env: Mapping[str, str],
) -> HTTPChat:
    """The client of an OpenAI-compatible endpoint: ``base_url``, ``model`` and ``api_key`` as given, else
    from ``env`` (``FANFUSE_LLM_BASE_URL``, ``FANFUSE_LLM_MODEL``, the key variables), each checked."""
    base_url = base_url or env.get("FANFUSE_LLM_BASE_URL") or DEFAULT_BASE_URL
    if not base_url.startswith(("http://", "https://")):
        raise InvalidSetting(
            f"base_url (or FANFUSE_LLM_BASE_URL) must start with http:// or https:// (got {base_url!r})"
        )
    model = model or env.get("FANFUSE_LLM_MODEL")
    if not model:
        raise InvalidSetting("LLMExpander needs a model: pass model=... or set FANFUSE_LLM_MODEL")
    endpoint = Endpoint.parse(
        base_url.rstrip("/") + "/chat/completions", "base_url (or FANFUSE_LLM_BASE_URL)", shown=base_url
    )
    return HTTPChat(endpoint, model, _api_key(api_key, env), {"temperature": DEFAULT_TEMPERATURE, **settings})


_KEY_SOURCES = ("FANFUSE_LLM_API_KEY", "OPENAI_API_KEY")


def _api_key(given: object, env: Mapping[str, str]) -> str | None:
    """The key from the argument, else the first variable set; checked, surrounding whitespace removed.

    An error names where the key came from and what is wrong with it, never the key itself."""
    candidates = [("api_key", given), *((name, env.get(name)) for name in _KEY_SOURCES)]
    for source, value in candidates:
        if value is None or value == "":
            continue
        if not isinstance(value, str):
            raise TypeError(f"{source} must be a str or None (got {type(value).__name__})")
        key = value.strip()
        if not key:
            raise InvalidSetting(
                f"{source} is blank (whitespace only); leave it unset for a server without keys"
            )
        for position, char in enumerate(key, start=1):
            if not "!" <= char <= "~":
                raise InvalidSetting(
                    f"{source} must be printable ASCII without whitespace, but has {char_kind(char)} at "
                    f"position {position} (the key is not shown)"
                )
        return key
    return None
