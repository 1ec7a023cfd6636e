"""The ASGI app of `fanfuse serve`: `POST /search`, `GET /healthz`, the OpenAPI schema and the
search page (`GET /`, `fanfuse.service.page`).

FastAPI: the request is a pydantic model, so a bad field is refused with 422 naming it, and the same
model is the OpenAPI schema the API is fuzzed from. Searches are `MultiQueryRetriever.asearch` on the
server's event loop: the retrievers run in their own threads (sync) or as tasks (async), so a search
never blocks the loop, and fusion releases the GIL.

A search answers exactly as `fanfuse search --index` (`fanfuse.open_index`): the same options by the
same names, the same JSON (`fanfuse search --json`). A failing branch is
reported in the diagnostics and the others are fused (200); only when every branch fails is the
answer 503, with each branch's error.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
from collections.abc import AsyncIterator, Collection
from typing import Any, Literal

from fastapi import FastAPI
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response

from fanfuse import __version__
from fanfuse._core import FusionError
from fanfuse.errors import InputError
from fanfuse.index_retriever import open_index
from fanfuse.limits import REQUEST
from fanfuse.multiquery import AllBranchesFailed, LLMExpander, MultiQueryRetriever, SearchResult
from fanfuse.multiquery.fusion import search_name
from fanfuse.multiquery.mmr import named_reranker
from fanfuse.multiquery.result_json import as_data
from fanfuse.retrievers.tantivy_index import TantivyRetriever
from fanfuse.service.defaults import server_accepts, server_defaults
from fanfuse.service.head import HeadAsGet
from fanfuse.service.idle_fields import Server, idle_field
from fanfuse.service.page import page_router
from fanfuse.service.requests import (
    BODY_REFUSALS,
    BoundedBody,
    CheckedBodyRoute,
    Refusal,
    refusal,
    validation_refusal,
)
from fanfuse.service.schema import SearchRequest, failed_search_model, response_model

__all__ = ["app_for_index", "create_app"]

try:
    import orjson as _orjson
except ImportError:  # pragma: no cover - fanfuse[serve] installs it
    _orjson = None  # type: ignore[assignment]


class BadField(Exception):
    """A request whose `field` the search refused: answered 422 in FastAPI's own error shape."""

    def __init__(self, field: str | None, message: str):
        super().__init__(message)
        self.field = field

    def response(self) -> JSONResponse:
        location = ["body"] if self.field is None else ["body", self.field]
        return refusal([{"type": "value_error", "loc": location, "msg": str(self)}])


def app_for_index(
    index: str | os.PathLike[str] | TantivyRetriever,
    *,
    dense: bool | None = None,
    name: str | None = None,
    **overrides: Any,
) -> FastAPI:
    """The app over an index built by `fanfuse index`, with `fanfuse.open_index`'s defaults; `dense`
    as `open_index`'s (None: hybrid where the index stores vectors), `overrides` (e.g. the `expander`,
    `expansion`) as its keyword arguments. A request's `"dense": false` searches BM25 alone. Given a
    directory, the server searches a private copy of the index, checked at open: a file changed under
    it afterwards (`cp` over a live index) can neither crash it nor change its answers; given an
    opened `TantivyRetriever`, that one. `name`: the index as /healthz names it (default: its
    directory)."""
    bm25 = index if isinstance(index, TantivyRetriever) else TantivyRetriever(index, private_copy=True)
    retriever = open_index(bm25, dense=dense, **overrides)
    bm25_only = open_index(bm25, dense=False, **overrides) if "dense" in retriever.retriever_names else None
    app = create_app(retriever, bm25_only=bm25_only, index=name or str(bm25.directory))
    if bm25 is not index:
        _close_at_shutdown(app, bm25)
    return app


