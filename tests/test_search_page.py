"""The search page of `fanfuse serve` (GET /), in headless Chromium against a real `fanfuse serve`
process: a search, a conversation, a failing branch, compare, documents holding markup, the
Content Security Policy (no console errors), a phone's width; a screenshot of each is kept under
test-artifacts/search-page/. What the page shows is checked against the server's own JSON answer
to the same request. The checks that need no browser: tests/test_search_page_files.py."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import pytest

pytest.importorskip("fastapi")
pytest.importorskip("uvicorn")

import httpx
from fanfuse.multiquery import MultiQueryRetriever
from fanfuse.retrievers.tantivy_index import TantivyRetriever
from fanfuse.service import create_app
from fanfuse.service.schema import SearchRequest
from multiquery_toys import FailingRetriever
from search_page_browser import browser, console_errors, page, screenshot, wait_ready, wait_searched
from search_page_site import QUERY, TIMEOUT, XSS_DOCUMENTS, XSS_QUERY, answer, index_dir, server
from service_server import serve_command, serving

__all__ = ["browser", "index_dir", "page", "server"]  # the fixtures, imported for pytest


def shown(driver: Any, css: str) -> list[str]:
    return [node.text for node in driver.find_elements("css selector", css)]


def shown_ids(section: Any) -> list[str]:
    return [node.text for node in section.find_elements("css selector", ".hit .id")]


def test_a_search_shows_variants_the_fused_list_and_branches(page: Any, server: str) -> None:
    page.get(f"{server}/?{urlencode({'q': QUERY})}")
    wait_searched(page)
    data = answer(server, {"query": QUERY})
    diagnostics = data["diagnostics"]
    rows = page.find_elements("css selector", "table.variants tbody tr")
    assert [row.text.split("\n") for row in rows] == [
        [f"{i} {v['text']} {v['source']} {v['weight']:.2f}"] for i, v in enumerate(diagnostics["variants"])
    ]
    section = page.find_element("css selector", ".answer")
    assert shown_ids(section) == [hit["id"] for hit in data["hits"]]
    hits = page.find_elements("css selector", ".hit")
    for element, hit in zip(hits, data["hits"], strict=True):
        assert hit["payload"]["text"] in element.find_element("css selector", ".doc").text
        others = [key for key in hit["payload"] if key not in ("title", "text")]
        assert shown_list(element, ".payload dt") == others
        # One bar piece per (variant, retriever) that added to the score, and each named below it.
        pieces = element.find_elements("css selector", ".bar span")
        assert len(pieces) == sum(1 for p in hit["provenance"] if (p["contribution"] or 0) > 0)
        listed = [line.rsplit(" +", 1) for line in shown_list(element, ".found li")]
        assert [label for label, _ in listed] == [
            f"[{p['variant_index']}] {p['retriever']} rank {p['rank']}" for p in hit["provenance"]
        ]
        for (_, share), p in zip(listed, hit["provenance"], strict=True):
            assert float(share) == pytest.approx(p["contribution"], abs=5.1e-6)  # shown to 5 decimals
    branches = shown(page, ".branch .what")
    assert len(branches) == len(diagnostics["branches"])
    for text, branch in zip(branches, diagnostics["branches"], strict=True):
        assert text.startswith(f"{branch['hits']} hits, ") and text.endswith(" ms")
    assert not page.find_elements("css selector", ".degraded")
    screenshot(page, "search")


def shown_list(element: Any, css: str) -> list[str]:
    return [" ".join(node.text.split()) for node in element.find_elements("css selector", css)]


def test_the_form_builds_a_conversation_and_its_link_reproduces_it(page: Any, server: str) -> None:
    """Typed and submitted with the keyboard alone; the URL it leaves opens the same search."""
    from selenium.webdriver.common.keys import Keys

    page.get(f"{server}/")
    wait_ready(page)
    add = page.find_element("id", "add-turn")
    add.send_keys(Keys.ENTER)
    page.switch_to.active_element.send_keys("tell me about owls")
    add.send_keys(Keys.ENTER)
    page.switch_to.active_element.send_keys("a turn that is removed")
    page.find_elements("css selector", ".turn .remove")[1].send_keys(Keys.ENTER)
    query = page.find_element("id", "query")
    query.send_keys(QUERY, Keys.ENTER)
    wait_searched(page)
    history = [{"role": "user", "content": "tell me about owls"}]
    data = answer(server, {"query": QUERY, "history": history})
    assert "history" in {v["source"] for v in data["diagnostics"]["variants"]}
    sources = [row.text.split()[-2] for row in page.find_elements("css selector", "table.variants tbody tr")]
    assert sources == [v["source"] for v in data["diagnostics"]["variants"]]
    assert shown_ids(page.find_element("css selector", ".answer")) == [hit["id"] for hit in data["hits"]]
    assert "1 earlier turn" in page.find_element("css selector", ".answer h2").text
    screenshot(page, "conversation")
    link = page.current_url
    assert "turn=user%3Atell+me+about+owls" in link
    page.get(link)
    wait_searched(page)
    assert shown_ids(page.find_element("css selector", ".answer")) == [hit["id"] for hit in data["hits"]]
    assert [t.get_attribute("value") for t in page.find_elements("css selector", ".turn textarea")] == [
        "tell me about owls"
    ]


def test_compare_marks_each_hits_move(page: Any, server: str) -> None:
    """With the conversation and RRF (A) against without it and CombMNZ (B)."""
    question, turn = "do they hunt by day", "tell me about owls and hawks"
    settings = {"q": question, "turn": f"user:{turn}", "method": "rrf", "compare": "1"}
    settings |= {"b.method": "combmnz", "b.history": "none"}
    page.get(f"{server}/?{urlencode(settings)}")
    wait_searched(page)
    a = answer(server, {"query": question, "history": [{"role": "user", "content": turn}], "method": "rrf"})
    b = answer(server, {"query": question, "method": "combmnz"})
    assert [hit["id"] for hit in a["hits"]] != [hit["id"] for hit in b["hits"]]  # something moved
    sides = page.find_elements("css selector", ".answer")
    assert len(sides) == 2
    ranks = [{hit["id"]: rank for rank, hit in enumerate(side["hits"], 1)} for side in (a, b)]
    for i, (section, data) in enumerate(zip(sides, (a, b), strict=True)):
        assert shown_ids(section) == [hit["id"] for hit in data["hits"]]
        other, name = ranks[1 - i], "BA"[i]
        moves = shown_list(section, ".hit .move")
        expected = []
        for rank, hit in enumerate(data["hits"], 1):
            there = other.get(hit["id"])
            if there is None:
                expected.append(f"not in {name}")
            elif there == rank:
                expected.append(f"= {name}")
            else:
                expected.append(f"{'▲' if there > rank else '▼'}{abs(there - rank)} (#{there} in {name})")
        assert moves == expected
    assert "method=combmnz" in sides[1].find_element("css selector", "h2").text
    for summary in page.find_elements("css selector", "#settings-a summary, #settings-b summary"):
        summary.click()  # the link opened the options it set; folded, the answers are in view
    screenshot(page, "compare")


def reversed_order(query: str, hits: Sequence[Any]) -> list[float]:
    """A reranker that puts the fused list's last hit first."""
    return [float(i) for i in range(len(hits))]


