"""The search page of `fanfuse serve` opened from a link that carries a request field under its old
name (`RENAMED_FIELDS`), on either side of a comparison: in headless Chromium against a real
`fanfuse serve`, the page does not search, says what the service says of the old name, keeps the
rest of the link's settings filled in, and searches once the form is sent again; so with a field that
is gone (`REMOVED_SEARCH_OPTIONS`), refused with the service's reason. A link with a setting misspelt
is refused naming the setting; a parameter far from every setting is left alone."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

import pytest

pytest.importorskip("fastapi")
pytest.importorskip("uvicorn")

import httpx
from fanfuse._renamed import REMOVED_SEARCH_OPTIONS
from fanfuse.retrievers.tantivy_index import TantivyRetriever
from fanfuse.service.schema import RENAMED_FIELDS
from search_page_browser import browser, page, screenshot, wait_for, wait_ready, wait_searched
from search_page_site import DOCUMENTS, QUERY, TIMEOUT
from service_server import serve_command

__all__ = ["browser", "page"]  # the fixtures, imported for pytest

RENAMED = sorted(RENAMED_FIELDS.items())
SIDES = ("a", "b")


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    directory = tmp_path_factory.mktemp("search-page-renamed") / "idx"
    TantivyRetriever.build(DOCUMENTS, directory)
    with serve_command("--index", str(directory)) as (url, _):
        yield url


def parameter(side: str, name: str) -> str:
    """The link's parameter of a request field on `side` of the page."""
    return name if side == "a" else f"b.{name}"


def refusal(old: str, new: str) -> str:
    return f"{old} is renamed to {new}; use {new}"


@pytest.mark.parametrize("sides", [("a",), ("b",), SIDES], ids="+".join)
@pytest.mark.parametrize(("old", "new"), RENAMED, ids=[old for old, _ in RENAMED])
def test_a_link_with_an_old_field_name_is_refused_naming_the_new_one(
    page: Any, server: str, old: str, new: str, sides: tuple[str, ...]
) -> None:
    kept = {
        "q": QUERY,
        "turn": "user:tell me about owls",
        "compare": "1",
        "method": "combmnz",
        "b.method": "rrf",
        "b.top_k": "3",
    }
    page.get(f"{server}/?{urlencode(kept | {parameter(side, old): '3' for side in sides})}")
    wait_ready(page)
    refusals = [refusal(parameter(side, old), parameter(side, new)) for side in sides]
    status = page.find_element("id", "status")
    assert status.text.split("\n") == refusals
    assert "bad" in status.get_attribute("class").split()
    # The words are the service's own for the same field in a request.
    answer = httpx.post(f"{server}/search", json={"query": QUERY, old: 3}, timeout=TIMEOUT)
    assert answer.status_code == 422
    assert [error["msg"] for error in answer.json()["detail"]] == [refusal(old, new)]
    # No search was started (it would have said "searching…" and shown an answer).
    assert page.execute_script("return document.body.dataset.searches") is None
    assert page.find_element("id", "answers").get_attribute("childElementCount") == "0"
    # The rest of the link is still in the form; the old value is not moved to the new name.
    assert page.find_element("id", "query").get_attribute("value") == QUERY
    turns = page.find_elements("css selector", ".turn textarea")
    assert [turn.get_attribute("value") for turn in turns] == ["tell me about owls"]
    assert page.find_element("id", "compare").is_selected()
    for name, control in (("method", "a-method"), ("b.method", "b-method"), ("b.top_k", "b-top_k")):
        assert page.find_element("id", control).get_attribute("value") == kept[name], name
    for side in sides:
        assert page.find_element("id", f"{side}-{new}").get_attribute("value") == ""
        assert page.find_element("id", f"settings-{side}").get_attribute("open") is not None
    screenshot(page, f"renamed-{'+'.join(sides)}-{old}")
    # Sent again from the form, the search runs and its link no longer carries the old name.
    page.find_element("css selector", "button[type=submit]").click()
    wait_searched(page)
    assert not {parameter(side, old) for side in sides} & set(parse_qs(urlsplit(page.current_url).query))
    assert "bad" not in status.get_attribute("class").split()
    # Back to the refused link: refused again, and the answer of the other link is not left shown.
    page.back()
    wait_for(page, lambda d: status.text.split("\n") == refusals, "the page did not refuse the link again")
    assert page.find_element("id", "answers").get_attribute("childElementCount") == "0"


def misspelt(name: str) -> str:
    return name[:-2] + name[-1]  # its last but one letter dropped


