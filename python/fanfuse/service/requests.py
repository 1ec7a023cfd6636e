"""What a request to `fanfuse serve` may spend, and how a refused one is answered.

- The body: at most `REQUEST.body_bytes` (`fanfuse.limits`). A longer one is read to its end and
  dropped, chunk by chunk, and answered 413 before any of it is parsed, so a hostile body costs the
  server time but no memory; the request fields' own bounds (list lengths, string lengths) are in
  the schema and answered 422.
- Every refused field is answered 422 in one shape, `{"detail": [{"loc", "msg", "type"}]}`: what
  the request held is not echoed back. Echoing it is what made a NaN, an infinity or a lone
  surrogate (none of which JSON can encode) a 500, and a refused 1 MB string a 1 MB answer.
- A refusal is a few kB, and costs no more than reading the body, whatever the body holds: it lists
  the first _LISTED errors and counts the rest in one more entry (`more_errors`), and validation
  names only the first few unknown fields of an object and counts the others
  (`schema._few_unknown`). A model's fields are listed once, with its first unknown field.
- Every refusal (400, 413, 415, 422) is built through one model, `Refusal`, which the OpenAPI schema
  declares for each of those statuses.
- An unknown field is refused with a message that names the fields accepted where it stands, the
  closest first, as the command refuses an unknown flag; under its old name (`schema.RENAMED_FIELDS`),
  naming the new one, as the command refuses an old flag.
- A body is JSON sent with content-type application/json (or a `+json` type) and encoded as UTF-8,
  as RFC 8259 (section 8.1) has JSON exchanged between systems: one sent as another type, or with
  none, is answered 415 saying so (RFC 9110's status for content in a format the resource does not
  take, as other JSON APIs answer), not read as a string that then fails to be the request object;
  one in another encoding (UTF-16 and UTF-32, which Python's JSON parser would read, Latin-1) is
  answered 400 naming the rule. A charset parameter changes nothing (RFC 8259 defines none): the
  bytes are judged.
- A body JSON cannot parse is 422 `json_invalid` too: a number of more digits than Python converts
  and nesting deeper than its parser recurses included (the framework answers those 400).

None of this depends on the JSON library that parses the body or writes the answer.
"""

from __future__ import annotations

import codecs
import collections
import email.message
import typing
from collections.abc import Callable, Coroutine, Iterable, Mapping, Sequence
from typing import Any

from fastapi import Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from fastapi.routing import APIRoute
from pydantic import BaseModel, ConfigDict, Field
from starlette.exceptions import HTTPException  # what FastAPI raises for a body it cannot parse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from fanfuse._renamed import REMOVED_SEARCH_OPTIONS
from fanfuse.limits import REQUEST, closest_names
from fanfuse.service.schema import RENAMED_FIELDS, SearchRequest

__all__ = [
    "BODY_REFUSALS",
    "BoundedBody",
    "CheckedBodyRoute",
    "Refusal",
    "refusal",
    "refused",
    "validation_refusal",
]

# The most characters of a message or a location part that a refusal shows.
_SHOWN_CHARS = 300
# The most characters of an unknown field's name that its message repeats (its location shows it too).
_NAME_CHARS = 40
# The most errors a refusal lists, each with its message; one more entry counts the rest.
_LISTED = 10


class RefusedField(BaseModel):
    """One thing refused in a request: where it is, and what is wrong there."""

    model_config = ConfigDict(extra="forbid")

    type: str = Field(
        description="what is wrong, by pydantic's name for it (`missing`, `extra_forbidden`, "
        "`json_invalid`...); `value_error` for a value the search refuses; `more_errors` for the count "
        "of the errors not listed"
    )
    loc: list[str | int] = Field(
        description="where: `body`, then the field and the positions inside it (for `more_errors`, "
        "what holds all of them)"
    )
    msg: str = Field(description="what is wrong, and what is accepted there")