def test_a_failing_branch_is_shown_and_the_answer_degraded(browser: Any, index_dir: Path) -> None:
    """A second retriever whose index server is unreachable (a test double: the local index cannot
    fail that way), served by the real app in a uvicorn server; the hits reranked."""
    retriever = MultiQueryRetriever(
        [TantivyRetriever(index_dir), FailingRetriever()], max_variants=2, reranker=reversed_order
    )
    with serving(create_app(retriever, index="two retrievers")) as url:
        console_errors(browser)
        browser.get(f"{url}/?{urlencode({'q': QUERY})}")
        wait_searched(browser)
        data = answer(url, {"query": QUERY})
        banner = browser.find_element("css selector", ".degraded").text
        assert banner.startswith("degraded") and "2 of 4 branches failed" in banner
        failed = shown(browser, ".branch.failed .what")
        assert len(failed) == 2
        assert all("error: ConnectionError: index server unreachable" in text for text in failed)
        assert shown_ids(browser.find_element("css selector", ".answer")) == [
            hit["id"] for hit in data["hits"]
        ]
        reranked = [f"rerank {hit['rerank_score']:.4f}" for hit in data["hits"]]
        assert shown(browser, ".hit .head .muted") == reranked
        screenshot(browser, "failing-branch")
        assert console_errors(browser) == []


