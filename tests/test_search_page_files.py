"""The search page's files and headers, without a browser: each file served under the Content
Security Policy, none of them parsing a string as markup or code, none naming another origin; the
API docs pages that would load a CDN's scripts are not served."""

from __future__ import annotations

import re
from importlib import resources

import pytest

pytest.importorskip("fastapi")

from fanfuse.multiquery import MultiQueryRetriever
from fanfuse.service import create_app
from fanfuse.service.page import CONTENT_SECURITY_POLICY
from fanfuse.service.schema import RENAMED_FIELDS
from fastapi.testclient import TestClient
from multiquery_toys import KeywordRetriever


def test_the_page_is_served_under_its_content_security_policy() -> None:
    with TestClient(create_app(MultiQueryRetriever([KeywordRetriever()]))) as http:
        html = http.get("/")
        assert html.headers["content-type"].startswith("text/html")
        served = ["/", *(f"/page/{name}" for name, _ in PAGE_FILES if name != "index.html")]
        assert {f"/{path}" for path in re.findall(r'(?:src|href)="(page/[^"]+)"', html.text)} <= set(served)
        for path in served:
            response = http.get(path)
            assert response.status_code == 200, path
            assert response.headers["content-security-policy"] == CONTENT_SECURITY_POLICY
            assert response.headers["x-content-type-options"] == "nosniff"
            # A query string changes nothing (no route takes a parameter from it).
            again = http.get(path, params={"name": "bogus"})
            assert again.status_code == 200 and again.content == response.content, path
        for path in ["/page/nope.js", "/page/index.html", "/page/..%2Fpage.py", "/page/"]:
            assert http.get(path).status_code == 404, path
        # Swagger UI and ReDoc would load their scripts from a CDN: not served.
        assert http.get("/docs").status_code == 404 and http.get("/redoc").status_code == 404


def test_the_pages_options_carry_the_renamed_fields() -> None:
    """The page refuses a link's old field names from the server's own table, not a copy of it."""
    with TestClient(create_app(MultiQueryRetriever([KeywordRetriever()]))) as http:
        assert http.get("/options").json()["renamed_fields"] == RENAMED_FIELDS


PAGE_FILES = sorted(
    (path.name, path.read_text(encoding="utf-8"))
    for path in resources.files("fanfuse.service").joinpath("page").iterdir()
    if path.name.endswith((".html", ".js", ".css", ".svg"))
)


@pytest.mark.parametrize(("name", "text"), PAGE_FILES, ids=[name for name, _ in PAGE_FILES])
def test_the_page_files_parse_no_markup_and_name_no_other_origin(name: str, text: str) -> None:
    """Every file of the page: no API that parses a string as HTML or code, no inline script or
    style, no address of another origin (the SVG's XML namespace is a name, not a request)."""
    for banned in ("innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval(", "Function("):
        assert banned not in text, (name, banned)
    assert not re.search(r"<script(?![^>]*\bsrc=)[^>]*>", text), name
    assert not re.search(r"\sstyle=|<style", text), name
    assert not re.search(r"\bon[a-z]+=", text), name
    addresses = set(re.findall(r"https?://[\w.-]+|(?:src|href)=\"//", text)) - {"http://www.w3.org"}
    assert not addresses, (name, addresses)
