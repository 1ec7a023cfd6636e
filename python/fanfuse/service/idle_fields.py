"""The request fields that do something only beside another setting: one given where the search would
not read it is refused (422 naming it, what it goes with and how to mend the request), as
`fanfuse search` refuses such a flag (``fanfuse.cli.idle_flags``). A field counts as given when it is
in the body, whatever its value. The conversation (``history``) is the question's context, not a
setting: a chat client sends it with every request, and it is never refused for going unread.

`tests/test_service_idle_fields.py` reads every field of the request from the OpenAPI schema: each is
either read by every search or has its rule here, and each rule's field is refused where it is idle.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from fanfuse.choices import AnyMethod
from fanfuse.options import methods_reading
from fanfuse.service.schema import SearchRequest


@dataclass(frozen=True)
class Server:
    """What a request's fields are read against: the server's expander and its defaults."""

    expander: Literal["heuristic", "llm"]
    expansion: bool
    max_variants: int
    method: AnyMethod

    def expansion_on(self, request: SearchRequest) -> bool:
        """Whether the request's search expands: as the request says, else as the server does."""
        return self.expansion if request.expander is None else request.expander != "none"

    def expands(self, request: SearchRequest) -> bool:
        """Whether the search asks for variants: with one variant the question goes alone."""
        most = self.max_variants if request.max_variants is None else request.max_variants
        return self.expansion_on(request) and most > 1


@dataclass(frozen=True)
class GoesWith:
    """``fields`` are read only where ``holds(request, server)``: with ``needs``, as the message says."""

    fields: tuple[str, ...]
    needs: str
    holds: Callable[[SearchRequest, Server], bool]
    add: str = ""  # the JSON member that makes it hold, where one does (the message offers it)


def _read_by_method(field: str, parameter: str) -> GoesWith:
    methods = methods_reading(parameter)
    return GoesWith(
        (field,),
        "method " + " or ".join(methods),
        lambda request, server: (request.method or server.method) in methods,
        f'"method": "{methods[0]}"',
    )


RULES: tuple[GoesWith, ...] = (
    GoesWith(
        ("max_variants",),
        "query expansion (an expander other than none)",
        lambda request, server: server.expansion_on(request),
    ),
    GoesWith(
        ("strategy",),
        "query expansion (an expander other than none, max_variants above 1)",
        lambda request, server: server.expands(request),
    ),
    GoesWith(
        ("strategy",),
        "the LLM expander (a server started with `fanfuse serve --expander llm`)",
        lambda request, server: server.expander == "llm",
    ),
    _read_by_method("rrf_k", "k"),
    _read_by_method("phi", "phi"),
    _read_by_method("sigma", "sigma"),
    _read_by_method("gamma", "gamma"),
    GoesWith(
        ("mmr_lambda",), "rerank mmr", lambda request, server: request.rerank == "mmr", '"rerank": "mmr"'
    ),
)


def idle_field(request: SearchRequest, server: Server) -> tuple[str, str] | None:
    """The first field of ``request`` the search would not read, and the message refusing it."""
    for rule in RULES:
        idle = [field for field in rule.fields if field in request.model_fields_set]
        if idle and not rule.holds(request, server):
            field = idle[0]
            mend = f" or give {rule.add}" if rule.add else ""
            return field, f"{field} goes with {rule.needs} and would do nothing here; leave {field} out{mend}"
    return None
