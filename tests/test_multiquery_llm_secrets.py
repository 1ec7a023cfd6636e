"""No fragment of the API key, in any spelling, reaches anything a user sees.

A server (real sockets: tests/llm_server.py) echoes the ``Authorization`` header wherever server text
can go: the reason phrase, a ``Location`` header, a body that is not JSON, a JSON error, broken JSON
content, the model's answer as lines, as JSON, as a ``hyde`` passage; the echo is spelled raw,
JSON-escaped, URL-encoded or as Python's ``repr``, and cut anywhere. The key is generated (printable
ASCII, backslashes, quotes and ``%`` included). Every client kind goes through it (``base_url``, and the
openai, LangChain and LlamaIndex clients), and every place the text can surface is read: the fallback
reason and note, the WARNING log line, the diagnostics and the result's ``repr``, what ``fanfuse
search`` prints (table, ``--explain`` and ``--json``) and the service's answer.
"""

from __future__ import annotations

import asyncio
import contextlib
import html
import io
import json
import logging
from collections.abc import Callable, Iterator
from pathlib import Path
from urllib.parse import quote, quote_plus

import pytest
from fanfuse.cli import explain, main, render
from fanfuse.multiquery import MultiQueryRetriever, SearchResult
from fanfuse.multiquery.expand.llm_redact import MIN_FRAGMENT, Redactor
from fanfuse.multiquery.result_json import as_data
from fanfuse.retrievers.tantivy_index import TantivyRetriever
from fanfuse.service.app import json_bytes
from hypothesis import HealthCheck, assume, example, given, settings
from hypothesis import strategies as st
from llm_clients import KINDS, expander_for
from llm_server import ECHO, Reply, ScriptedChatServer, completion
from multiquery_toys import KeywordRetriever

QUERY = "what is reciprocal rank fusion"

# Where a server puts the text it echoes, and the strategy asked for.
PLACES: dict[str, tuple[Reply, str]] = {
    "reason phrase": (Reply(401, b'{"error": "unauthorized"}', reason=f"Unauthorized {ECHO}"), "paraphrase"),
    # Port 1 of this machine: nothing listens there (a user's openai client follows redirects).
    "location header": (Reply(302, b"", headers={"Location": f"http://127.0.0.1:1/?k={ECHO}"}), "paraphrase"),
    "body not JSON": (Reply(200, f"<html><body>denied for {ECHO}</body></html>".encode()), "paraphrase"),
    "JSON error": (Reply(200, f'{{"error": "invalid key {ECHO}"}}'.encode()), "paraphrase"),
    "error status with a body": (Reply(403, f'{{"error": {{"message": "bad {ECHO}"}}}}'.encode()), "entity"),
    "broken JSON content": (Reply(200, completion('{"queries": ["' + ECHO + '", "rank fus')), "stepback"),
    "answer lines": (Reply(200, completion(f"Your key: {ECHO}\nrank fusion explained")), "decompose"),
    "answer JSON": (Reply(200, completion('{"queries": ["' + ECHO + '", "rank fusion"]}')), "paraphrase"),
    "hyde passage": (Reply(200, completion(f"Fusion needs the key {ECHO} to rank.")), "hyde"),
}  # fmt: skip

# How the server spells what it echoes.
RESPELL: dict[str, Callable[[str], str]] = {
    "raw": str,
    "JSON": lambda text: json.dumps(text)[1:-1],
    "URL": lambda text: quote(text, safe=""),
    "URL+": lambda text: quote_plus(text, safe=""),
    "repr": lambda text: repr(text)[1:-1],
}


def oracle_spellings(key: str) -> set[str]:
    """The key as a reader could meet it, written here independently of the redactor: raw, JSON, repr,
    URL-encoded (either hex case), HTML, and each of those spelled again (JSON of a repr...)."""
    ways: list[Callable[[str], str]] = [
        lambda t: json.dumps(t)[1:-1],
        lambda t: json.dumps(t, ensure_ascii=False)[1:-1],
        lambda t: json.dumps(t)[1:-1].replace("/", "\\/"),
        lambda t: repr(t)[1:-1],
        lambda t: t.replace("\\", "\\\\").replace("'", "\\'"),
        lambda t: quote(t, safe=""),
        lambda t: quote(t, safe="").lower(),
        lambda t: quote(t),
        lambda t: quote_plus(t, safe=""),
        html.escape,
    ]
    once = {key} | {way(key) for way in ways}
    return once | {way(text) for text in once for way in ways}