def test_a_hybrid_index_splits_each_score_by_variant_and_retriever(page: Any, hybrid_dir: Path) -> None:
    """BM25 and the dense retrievers: every (variant, retriever) piece of every bar, each retriever
    in its own shade of the variant's colour."""
    with serve_command("--index", str(hybrid_dir)) as (url, _):
        page.get(f"{url}/?{urlencode({'q': 'what hunts mice at night'})}")
        wait_searched(page)
        data = answer(url, {"query": "what hunts mice at night"})
        retrievers = sorted({b["retriever"] for b in data["diagnostics"]["branches"]})
        assert len(retrievers) > 1 and "dense" in retrievers
        for element, hit in zip(page.find_elements("css selector", ".hit"), data["hits"], strict=True):
            pieces = element.find_elements("css selector", ".bar span")
            given = [p for p in hit["provenance"] if (p["contribution"] or 0) > 0]
            assert [piece.get_attribute("title").split(":")[0] for piece in pieces] == [
                f"[{p['variant_index']}] {p['retriever']} #{p['rank']}" for p in given
            ]
            shades = {piece.get_attribute("class").split()[1] for piece in pieces}
            assert len(shades) == len({p["retriever"] for p in given})
        screenshot(page, "hybrid")


def test_documents_holding_markup_run_nothing_and_read_as_text(page: Any, server: str) -> None:
    """Markup in the documents, in the question (so in the variants) and in a turn."""
    question = f"{XSS_QUERY} <img src=x onerror=\"window.pwned='query'\">"
    turn = "user:<script>window.pwned = 'turn'</script> owls"
    page.get(f"{server}/?{urlencode({'q': question, 'turn': turn})}")
    wait_searched(page)
    section = page.find_element("css selector", ".answer")
    text = section.text
    assert shown(page, "table.variants tbody tr td.text")[0] == question
    for document in XSS_DOCUMENTS:
        for value in (document["id"], document["title"], document["text"]):
            assert value in text, value
    assert "window.pwned='payload img'" in text
    # Nothing ran, and none of the markup became an element.
    assert page.execute_script("return window.pwned === undefined")
    assert page.title == "fanfuse search"
    assert not section.find_elements("css selector", "script, img, svg, b")
    for hit in section.find_elements("css selector", ".hit .title"):  # the title's onmouseover
        page.execute_script("arguments[0].dispatchEvent(new MouseEvent('mouseover', {bubbles: true}))", hit)
    assert page.execute_script("return window.pwned === undefined")
    screenshot(page, "markup-documents")


def test_every_branch_failing_shows_each_error(browser: Any) -> None:
    """The 503 answer: each branch's error on the timeline (a retriever whose index server is
    unreachable, a test double)."""
    with serving(create_app(MultiQueryRetriever([FailingRetriever()], max_variants=2))) as url:
        console_errors(browser)
        browser.get(f"{url}/?{urlencode({'q': 'what is rank fusion'})}")
        wait_searched(browser)
        assert browser.find_element("css selector", ".answer .error").text.startswith(
            "503: all 2 branches failed"
        )
        failed = shown(browser, ".branch.failed .what")
        assert len(failed) == 2 and all("ConnectionError: index server unreachable" in t for t in failed)
        # The only console error is the browser's note of the 503 answer.
        assert [entry["source"] for entry in console_errors(browser)] == ["network"]


def test_the_policy_blocks_inline_script(page: Any, server: str) -> None:
    """The CSP is in force: a script element written into the page (as a rendering bug might) does
    not run, and the browser reports the violation."""
    page.get(f"{server}/")
    wait_ready(page)
    page.execute_script(
        "const s = document.createElement('script'); s.textContent = 'window.pwned = 1';"
        "document.body.append(s);"
    )
    assert page.execute_script("return window.pwned === undefined")
    errors = console_errors(page)
    assert errors and all("Content Security Policy" in entry["message"] for entry in errors)