class Refusal(BaseModel):
    """A request answered without a search, and why: the shape of every refusal (400, 413, 415,
    422). Each is built through this model, so the schema it declares is the one answered."""

    model_config = ConfigDict(extra="forbid")

    detail: str | list[RefusedField] = Field(
        description="what the body must be, in a sentence (400, 413, 415); or each refused field, "
        "the first few listed and the rest counted (422)"
    )


def refused(status: int, detail: str | list[Any], headers: Mapping[str, str] | None = None) -> JSONResponse:
    """The answer `status` refusing a request for `detail` (a sentence, or the refused fields)."""
    return JSONResponse(Refusal(detail=detail).model_dump(), status_code=status, headers=headers)


class BoundedBody:
    """ASGI middleware: reads a request's body up to `most` bytes and hands it on whole; a longer body
    is drained without being kept and answered 413."""

    def __init__(self, app: ASGIApp, most: int = REQUEST.body_bytes):
        self.app = app
        self.most = most

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        chunks: list[bytes] = []
        size, more = 0, True
        while more:
            message = await receive()
            if message["type"] != "http.request":  # the client left: nothing to answer
                return
            chunk = message.get("body", b"")
            size += len(chunk)
            if size <= self.most:
                chunks.append(chunk)
            more = bool(message.get("more_body"))
        if size > self.most:
            detail = f"the request body has {size} bytes; the most one request may send is {self.most}"
            await refused(413, detail)(scope, receive, send)
            return
        body, handed = b"".join(chunks), False

        async def replay() -> Message:
            nonlocal handed
            if handed:
                return await receive()
            handed = True
            return {"type": "http.request", "body": body, "more_body": False}

        await self.app(scope, replay, send)


# What a route that takes a body answers for one it does not read (`CheckedBodyRoute`), for its
# `responses`: FastAPI reads their models while it makes the route.
BODY_REFUSALS: dict[int | str, dict[str, Any]] = {
    400: {
        "model": Refusal,
        "description": "the body is not UTF-8 (RFC 8259, section 8.1): UTF-16, UTF-32, Latin-1...",
    },
    415: {
        "model": Refusal,
        "description": "the body is not sent with content-type application/json, or is compressed",
    },
}
# The byte order marks of the encodings RFC 8259 leaves out, longest first (UTF-32 LE's starts as
# UTF-16 LE's does).
_MARKS = (
    (codecs.BOM_UTF32_BE, "UTF-32 (big-endian)"),
    (codecs.BOM_UTF32_LE, "UTF-32 (little-endian)"),
    (codecs.BOM_UTF16_BE, "UTF-16 (big-endian)"),
    (codecs.BOM_UTF16_LE, "UTF-16 (little-endian)"),
)


# The NUL bytes (True) of the first four bytes of a JSON text in each encoding without a byte order
# mark (RFC 4627, section 3), by the pattern they make.
_WIDE = {
    (True, True, True, False): "UTF-32 (big-endian)",
    (True, False, True, False): "UTF-16 (big-endian)",
    (False, True, True, True): "UTF-32 (little-endian)",
    (False, True, False, True): "UTF-16 (little-endian)",
}


class CheckedBodyRoute(APIRoute):
    """A route whose body, where it takes one, is read only as JSON sent with content-type
    application/json (else 415) and encoded as UTF-8 (else 400), each answered with what the body
    must be; and whose unparsable JSON body is a 422 `json_invalid`, as FastAPI answers most of them,
    where FastAPI answers 400 for the rest (an over-long number, too deep a nesting)."""

    def __init__(self, path: str, endpoint: Callable[..., Any], **settings: Any) -> None:
        super().__init__(path, endpoint, **settings)
        if self.body_field is not None and not BODY_REFUSALS.keys() <= self.responses.keys():
            raise TypeError(f"{path} takes a body: add BODY_REFUSALS to its responses, which it answers")

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()
        takes_body = self.body_field is not None

        async def handle(request: Request) -> Response:
            if takes_body:
                unread = await _unread_body(request)
                if unread is not None:
                    return unread
            try:
                return await handler(request)
            except HTTPException as error:
                cause = error.__cause__
                if error.status_code != 400 or isinstance(cause, UnicodeDecodeError) or cause is None:
                    raise
                return refusal(
                    [{"loc": ["body"], "msg": f"JSON decode error: {cause}", "type": "json_invalid"}]
                )

        return handle


