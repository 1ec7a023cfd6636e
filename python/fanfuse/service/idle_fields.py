"""The request fields that do something only beside another setting: one given where the search would
not read it is refused (422 naming it, what it goes with and how to mend the request), as
`fanfuse search` refuses such a flag (``fanfuse.cli.idle_flags``). A field counts as given when it is
in the body, whatever its value, null included. The conversation (``history``) is the question's
context, not a setting: a chat client sends it with every request, and it is never refused for going
unread.

`tests/test_service_idle_fields.py` reads every field of the request from the OpenAPI schema: each is
either read by every search or has its rule here, and each rule's field is refused where it is idle.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, NamedTuple

from fanfuse._core import METHODS
from fanfuse.choices import AnyMethod
from fanfuse.idle_settings import GoesWith, first_idle, idle_message, read_by_method
from fanfuse.service.schema import SearchRequest


@dataclass(frozen=True)
class Server:
    """What a request's fields are read against: the server's expander and its defaults."""

    expander: Literal["heuristic", "llm"]
    expansion: bool
    max_variants: int
    method: AnyMethod
    rerank: str | None = None  # the reranker of the server's retriever, by its request name

    def expansion_on(self, request: SearchRequest) -> bool:
        """Whether the request's search expands: as the request says, else as the server does."""
        return self.expansion if request.expander is None else request.expander != "none"

    def expands(self, request: SearchRequest) -> bool:
        """Whether the search asks for variants: with one variant the question goes alone."""
        most = self.max_variants if request.max_variants is None else request.max_variants
        return self.expansion_on(request) and most > 1


class Asked(NamedTuple):
    """What a field's rule reads: the request and the server that answers it."""

    request: SearchRequest
    server: Server


FieldRule = GoesWith[Asked]


def _read_by_method(field: str, parameter: str) -> FieldRule:
    return read_by_method(
        field,
        parameter,
        lambda asked: asked.request.method or asked.server.method,
        "method",
        lambda method: (f'"method": "{method}"',),
        METHODS,  # a search fuses with no trained model
    )


RULES: tuple[FieldRule, ...] = (
    FieldRule(
        ("max_variants",),
        "query expansion (an expander other than none)",
        lambda asked: asked.server.expansion_on(asked.request),
    ),
    FieldRule(
        ("strategy",),
        "query expansion (an expander other than none, max_variants above 1)",
        lambda asked: asked.server.expands(asked.request),
    ),
    FieldRule(
        ("strategy",),
        "the LLM expander (a server started with `fanfuse serve --expander llm`)",
        lambda asked: asked.server.expander == "llm",
    ),
    # A method that reads no norm fuses as without one: "none" and null too are refused beside it,
    # as any norm is (the core itself lets "none" pass for such a method, as it lets no norm).
    _read_by_method("norm", "norm"),
    _read_by_method("rrf_k", "k"),
    _read_by_method("phi", "phi"),
    _read_by_method("sigma", "sigma"),
    _read_by_method("gamma", "gamma"),
    FieldRule(
        ("mmr_lambda",),
        "rerank mmr (the request's, else the server's own reranker)",
        lambda asked: (asked.request.rerank or asked.server.rerank) == "mmr",
        ('"rerank": "mmr"',),
    ),
)


def idle_field(request: SearchRequest, server: Server) -> tuple[str, str] | None:
    """The first field of ``request`` the search would not read, and the message refusing it."""
    idle = first_idle(RULES, request.model_fields_set, Asked(request, server))
    if idle is None:
        return None
    field, rule = idle
    return field, idle_message(field, rule, f"leave {field} out")