def test_every_request_field_has_a_control_with_the_servers_default(page: Any, server: str) -> None:
    schema = httpx.get(f"{server}/openapi.json", timeout=TIMEOUT).json()
    fields = schema["components"]["schemas"]["SearchRequest"]["properties"]
    options = {f["name"]: f for f in httpx.get(f"{server}/options", timeout=TIMEOUT).json()["fields"]}
    assert (
        set(options)
        == set(fields) - {"query", "history"}
        == set(SearchRequest.model_fields)
        - {
            "query",
            "history",
        }
    )
    assert options["method"]["default"] == "rrf" and options["max_variants"]["default"] == 4
    page.get(f"{server}/")
    wait_ready(page)
    for name, field in options.items():
        control = page.find_element("id", f"a-{name}")
        hint = (
            control.find_element("css selector", "option").get_attribute("textContent")
            if control.tag_name == "select"
            else control.get_attribute("placeholder")
        )
        default = field["default"]
        if isinstance(default, bool | str):
            assert hint == f"default {str(default).lower()}", (name, hint)
        elif default is not None:
            assert float(hint.removeprefix("default ")) == default, (name, hint)
        else:
            assert hint in ("default", '{"key": "value"}'), (name, hint)


def sample(field: dict[str, Any]) -> Any:
    """A value of the field's type, as the request would carry it."""
    if "enum" in field:
        return field["enum"][-1]
    return {"integer": 2, "number": 0.5, "boolean": False, "object": {"kind": "bird"}}[field["type"]]


def test_every_request_field_goes_from_a_link_into_the_request(browser: Any, server: str) -> None:
    """Each field of /options set in the URL, for A and for B: the page's request carries it (its
    heading lists what it sent), whatever the server then says of the combination."""
    options = httpx.get(f"{server}/options", timeout=TIMEOUT).json()["fields"]
    values = {field["name"]: sample(field) for field in options}
    text = {name: value if isinstance(value, str) else json.dumps(value) for name, value in values.items()}
    settings = {"q": QUERY, "compare": "1", **text, **{f"b.{name}": value for name, value in text.items()}}
    browser.get(f"{server}/?{urlencode(settings)}")
    wait_searched(browser)
    for heading in shown(browser, ".answer h2"):
        for name, value in values.items():
            sent = value if isinstance(value, str) else json.dumps(value, separators=(",", ":"))
            assert f"{name}={sent.lower()}" in heading, (name, heading)
    console_errors(browser)  # the server may refuse the combination (strategy without a model)


def test_a_refused_option_names_its_field(browser: Any, server: str) -> None:
    console_errors(browser)
    browser.get(f"{server}/?{urlencode({'q': QUERY, 'top_k': '0'})}")
    wait_searched(browser)
    refusal = browser.find_element("css selector", ".answer ul.error").text
    assert refusal.startswith("top_k: ")
    # The only console error is the browser's note of the 422 answer.
    assert [entry["source"] for entry in console_errors(browser)] == ["network"]


def test_a_filter_is_sent_as_json_and_bad_json_is_named(page: Any, server: str) -> None:
    settings = {"q": QUERY, "filter": json.dumps({"kind": "bird"})}
    page.get(f"{server}/?{urlencode(settings)}")
    wait_searched(page)
    data = answer(server, {"query": QUERY, "filter": {"kind": "bird"}})
    assert shown_ids(page.find_element("css selector", ".answer")) == [hit["id"] for hit in data["hits"]]
    assert {hit["payload"]["kind"] for hit in data["hits"]} == {"bird"}
    # The options the link set are shown open.
    assert page.find_element("id", "settings-a").get_attribute("open") is not None
    filter_box = page.find_element("id", "a-filter")
    filter_box.clear()
    filter_box.send_keys("kind=bird")
    page.find_element("css selector", "button[type=submit]").click()
    assert page.find_element("id", "status").text.startswith("filter: not JSON (")


def test_at_a_phones_width_nothing_overflows(page: Any, server: str) -> None:
    settings = {"q": QUERY, "turn": "user:tell me about owls", "compare": "1", "b.history": "none"}
    page.set_window_size(390, 844)
    page.get(f"{server}/?{urlencode(settings)}")
    wait_searched(page)
    assert page.execute_script(
        "return document.documentElement.scrollWidth <= document.documentElement.clientWidth"
    )
    screenshot(page, "phone")