async def _unread_body(request: Request) -> JSONResponse | None:
    """The answer to a body that is not JSON sent as such (415) or not UTF-8 (400); None for one the
    route reads."""
    # An empty coding list is no coding (RFC 9110, section 8.4).
    coding = request.headers.get("content-encoding", "").strip().lower() or "identity"
    if coding != "identity":
        # RFC 9110, section 15.5.16: 415 for a content coding the resource does not take, with
        # Accept-Encoding saying which it does; read as it is, the body would be refused as not UTF-8.
        detail = f"the body must be sent uncompressed (got content-encoding {_shown(coding)}); send it as is"
        return refused(415, detail, headers={"Accept-Encoding": "identity"})
    given = request.headers.get("content-type")
    header = email.message.Message()
    header["content-type"] = given or ""
    subtype = header.get_content_subtype()
    if (
        not given
        or header.get_content_maintype() != "application"
        or not (subtype == "json" or subtype.endswith("+json"))
    ):
        got = f"got {_shown(given)}" if given else "got no content-type"
        detail = f"the body must be JSON sent with content-type application/json ({got})"
        return refused(415, detail, headers={"Accept-Post": "application/json"})
    encoding = _not_utf8(await request.body())
    if encoding is None:
        return None
    charset = header.get_param("charset")
    said = f" (its content-type says charset={_shown(str(charset))}: JSON has no charset)" if charset else ""
    detail = (
        "the body must be JSON encoded as UTF-8 (RFC 8259, section 8.1: JSON exchanged between systems "
        f"is UTF-8); {encoding}{said}"
    )
    return refused(400, detail)


def _not_utf8(body: bytes) -> str | None:
    """What `body` is instead of UTF-8, or None where it is UTF-8 (a UTF-8 byte order mark, which RFC
    8259 lets a reader ignore, included). A JSON text starts with an ASCII character, so UTF-16 and
    UTF-32 without a byte order mark show the NUL bytes of RFC 4627's patterns in its first four
    (`00 00 00 xx`, `00 xx 00 xx`, `xx 00 00 00`, `xx 00 xx 00`): Python's parser reads such a body as
    UTF-16 or UTF-32, so it is refused before. Another NUL is a UTF-8 body that is no JSON, which the
    parser refuses."""
    for mark, encoding in _MARKS:
        if body.startswith(mark):
            return f"this one is {encoding}, with a byte order mark"
    nul = tuple(byte == 0 for byte in body[:4])
    wide = _WIDE.get(nul) if len(nul) == 4 else None
    if wide is not None:
        return f"this one is {wide}: the NUL bytes of its first four"
    try:
        body.decode("utf-8")
    except UnicodeDecodeError as error:
        byte = body[error.start]
        return f"byte 0x{byte:02X} at {error.start} is not UTF-8 (Latin-1 or Windows-1252 text, for one)"
    return None


def refusal(errors: Sequence[Mapping[str, Any]]) -> JSONResponse:
    """The 422 answer of refused fields: each error's location, message and type only, every string
    made encodable and cut to a few hundred characters; past the first _LISTED errors, one more entry
    counts the rest. So a refusal is a few kB whatever the body holds."""
    listed = [*errors[:_LISTED], *_counted(errors[_LISTED:])]
    detail = [
        {
            "type": _shown(str(error["type"])),
            "loc": [part if isinstance(part, int) else _shown(str(part)) for part in error["loc"]],
            "msg": _shown(str(error["msg"])),
        }
        for error in listed
    ]
    return refused(422, detail)


