"""The search page of `fanfuse serve` (`GET /`) and the options it is built from (`GET /options`).

The page is static files in the package (`page/`): HTML, CSS and two JavaScript modules, with no
build step and nothing fetched from another origin. It asks the server for `/healthz`, `/options` and
`POST /search`, and writes every text it shows as text (`textContent`), never as markup. Each file
is answered with a Content Security Policy that allows only this server's own scripts and styles,
so neither a document's text nor a variant can run code in the page, even if a rendering bug let
one through as markup.

`/options` lists the request fields from `SearchRequest`'s own JSON schema (the page has no list
of options of its own) with this server's defaults (`fanfuse.service.defaults`, the table the search
applies), the old names of renamed fields
(`RENAMED_FIELDS`) and the fields that are gone, each with why (`REMOVED_SEARCH_OPTIONS`), so that the
page refuses a link using one as the service refuses the field.
"""

from __future__ import annotations

from collections.abc import Mapping
from importlib import resources
from typing import Any

from fastapi import APIRouter
from fastapi.responses import Response

from fanfuse._renamed import REMOVED_SEARCH_OPTIONS, refusing_old_keywords
from fanfuse.multiquery import MultiQueryRetriever
from fanfuse.service.defaults import server_accepts, server_defaults
from fanfuse.service.requests import CheckedBodyRoute, refused
from fanfuse.service.schema import RENAMED_FIELDS, SearchRequest

__all__ = ["CONTENT_SECURITY_POLICY", "page_router"]

CONTENT_SECURITY_POLICY = (
    "default-src 'self'; script-src 'self'; style-src 'self'; object-src 'none'; "
    "base-uri 'none'; frame-ancestors 'none'; form-action 'self'"
)
_HEADERS = {
    "Content-Security-Policy": CONTENT_SECURITY_POLICY,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-cache",
}
# The page's files: the name each is served under, and its media type.
_FILES = {
    "index.html": "text/html; charset=utf-8",
    "page.css": "text/css; charset=utf-8",
    "page.js": "text/javascript; charset=utf-8",
    "answer.js": "text/javascript; charset=utf-8",
    "icon.svg": "image/svg+xml",
}
# Request fields the page shows in its own way (the question box, the conversation turns).
_OWN_CONTROLS = ("query", "history")


@refusing_old_keywords
def page_router(
    retriever: MultiQueryRetriever,
    *,
    expander: str,
    hybrid: bool,
    option_of_field: dict[str, str] | None = None,
) -> APIRouter:
    """The routes of the page over `retriever` (whose settings are the defaults it shows), where
    the server's expander is `expander`, its index `hybrid` or not, and `option_of_field` maps a request
    field to the retriever's name for it where they differ (none do for `fanfuse serve`'s request)."""
    files = {name: (resources.files(__package__) / "page" / name).read_bytes() for name in _FILES}
    options = {
        "fields": request_fields(
            server_defaults(retriever, expander, hybrid, option_of_field), server_accepts(expander)
        ),
        "roles": SearchRequest.model_json_schema()["$defs"]["Message"]["properties"]["role"]["enum"],
        "renamed_fields": RENAMED_FIELDS,
        "removed_fields": REMOVED_SEARCH_OPTIONS,
    }
    router = APIRouter(route_class=CheckedBodyRoute)  # as the app's own routes: a body is read alike

    def served(name: str) -> Response:
        return Response(files[name], media_type=_FILES[name], headers=_HEADERS)

    @router.get("/", include_in_schema=False)
    async def page() -> Response:
        return served("index.html")

    @router.get("/page/{name}", include_in_schema=False)
    async def page_file(name: str) -> Response:
        if name not in files or name == "index.html":
            return refused(404, "Not Found")
        return served(name)

    @router.get("/options", summary="The request fields of POST /search, with this server's defaults")
    async def request_options() -> dict[str, Any]:
        return options

    return router


def request_fields(defaults: dict[str, Any], accepts: Mapping[str, tuple[str, ...]]) -> list[dict[str, Any]]:
    """Each request field as the page builds its control: name, JSON type, accepted names (those of
    `accepts` where the server takes fewer than the schema) or range, description and this server's
    default (`fanfuse.service.defaults`: what the search applies)."""
    schema = SearchRequest.model_json_schema()
    fields = []
    for name, spec in schema["properties"].items():
        if name in _OWN_CONTROLS:
            continue
        kinds = [s for s in spec.get("anyOf", [spec]) if s.get("type") != "null"]
        kind = kinds[0] if kinds else {}
        field: dict[str, Any] = {
            "name": name,
            "type": kind.get("type", "string"),
            "description": spec.get("description", ""),
            "default": defaults[name],
        }
        if enum := spec.get("enum", kind.get("enum")):
            taken = accepts.get(name)
            field["enum"] = [
                value for value in enum if value is not None and (taken is None or value in taken)
            ]
        for bound in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"):
            if bound in kind:
                field[bound] = kind[bound]
        fields.append(field)
    return fields