def leaked(key: str, text: str, besides: str = "") -> str | None:
    """A fragment of ``MIN_FRAGMENT`` characters (or the whole, if shorter) of a spelling in ``text``
    (and not in ``besides``)."""
    for spelled in oracle_spellings(key):
        length = min(MIN_FRAGMENT, len(spelled))
        for start in range(len(spelled) - length + 1):
            fragment = spelled[start : start + length]
            if fragment in text and fragment not in besides:
                return fragment
    return None


# Printable ASCII, the key's own alphabet. A fragment of digits only could meet a timing in the output
# by chance (0.000001), so such keys are left out; any other 8 characters of our own words would be
# a coincidence of 1 in 94**8.
_KEYS = st.text(st.characters(min_codepoint=33, max_codepoint=126), min_size=20, max_size=80)


def _keyable(key: str) -> bool:
    windows = (key[i : i + MIN_FRAGMENT] for i in range(len(key) - MIN_FRAGMENT + 1))
    return not any(sum(c.isdigit() or c in ".-" for c in w) >= MIN_FRAGMENT - 1 for w in windows)


@contextlib.contextmanager
def logged() -> Iterator[io.StringIO]:
    """Everything the fanfuse loggers write meanwhile."""
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    logger = logging.getLogger("fanfuse")
    logger.addHandler(handler)
    previous = logger.level
    logger.setLevel(logging.DEBUG)
    try:
        yield stream
    finally:
        logger.removeHandler(handler)
        logger.setLevel(previous)


def surfaces(result: SearchResult, shown_repr: str, log: str) -> dict[str, str]:
    """Every place a search's text reaches a user."""
    expansion = result.diagnostics.expansion
    return {
        "fallback_reason": expansion.fallback_reason or "",
        "note": expansion.note or "",
        "log": log,
        "repr": repr(result) + repr(result.diagnostics) + shown_repr,
        "summary": result.diagnostics.summary(),
        "table": "\n".join(
            render.variant_lines(result) + render.hit_table(result) + explain.explain_lines(result)
        ),
        "json": render.as_json(result),
        "service": json_bytes(as_data(result)).decode(),
    }


@pytest.fixture(scope="module")
def echo_server() -> Iterator[ScriptedChatServer]:
    server = ScriptedChatServer()
    server.start()
    yield server
    server.stop()


@pytest.mark.parametrize("kind", KINDS)
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    key=_KEYS,
    place=st.sampled_from(list(PLACES)),
    respell=st.sampled_from(list(RESPELL)),
    cut=st.tuples(st.integers(0, 90), st.integers(0, 90)),
    mode=st.sampled_from(["sync", "async"]),
)
# A key with an escape, echoed raw into a JSON string: the reader decodes it (a newline), which once
# broke the run the redactor removed and left the rest of the key after it.
@example(key="000000::00000\\n00000", place="broken JSON content", respell="raw", cut=(0, 0), mode="sync")
def test_no_fragment_of_the_key_surfaces(
    echo_server: ScriptedChatServer,
    kind: str,
    key: str,
    place: str,
    respell: str,
    cut: tuple[int, int],
    mode: str,
) -> None:
    assume(_keyable(key))
    reply, strategy = PLACES[place]
    start, stop = sorted(cut)
    spell = RESPELL[respell]

    def echo(header: str) -> str:  # respelled, then cut (when that leaves enough to matter)
        spelled = spell(header)
        piece = spelled[start:stop]
        return piece if len(piece) >= MIN_FRAGMENT else spelled

    def searched(respelled: Callable[[str], str]) -> tuple[SearchResult, dict[str, str]]:
        echo_server.script.clear()
        echo_server.reply(
            Reply(reply.status, reply.body, headers=reply.headers, reason=reply.reason, echo=respelled)
        )
        llm = expander_for(kind, echo_server.base_url, key, timeout=30.0, strategy=strategy)
        retriever = MultiQueryRetriever({"bm25": KeywordRetriever()}, expander=llm, max_variants=3)
        with logged() as log:
            result = retriever.search(QUERY) if mode == "sync" else asyncio.run(retriever.asearch(QUERY))
        return result, surfaces(result, repr(llm) + repr(retriever), log.getvalue())

    # What the same search shows when the server echoes nothing: a window of the key found there is
    # our own words (Hypothesis tries keys made of the code's string constants), not a leak.
    _, quiet = searched(lambda header: "")
    ours = "\n".join(quiet.values())
    result, shown = searched(echo)
    for where, text in shown.items():
        fragment = leaked(key, text, besides=ours)
        assert fragment is None, f"{fragment!r} of the key in the {where}: {text[:400]!r}"
    assert result.ids  # the search answered all the same