def _close_at_shutdown(app: FastAPI, index: TantivyRetriever) -> None:
    """The index the app opened (and its private copy, on disk) goes when the app shuts down, after
    its retrievers: not at the process's exit, which a process serving one app after another (a
    reload, a test) may not reach for long."""
    served = app.router.lifespan_context

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[Any]:
        try:
            async with served(app) as state:
                yield state
        finally:
            index.close()

    app.router.lifespan_context = lifespan


def create_app(
    retriever: MultiQueryRetriever,
    *,
    bm25_only: MultiQueryRetriever | None = None,
    index: str | None = None,
) -> FastAPI:
    """The app over `retriever` (closed when the app shuts down). `bm25_only`: the one a request with
    `"dense": false` searches, where `retriever` has a dense half."""
    hybrid = "dense" in retriever.retriever_names
    expander: Literal["heuristic", "llm"] = (
        "llm" if isinstance(retriever.expander, LLMExpander) else "heuristic"
    )
    defaults = server_defaults(retriever, expander, hybrid)
    server = Server(
        expander,
        retriever.config.expansion,
        retriever.config.max_variants,
        retriever.fusion.method,
        defaults["rerank"],
    )

    @contextlib.asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        try:
            yield
        finally:
            retriever.close()
            if bm25_only is not None:
                bm25_only.close()

    app = FastAPI(
        title="fanfuse",
        version=__version__,
        summary="Multi-query retrieval with rank fusion over one index (`fanfuse search` as a service).",
        lifespan=lifespan,
        # Swagger UI and ReDoc load their scripts from a CDN: off, so that nothing the server
        # answers depends on another origin. The search page (GET /) and /openapi.json stay.
        docs_url=None,
        redoc_url=None,
    )
    app.router.route_class = CheckedBodyRoute
    app.add_exception_handler(RequestValidationError, validation_refusal)
    app.add_middleware(BoundedBody)
    app.add_middleware(HeadAsGet)

    def chosen(dense: bool | None) -> MultiQueryRetriever:
        if dense is None or dense == hybrid:
            return retriever
        if dense:
            raise BadField(
                "dense",
                "the server's index has no dense retriever: start it with `fanfuse serve --dense`, "
                "or leave dense out",
            )
        return bm25_only if bm25_only is not None else retriever

    def check_fields(request: SearchRequest) -> None:
        """A request may name the server's expander or none, and gives no field the search would not
        read (``fanfuse.service.idle_fields``)."""
        if request.expander is not None and request.expander not in server_accepts(expander)["expander"]:
            raise BadField(
                "expander",
                f"this server's expander is {expander}: ask for {expander} or none (`fanfuse serve "
                "--expander llm ...` serves the LLM expander)",
            )
        idle = idle_field(request, server)
        if idle is not None:
            raise BadField(*idle)

    app.include_router(page_router(retriever, expander=expander, hybrid=hybrid))

    @app.get("/healthz", summary="Liveness: the server answers and which retrievers it searches")
    async def healthz() -> dict[str, Any]:
        return {
            "status": "ok",
            "index": index,
            "retrievers": retriever.retriever_names,
            "dense": hybrid,
            # What a search that names no expander gets: none on a server started with
            # `--expander none`, whose expander still serves a request asking for it.
            "expander": defaults["expander"],
        }

    @app.post(
        "/search",
        summary="Multi-query search: hits with provenance, and how each branch went",
        response_model=None,  # the answer is built as JSON directly; its shape is documented below
        responses={
            200: {
                "model": response_model(SearchResult),
                "description": "the fused hits (partial when degraded)",
            },
            **BODY_REFUSALS,
            413: {"model": Refusal, "description": f"the body is longer than {REQUEST.body_bytes} bytes"},
            422: {
                "model": Refusal,
                "description": "a field of the request is refused (`detail[].loc` names it), or the body "
                "is not JSON",
            },
            503: {
                "model": failed_search_model(),
                "description": "every branch failed; `branches` holds each one's error",
            },
        },
    )
    async def search(request: SearchRequest) -> Response:
        try:
            check_fields(request)
            searcher = chosen(request.dense)
            options = search_options(request)
            try:
                # A request that weighs the reranker without naming one weighs the server's own; the
                # reranker a request names weighs as the server lists it where the request is silent.
                rerank, mmr_lambda = request.rerank, request.mmr_lambda
                if rerank is None and mmr_lambda is not None:
                    rerank = defaults["rerank"]
                if rerank is not None and mmr_lambda is None:
                    mmr_lambda = defaults["mmr_lambda"]
                reranker = named_reranker(rerank, searcher.retrievers, mmr_lambda)
                if reranker is not None:
                    options["reranker"] = reranker
                result = await searcher.asearch(request.query, **options)
            except AllBranchesFailed as failed:
                branches = [as_data(branch) for branch in failed.branches]
                return JSONResponse({"detail": str(failed), "branches": branches}, status_code=503)
            except (FusionError, InputError) as error:
                raise BadField(refused_field(error, request.model_fields_set), str(error)) from None
        except BadField as bad:
            return bad.response()
        return Response(json_bytes(as_data(result)), media_type="application/json")

    return app


