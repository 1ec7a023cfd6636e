"""The JSON of `fanfuse serve`: the request of `POST /search` (the options of `fanfuse search`, by the
same names) and the shape of its answer (the JSON of `fanfuse search --json`), built from the
library's result types (`response_model`), so the OpenAPI schema names them as the library does.

The names each option accepts come from the core's own tables, so the OpenAPI schema lists them and a
name the core does not know is refused before any search runs.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import operator
import types
import typing
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StrictBool,
    StrictFloat,
    StrictInt,
    StrictStr,
    Tag,
    TypeAdapter,
    ValidationError,
    WithJsonSchema,
    create_model,
    field_validator,
    model_validator,
)
from pydantic_core import InitErrorDetails, PydanticCustomError

from fanfuse import _renamed
from fanfuse._core import METHODS, NORMS, TIE_BREAKS
from fanfuse.errors import InvalidFilter
from fanfuse.limits import CONVERSATION, LIMITS, REQUEST
from fanfuse.multiquery.conversation import ROLES
from fanfuse.multiquery.diagnostics import BranchReport
from fanfuse.multiquery.expand.llm_prompts import STRATEGIES
from fanfuse.multiquery.mmr import DEFAULT_MMR_LAMBDA, RERANKS
from fanfuse.multiquery.result_json import json_fields
from fanfuse.retrievers.filters import conditions

__all__ = ["RENAMED_FIELDS", "SearchRequest", "failed_search_model", "response_model"]

if not TYPE_CHECKING:  # at run time only: a type checker still refuses any name the module lacks
    __getattr__ = _renamed.module_getattr(__name__)  # an old name is refused naming its new spelling


# Old spellings of request fields: a request still sending one is refused (422) naming the new field,
# as `fanfuse search` refuses the old flag (`fanfuse.cli.flags.RENAMED`). `variants` is a list of
# query variants in Python, so their most per search is `max_variants`.
RENAMED_FIELDS: dict[str, str] = {"variants": "max_variants"}

# The option names the core accepts, each field's own list.
_NAMES = {
    "method": METHODS,
    "norm": NORMS,
    "tie_break": TIE_BREAKS,
    "strategy": tuple(STRATEGIES),
    "rerank": RERANKS,
}


# A metadata value a filter matches: its type, for the schema; what it means and whether it is
# accepted is `filters.conditions`' judgement, as for the command and a Python call. An int is any
# int (2**64 - 1 too, matched by value): bounding it here made a larger one a float, matching nothing.
_FilterScalar = (
    Annotated[StrictStr, Field(max_length=REQUEST.filter_value_chars)]
    | StrictBool
    | StrictInt
    | Annotated[StrictFloat, Field(allow_inf_nan=False)]
)
_FilterValue = (
    _FilterScalar | Annotated[list[_FilterScalar], Field(min_length=1, max_length=REQUEST.filter_values)]
)
# A key as the retrievers take it: not only white space.
_FilterKey = Annotated[str, Field(min_length=1, max_length=REQUEST.filter_key_chars, pattern=r"\S")]
# The OpenAPI schema of `filter` states those types; the field itself is read as JSON and judged by
# `_checked_filter`, so a refused filter is one error saying what `fanfuse search --filter` and a
# Python call say, not one per member of the type union.
_FILTER_SCHEMA = TypeAdapter(
    Annotated[dict[_FilterKey, _FilterValue], Field(max_length=REQUEST.filter_keys)]
).json_schema()


# The unknown fields of one object that validation names, each an `extra_forbidden` error; the others
# are counted in one more error at the object (its context's `unnamed`). Named one by one, the ~95,000
# unknown fields that fit in a body would make as many errors: seconds and hundreds of MB to build,
# name and answer.
_UNKNOWN_NAMED = 5


def _few_unknown(model: type[BaseModel], data: Any, validate: Callable[[Any], Any]) -> Any:
    """`validate(data)` (the model's own validation) with no more than _UNKNOWN_NAMED of the object's
    unknown fields in it, and the count of the rest: what validating it costs does not grow with
    the number of unknown fields beyond reading their names."""
    if not isinstance(data, dict) or len(data) <= _UNKNOWN_NAMED:
        return validate(data)
    fields = model.model_fields
    unknown = [name for name in data if name not in fields]
    if len(unknown) <= _UNKNOWN_NAMED:
        return validate(data)
    named = set(unknown[:_UNKNOWN_NAMED])
    errors: list[InitErrorDetails] = []
    try:
        validate({name: value for name, value in data.items() if name in fields or name in named})
    except ValidationError as error:  # always: the named unknown fields are in it
        errors = [
            InitErrorDetails(
                type=PydanticCustomError(e["type"], e["msg"], e.get("ctx")), loc=e["loc"], input=e["input"]
            )
            for e in error.errors(include_url=False)
        ]
    name = model.__name__
    rest = f"{{unnamed}} more fields are not fields of {name} (the first {_UNKNOWN_NAMED} are named)"
    counted = PydanticCustomError("extra_forbidden", rest, {"unnamed": len(unknown) - _UNKNOWN_NAMED})
    errors.append(InitErrorDetails(type=counted, loc=(), input=None))
    raise ValidationError.from_exception_data(name, errors)


def _one_of(name: str, description: str) -> Any:
    # null (the server's default, as left out) is one of the accepted values: the enum sits beside the
    # field's anyOf.
    return Field(None, description=description, json_schema_extra={"enum": [*_NAMES[name], None]})


def _number(key: str, description: str, most: int | None = None) -> Any:
    """The field of the LIMITS row `key` (so the OpenAPI schema states its range), at most `most`
    where one request may ask for less than the library."""
    limit = LIMITS[key]
    bounds: dict[str, Any] = {}
    if limit.low is not None:
        bounds["gt" if limit.low_open else "ge"] = limit.low
    if most is not None:
        bounds["le"] = most
    elif limit.high is not None:
        bounds["lt" if limit.high_open else "le"] = limit.high
    if limit.kind is float:
        bounds["allow_inf_nan"] = False
    accepted = limit.accepted() if most is None else f"an int from {int(limit.low or 0)} to {most}"
    # No default: left out, the field takes the server's (`fanfuse.service.defaults`).
    return Field(None, description=f"{description}: {accepted}", **bounds)


class Message(BaseModel):
    """One earlier turn of the conversation, as chat APIs write it."""

    model_config = ConfigDict(extra="forbid", strict=True)

    role: str = Field(description="who said it", json_schema_extra={"enum": list(ROLES)})
    content: str = Field(max_length=CONVERSATION.turn_chars, description="what was said")

    @model_validator(mode="wrap")
    @classmethod
    def _few_unknown(cls, data: Any, validate: Callable[[Any], Any]) -> Any:
        return _few_unknown(cls, data, validate)

    @field_validator("role")
    @classmethod
    def _known_role(cls, role: str) -> str:
        if role not in ROLES:
            raise ValueError(f"{role!r} is not one of {', '.join(ROLES)}")
        return role

    @field_validator("content")
    @classmethod
    def _unicode_content(cls, content: str) -> str:
        return _unicode(content)


# A user turn written as a bare string.
_UserTurn = Annotated[StrictStr, Field(max_length=CONVERSATION.turn_chars)]
# A message: an error inside one is located under `Message`, by this tag (its wrap validator would
# have the union name it `function-wrap[...]`).
_Message = Annotated[Message, Tag("Message")]


class SearchRequest(BaseModel):
    """One search: `fanfuse search`'s options as JSON fields (left out: the server's default, as GET
    /options lists it; `fanfuse serve`'s are the command's)."""

    # Strict: a JSON true is not the number 1, nor "10" the integer 10 (the schema says number).
    model_config = ConfigDict(extra="forbid", strict=True)

    query: str = Field(min_length=1, max_length=REQUEST.query_chars, description="the question")
    history: list[_UserTurn | _Message] | None = Field(
        None,
        max_length=CONVERSATION.turns,
        description="the conversation before the question, oldest first: user turns as strings, or "
        "messages; the search reads the most recent ones (docs/multiquery.md, Conversations)",
    )
    top_k: int | None = _number("top_k", "hits returned", most=REQUEST.top_k)
    expander: Literal["heuristic", "llm", "none"] | None = Field(
        None,
        description="the server's expander (heuristic: word-rewrite variants, the default; llm: a chat "
        "model's, where the server was started with `--expander llm`; see GET /healthz), or none: the "
        "question alone. Default: the server's, on unless started with `--expander none` or "
        "FANFUSE_QUERY_EXPANSION off",
    )
    strategy: str | None = _one_of(
        "strategy", "what the LLM expander asks for (a server with `--expander llm`; default its own)"
    )
    max_variants: int | None = _number(
        "max_variants", "the most query variants per search, the question included"
    )
    method: str | None = _one_of(
        "method", "fusion method (`fanfuse serve`'s default: rrf; GET /options lists this server's)"
    )
    norm: str | None = _one_of("norm", "score normalisation of the score methods")
    rrf_k: float | None = _number("k", "RRF constant k")
    phi: float | None = _number("phi", "RBC persistence (method rbc)")
    sigma: float | None = _number("sigma", "smoothing of logn_isr")
    gamma: float | None = _number("gamma", "exponent of the hit count of combgmnz")
    tie_break: str | None = _one_of("tie_break", "order of equal fused scores")
    filter: Annotated[dict[str, Any], WithJsonSchema(_FILTER_SCHEMA)] | None = Field(
        None,
        description="keep hits whose metadata key equals the value, or holds it in a list; a list here "
        "means any of its values; several keys must all match (docs/retrievers.md#filters)",
    )
    dense: bool | None = Field(
        None,
        description="hybrid BM25 + dense (default: as the server's index, see GET /healthz); false: "
        "BM25 only",
    )
    rerank: str | None = _one_of(
        "rerank",
        "reorder the fused hits: mmr, maximal marginal relevance over the index's stored vectors (needs "
        "the dense half); default none",
    )
    mmr_lambda: float | None = _number(
        "mmr_lambda",
        "with rerank mmr, relevance's weight against novelty "
        f"(`fanfuse serve`'s default: {DEFAULT_MMR_LAMBDA:g})",
    )

    @model_validator(mode="wrap")
    @classmethod
    def _few_unknown(cls, data: Any, validate: Callable[[Any], Any]) -> Any:
        return _few_unknown(cls, data, validate)

    @field_validator("query")
    @classmethod
    def _not_blank(cls, query: str) -> str:
        if not query.strip():
            raise ValueError("query must contain a word, not only white space")
        return _unicode(query)

    @field_validator("history")
    @classmethod
    def _unicode_turns(cls, history: list[str | Message] | None) -> list[str | Message] | None:
        for turn in history or []:
            if isinstance(turn, str):
                _unicode(turn)
        return history

    @field_validator("filter")
    @classmethod
    def _checked_filter(cls, filter: dict[str, Any] | None) -> dict[str, Any] | None:
        if filter is None:
            return None
        _within_request_bounds(filter)
        try:
            conditions(filter)
        except InvalidFilter as error:
            raise ValueError(str(error)) from None
        return filter

    @field_validator("method", "norm", "tie_break", "strategy", "rerank")
    @classmethod
    def _known_name(cls, value: str | None, info: Any) -> str | None:
        accepted = _NAMES[info.field_name]
        if value is not None and value not in accepted:
            raise ValueError(f"{value!r} is not one of {', '.join(accepted)}")
        return value


def _within_request_bounds(filter: dict[str, Any]) -> None:
    """What one request's filter may hold (`REQUEST`): sizes, which a Python call does not bound."""
    if len(filter) > REQUEST.filter_keys:
        raise ValueError(f"a filter has at most {REQUEST.filter_keys} keys (got {len(filter)})")
    for key, value in filter.items():
        name = repr(key if len(key) <= 40 else key[:40] + "...")
        if len(key) > REQUEST.filter_key_chars:
            raise ValueError(f"filter key {name} is longer than {REQUEST.filter_key_chars} characters")
        values = value if isinstance(value, list) else [value]
        if len(values) > REQUEST.filter_values:
            raise ValueError(f"filter[{name}] lists more than {REQUEST.filter_values} values")
        if any(isinstance(v, str) and len(v) > REQUEST.filter_value_chars for v in values):
            most = REQUEST.filter_value_chars
            raise ValueError(f"filter[{name}] has a value longer than {most} characters")