# The issue's own examples, with a 68-character key: each leaked before the redaction matched fragments.
KEY_68 = "sk-proj-" + "Zq4Xw9Lr2Tb7Nc5Vm8Kd3Hs6Jf1Gp0Ya" + "Ue7Io3Wq9Er5Ty2Ui8Op4As6Df1Gh0J"
EXAMPLES: dict[str, Reply] = {
    "non-JSON body": Reply(200, f"Forbidden: {ECHO}".encode()),
    "broken JSON content": Reply(200, completion('{"queries": ["' + ECHO + '", "rank')),
    # Text before the echo, so that a preview clipped at 200 characters cuts the key.
    "reason phrase": Reply(401, b"{}", reason=f"Unauthorized ({'x' * 166}) {ECHO}"),
    "location header": Reply(302, b"", headers={"Location": f"http://127.0.0.1:1/{'p' * 162}?{ECHO}"}),
    "escaped key in a JSON body": Reply(200, f'{{"error": "{ECHO}"}}'.encode(), echo=RESPELL["JSON"]),
}  # fmt: skip


@pytest.mark.parametrize("example", list(EXAMPLES))
@pytest.mark.parametrize("key", [KEY_68, KEY_68[:30] + '\\"' + KEY_68[32:]], ids=["plain", "backslash-quote"])
def test_the_key_is_not_shown_by_fanfuse_search(
    tmp_path: Path,
    echo_server: ScriptedChatServer,
    example: str,
    key: str,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    TantivyRetriever.build(
        [{"id": "rrf", "text": "reciprocal rank fusion combines ranked lists"}], tmp_path / "i"
    )
    monkeypatch.setenv("FANFUSE_LLM_API_KEY", key)
    flags = ["--expander", "llm", "--llm-base-url", echo_server.base_url, "--llm-model", "scripted"]
    for output in ([], ["--explain"], ["--json"]):
        echo_server.script.clear()
        echo_server.reply(EXAMPLES[example])
        assert main(["search", "--index", str(tmp_path / "i"), QUERY, *flags, *output]) == 0
        printed = capsys.readouterr()
        assert "fell back" in printed.out or "fallback_reason" in printed.out
        for stream in (printed.out, printed.err):
            fragment = leaked(key, stream)
            assert fragment is None, f"{fragment!r} of the key in: {stream[:600]}"


@settings(max_examples=300, deadline=None)
@given(
    key=_KEYS,
    before=st.text(max_size=30),
    after=st.text(max_size=30),
    respell=st.sampled_from(list(RESPELL)),
    cut=st.tuples(st.integers(0, 200), st.integers(0, 200)),
)
def test_the_redactor_removes_any_long_fragment_of_any_spelling(
    key: str, before: str, after: str, respell: str, cut: tuple[int, int]
) -> None:
    start, stop = sorted(cut)
    fragment = RESPELL[respell](key)[start:stop]
    text = before + fragment + after
    redacted = Redactor([key])(text)
    if len(fragment) >= MIN_FRAGMENT:
        assert fragment not in redacted
    assert leaked(key, redacted) is None
    if leaked(key, before) is None:  # only the key's text goes
        assert redacted.startswith(before[: max(0, len(before) - MIN_FRAGMENT)])


@settings(max_examples=300, deadline=None)
@given(key=_KEYS, text=st.text(max_size=200))
def test_the_redactor_leaves_text_without_the_key_alone(key: str, text: str) -> None:
    assume(leaked(key, text) is None)
    assert Redactor([key])(text) == text


def test_a_short_secret_is_removed_where_it_occurs_whole() -> None:
    redact = Redactor(["k3y"])
    assert redact("a k3y, k3 and 'k3y'") == "a ***, k3 and '***'"
    assert Redactor([None, ""])("anything") == "anything"


def test_a_key_at_the_end_of_the_largest_reply_is_removed() -> None:
    text = ("rank fusion " * 90_000)[: 1 << 20] + KEY_68[:40]
    redacted = Redactor([KEY_68])(text)
    assert redacted.endswith("rank fusion ***"[-len("***") - 1 :]) or redacted.endswith("***")
    assert leaked(KEY_68, redacted) is None