def test_a_link_with_a_setting_misspelt_is_refused_naming_the_setting(page: Any, server: str) -> None:
    """Every request field the page shows, misspelt on both sides at once, among parameters that are
    not the page's (a mail's or a site's tracking)."""
    fields = [field["name"] for field in httpx.get(f"{server}/options", timeout=TIMEOUT).json()["fields"]]
    known = {"q", "turn", "compare", "b.history", *(parameter(side, f) for side in SIDES for f in fields)}
    meant = {parameter(side, misspelt(f)): parameter(side, f) for side in SIDES for f in fields}
    assert not set(meant) & known
    others = {"utm_source": "mail", "fbclid": "IwAR0x"}
    page.get(f"{server}/?{urlencode({'q': QUERY, **dict.fromkeys(meant, '3'), **others})}")
    wait_ready(page)
    status = page.find_element("id", "status")
    lines = status.text.split("\n")
    assert len(lines) == len(meant), lines
    for line, (wrong, setting) in zip(lines, meant.items(), strict=True):
        head = f"{wrong} is not a setting of this page (did you mean "
        assert line.startswith(head) and line.endswith("?)"), line
        assert setting in line[len(head) : -2].split(" or "), line
    assert "bad" in status.get_attribute("class").split()
    assert page.execute_script("return document.body.dataset.searches") is None
    screenshot(page, "misspelt")
    # The parameters that are not the page's alone: searched.
    page.get(f"{server}/?{urlencode({'q': QUERY, **others})}")
    wait_searched(page)
    assert "bad" not in page.find_element("id", "status").get_attribute("class").split()
    assert page.find_element("id", "answers").get_attribute("childElementCount") != "0"


REMOVED = sorted(REMOVED_SEARCH_OPTIONS)


@pytest.mark.parametrize("sides", [("a",), ("b",), SIDES], ids="+".join)
@pytest.mark.parametrize("name", REMOVED)
def test_a_link_with_a_field_that_is_gone_is_refused_with_the_services_reason(
    page: Any, server: str, name: str, sides: tuple[str, ...]
) -> None:
    kept = {"q": QUERY, "compare": "1", "b.method": "combmnz"}
    page.get(f"{server}/?{urlencode(kept | {parameter(side, name): 'max' for side in sides})}")
    wait_ready(page)
    status = page.find_element("id", "status")
    # The words are the service's own for the same field in a request.
    answer = httpx.post(f"{server}/search", json={"query": QUERY, name: "max"}, timeout=TIMEOUT)
    assert answer.status_code == 422
    (said,) = [error["msg"] for error in answer.json()["detail"]]
    assert said.startswith(f"{name} is removed: ")
    assert status.text.split("\n") == [said.replace(name, parameter(side, name), 1) for side in sides]
    assert "bad" in status.get_attribute("class").split()
    assert page.execute_script("return document.body.dataset.searches") is None
    assert page.find_element("id", "answers").get_attribute("childElementCount") == "0"
    assert page.find_element("id", "b-method").get_attribute("value") == "combmnz"
    # Sent again from the form, the search runs without it.
    page.find_element("css selector", "button[type=submit]").click()
    wait_searched(page)
    assert not {parameter(side, name) for side in sides} & set(parse_qs(urlsplit(page.current_url).query))
    assert "bad" not in status.get_attribute("class").split()


def unheld(field: dict[str, Any]) -> str | None:
    """A value the field's control cannot hold (None for a text box, which holds any text)."""
    if "enum" in field:
        return field["enum"][0].upper() + "?"  # a name in other letters is not the name
    return {"integer": "abc", "number": "1,5", "boolean": "yes"}.get(field["type"])


def test_a_link_with_a_value_its_setting_cannot_hold_is_refused_naming_it(page: Any, server: str) -> None:
    """Every field of /options whose control is a number box or a list, given a value it cannot
    hold, on both sides at once; and the page's own parameters likewise. A control would drop such
    a value without a word, so the search would run without the setting."""
    fields = httpx.get(f"{server}/options", timeout=TIMEOUT).json()["fields"]
    bad = {
        parameter(side, field["name"]): unheld(field)
        for side in SIDES
        for field in fields
        if unheld(field) is not None
    }
    assert {"top_k", "b.top_k", "method", "b.method", "dense", "b.dense"} <= set(bad)
    own = {"compare": "yes", "b.history": "all"}
    page.get(f"{server}/?{urlencode({'q': QUERY, 'turn': 'bot:hi', **bad, **own})}")
    wait_ready(page)
    status = page.find_element("id", "status")
    lines = status.text.split("\n")
    roles = httpx.get(f"{server}/options", timeout=TIMEOUT).json()["roles"]
    assert lines[0] == f"turn=bot:hi is not ROLE:TEXT with ROLE one of {', '.join(roles)}"
    refused = {line.split("=", 1)[0]: line for line in lines[1:]}
    assert set(refused) == set(bad) | set(own), lines
    for name, value in bad.items():
        assert refused[name].startswith(f"{name}={value} is not a value of {name.removeprefix('b.')}: "), name
    assert refused["compare"] == "compare=yes is not a value of compare: 1 (or leave it out)"
    assert "bad" in status.get_attribute("class").split()
    assert page.execute_script("return document.body.dataset.searches") is None
    screenshot(page, "unheld-values")