def _counted(unlisted: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """The entry that counts the errors a refusal does not list, at the place that holds them all."""
    if not unlisted:
        return []
    place = list(unlisted[0]["loc"])
    for error in unlisted[1:]:
        loc = list(error["loc"])
        while loc[: len(place)] != place:
            place.pop()
    kinds = collections.Counter(str(error["type"]) for error in unlisted)
    of = ", ".join(f"{count} {kind}" for kind, count in kinds.most_common())
    return [{"type": "more_errors", "loc": place, "msg": f"{len(unlisted)} more errors, not listed: {of}"}]


async def validation_refusal(_: Request, error: Exception) -> JSONResponse:
    """FastAPI's handler of RequestValidationError: the same answer as every other refusal."""
    assert isinstance(error, RequestValidationError)
    errors = error.errors()
    return refusal([*_unknown_named(errors[:_LISTED]), *errors[_LISTED:]])


def _unknown_named(errors: Iterable[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """`errors` with each unknown field's message naming what is accepted there: the new name of an
    old spelling (`RENAMED_FIELDS`), else the object that holds it and the closest of its fields,
    and with the first unknown field of each model, all of its fields. The count of the unknown
    fields an object holds past the few named (`schema._few_unknown`) keeps its message."""
    named: list[Mapping[str, Any]] = []
    listed: set[str] = set()  # the models whose fields a message lists already
    for error in errors:
        loc = list(error["loc"])
        counted = "unnamed" in (error.get("ctx") or {})
        if error["type"] == "extra_forbidden" and len(loc) >= 2 and not counted:
            error = {**error, "msg": _unknown_field(loc, listed)}
        named.append(error)
    return named


def _unknown_field(loc: Sequence[Any], listed: set[str]) -> str:
    """The message of the unknown field at `loc` (`body`, ..., its name); the fields of its model are
    listed where the model is not in `listed`, to which it is then added."""
    name = str(loc[-1])
    new = RENAMED_FIELDS.get(name) if len(loc) == 2 else None
    if new is not None:
        return f"{name} is renamed to {new}; use {new}"
    if len(loc) == 2 and name in REMOVED_SEARCH_OPTIONS:
        return f"{name} is removed: {REMOVED_SEARCH_OPTIONS[name]}"
    shown = name if len(name) <= _NAME_CHARS else name[:_NAME_CHARS] + "..."
    model = _model_at(loc[1:-1])
    if model is None:
        return f"{shown} is not a field here"
    fields = list(model.model_fields)
    close = closest_names(name, fields)
    guess = f" (did you mean {' or '.join(close)}?)" if close else ""
    if model.__name__ in listed:
        return f"{shown} is not a field of {model.__name__}{guess}"
    listed.add(model.__name__)
    return f"{shown} is not a field of {model.__name__}{guess}; its fields: {', '.join(fields)}"


def _model_at(path: Sequence[Any]) -> type[BaseModel] | None:
    """The request model of the object at `path` from the body: fields lead into their models, list
    positions and the union member pydantic names by its model stay where they are."""
    model: type[BaseModel] | None = SearchRequest
    for part in path:
        if model is None or isinstance(part, int) or part == model.__name__:
            continue
        field = model.model_fields.get(str(part))
        model = _model_in(field.annotation) if field is not None else None
    return model


def _model_in(annotation: Any) -> type[BaseModel] | None:
    """The first model among `annotation` and the types it is made of (`list[str | Message] | None`)."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    return next(filter(None, map(_model_in, typing.get_args(annotation))), None)


def _shown(text: str) -> str:
    """`text` as UTF-8 can carry it (a lone surrogate as its escape), cut to _SHOWN_CHARS."""
    if len(text) > _SHOWN_CHARS:
        text = text[:_SHOWN_CHARS] + "..."
    return text.encode("utf-8", "backslashreplace").decode("utf-8")