def search_options(request: SearchRequest) -> dict[str, Any]:
    """The options the request gives as `MultiQueryRetriever.search` keywords: one it leaves out is
    the retriever's own, as `fanfuse.service.defaults` lists it."""
    given = request.model_dump(
        exclude={"query", "dense", "expander", "rerank", "mmr_lambda"}, exclude_unset=True, exclude_none=True
    )
    options = dict(given)  # each field is the search option of its name
    if request.expander is not None:
        options["expansion"] = request.expander != "none"
    return options


# What a refusal quotes (an id, a method's name, a value): names nothing of the request. An apostrophe
# inside a word (`the method's`) opens no quote.
_QUOTED = re.compile(r"\"(?:[^\"\\]|\\.)*\"|(?<!\w)'[^']*'(?!\w)")
# Fields whose names are words of any message about a search: a refusal names them by starting with them.
_CONTEXT_FIELDS = ("query", "history")


def refused_field(error: ValueError, given: Collection[str]) -> str | None:
    """The request field that `error`, a refusal by the search, is about; None where it names no one
    field. In order: the option the core refused (`error.option`, by the search's name); the field
    its message starts with (`top_k must be ...`); the one field among those the request `given`
    that the message names outside its quotes in what it says to change, after its last `; ` (a
    refusal made while fusing: `the fused score of id "a" is inf under method 'combgmnz': ...; lower
    gamma, ...`). What the message says before that is what happened, under whatever settings: a
    field it names there (the method) is not the one to change."""
    option: str | None = getattr(error, "option", None)
    if option is not None and search_name(option) in SearchRequest.model_fields:
        return search_name(option)
    message = str(error)
    leading = next((name for name in SearchRequest.model_fields if message.startswith(f"{name} ")), None)
    if leading is not None:
        return leading
    _, remedy_follows, remedy = message.rpartition("; ")
    words = set(re.findall(r"\w+", _QUOTED.sub(" ", remedy))) if remedy_follows else set()
    named = [name for name in given if name in words and name not in _CONTEXT_FIELDS]
    return named[0] if len(named) == 1 else None


def json_bytes(data: Any) -> bytes:
    """Compact strict JSON; a payload value JSON has no type for is written as its str, as
    `fanfuse search --json` writes it. orjson where installed (`fanfuse[serve]` installs it): the
    same document, written 5-10x faster; the standard library for what orjson refuses (an int
    beyond 64 bits, a non-str key other than int, float, bool or None)."""
    if _orjson is not None:
        try:
            encoded: bytes = _orjson.dumps(data, default=str, option=_orjson.OPT_NON_STR_KEYS)
            return encoded
        except TypeError:
            pass
    text = json.dumps(data, ensure_ascii=False, default=str, allow_nan=False, separators=(",", ":"))
    return text.encode("utf-8")