def _unicode(text: str) -> str:
    """`text` if it encodes as UTF-8 (JSON's escapes can spell a lone surrogate, which cannot)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as error:
        raise ValueError(f"not valid Unicode: {error.reason} at index {error.start}") from None
    return text


@functools.cache
def response_model(kind: type) -> type[BaseModel]:
    """The model of the JSON of the result type `kind` (`fanfuse.multiquery.result_json`): the same
    name, members, order and descriptions, for the OpenAPI schema of the answer."""
    members: dict[str, Any] = {
        member.name: (_json_type(member.kind), Field(description=member.description or None))
        for member in json_fields(kind)
    }
    return create_model(
        kind.__name__,
        __doc__=inspect.getdoc(kind),
        __config__=ConfigDict(extra="forbid"),
        **members,
    )


def failed_search_model() -> type[BaseModel]:
    """The model of the answer 503: every branch failed, each with its report."""
    branches: Any = list[response_model(BranchReport)]  # type: ignore[misc]
    return create_model(
        "AllBranchesFailed",
        __doc__="Every (variant x retriever) branch of the search failed.",
        __config__=ConfigDict(extra="forbid"),
        detail=(str, Field(description="how many branches failed, and each one's error")),
        branches=(branches, Field(description="each branch, with its error")),
    )


def _json_type(kind: Any) -> Any:
    """The type that the JSON of a value of the Python type `kind` has."""
    if kind is float:
        return float | None  # a float that is not finite is written as null
    if dataclasses.is_dataclass(kind):
        return response_model(kind)  # type: ignore[arg-type]
    origin, args = typing.get_origin(kind), typing.get_args(kind)
    if origin in (types.UnionType, typing.Union):
        return functools.reduce(operator.or_, (_json_type(arg) for arg in args))
    if origin is list:
        return list[_json_type(args[0])]  # type: ignore[misc]
    if origin in (dict, Mapping):
        return dict[str, Any]
    if kind in (str, int, bool, type(None)):
        return kind
    raise TypeError(f"a result type holds {kind!r}, which has no JSON type here")
