"""Reading query variants out of a chat model's answer.

Models are asked for ``{"queries": [...]}`` but answer in many shapes: the JSON inside a code fence or
after a sentence, a bare JSON list, a list of ``{"query": ...}`` objects, or one query per line with
numbers, bullets and quotes, often after a reasoning block (``<think>...</think>``) or a line of chatter
("Okay.", "Here are the queries:"). Anything that starts like JSON but does not parse is junk (usually
a truncated answer), not a list of lines. JSON nested deeper than ``MAX_JSON_DEPTH`` is refused before
it is parsed, so no answer can exhaust the parser's recursion. ``hyde`` asks for one passage of prose
instead (``parse_passage``): the same wrappers are taken off, and the lines left are the passage.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from itertools import accumulate

__all__ = ["MAX_JSON_DEPTH", "UnusableAnswer", "completion_text", "parse_passage", "parse_variants"]

#: Brackets nested deeper than this are refused (a chat completion is about 5 deep).
MAX_JSON_DEPTH = 64


class UnusableAnswer(ValueError):
    """The answer holds no query variants we can trust; the message says why."""


_FENCE = re.compile(r"^```[\w-]*\s*\n?(.*?)\n?```\s*$", re.DOTALL)
# "1. ", "2) ", "(3) ", "- ", "* ", "• ", "Q1: ", "Query 2: " at the start of a line.
# A marker must be followed by a space, so "3.5 turbo pricing" keeps its number.
_LINE_MARKER = re.compile(
    r"^\s*(?:[-*•]\s+|\(?\d+[.):]\s+|(?:q|query|variant)\s*\d+\s*[:.)-]\s*)", re.IGNORECASE
)
_QUOTES = "\"'“”‘’`"  # noqa: RUF001 (typographic quotes are what models write)
_REASONING_OPEN = re.compile(r"<(think|thinking|reasoning)>", re.IGNORECASE)
_REASONING_CLOSE = re.compile(r"</(?:think|thinking|reasoning)>", re.IGNORECASE)
# A line that only acknowledges, announces or closes: "Okay.", "Sure! Here are 3 queries", "Hope this
# helps". Applied to short lines only, which also keeps the repeated group from backtracking for long.
_ACKNOWLEDGE = r"(?:ok(?:ay)?|sure|certainly|of course|absolutely|alright|all right|great|got it|understood)"
_CHATTER = re.compile(
    rf"^(?:{_ACKNOWLEDGE}\b[\s,.!;:-]*)*"
    r"(?:$|here(?:'s|\s+(?:is|are|you\s+go|they\s+are))\b|(?:i\s+)?hope\s+(?:this|these|that|it)\b"
    r"|let\s+me\s+know\b|feel\s+free\b"
    # An apology or a disclaimer the model wrote in place of an answer: never a query. First-person
    # rewrites ("I can't log in to Gmail") and error messages ("Error: ENOENT ...") are queries.
    r"|(?:i\s*'?\s*m|i\s+am)\s+sorry\b|sorry\s*[,.!]|as\s+an?\s+(?:ai|language\s+model)\b)",
    re.IGNORECASE,
)
_CHATTER_MAX_LENGTH = 120
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")
_JSON_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
_NOT_BRACKET = re.compile(r"[^\[\]{}]+")
_BRACKET_STEP = {"[": 1, "{": 1, "]": -1, "}": -1}
_QUERY_FIELDS = ("query", "text")


def completion_text(text: str) -> str:
    """The message content of the first choice of a chat completion (the reply's text)."""
    _check_depth(text, "the endpoint's reply")
    try:
        reply = json.loads(text)
        content = reply["choices"][0]["message"]["content"]
    except (ValueError, KeyError, IndexError, TypeError):
        raise UnusableAnswer(f"the endpoint's reply is not a chat completion: {_preview(text)}") from None
    except RecursionError:  # only if the caller's own stack is already deep
        raise UnusableAnswer("the endpoint's reply is nested too deeply") from None
    if not isinstance(content, str):
        raise UnusableAnswer("the chat completion has no text content")
    return content


def parse_variants(answer: str) -> list[str]:
    """The query strings in ``answer``, in order (not yet deduplicated against the original)."""
    text = _unwrapped(answer, "queries")
    scalar = _json_scalar(text)
    if scalar is not None:
        raise UnusableAnswer(f"the model's answer is the JSON {scalar}, no list of queries")
    embedded = _embedded_json(text)
    if embedded is not None:
        return _from_json(embedded)
    if text[0] in "{[":
        raise UnusableAnswer(f"the model's answer looks like JSON but does not parse: {_preview(text)}")
    return _from_lines(text)


def parse_passage(answer: str) -> str:
    """The one passage in ``answer``: its text lines (chatter and headings ending in ``:`` left out),
    joined; or the strings of a JSON answer, joined."""
    text = _unwrapped(answer, "passage")
    embedded = _embedded_json(text) if text[0] in "{[" else None
    if embedded is not None:
        lines = _strings(embedded)
    else:
        lines = [line for line in map(str.strip, text.splitlines()) if line and not line.endswith(":")]
        lines = [line for line in lines if not _is_chatter(line)]
    passage = _clean(" ".join(lines))
    if not passage:
        raise UnusableAnswer(f"no passage in the model's answer: {_preview(text)}")
    return passage


def _unwrapped(answer: str, wanted: str) -> str:
    """``answer`` without reasoning blocks and a code fence around it, checked for depth."""
    text = _without_reasoning(answer).strip()
    fenced = _FENCE.match(text)
    if fenced:
        text = fenced.group(1).strip()
    if not text:
        if _REASONING_OPEN.search(answer) or _REASONING_CLOSE.search(answer):
            raise UnusableAnswer(f"the model's answer is only reasoning (a <think> block), no {wanted}")
        raise UnusableAnswer("the model's answer is empty")
    _check_depth(text, "the model's answer")
    return text


def _strings(value: object) -> list[str]:
    """The strings in a JSON value, in order."""
    if isinstance(value, str):
        return [value]
    items = value.values() if isinstance(value, dict) else value if isinstance(value, list) else []
    return [text for item in items for text in _strings(item)]


def _without_reasoning(answer: str) -> str:
    """``answer`` without its reasoning blocks; an unclosed one runs to the end (a cut-off answer),
    and a closing tag without an opening one ends reasoning that started with the answer."""
    pos = 0
    first_close = _REASONING_CLOSE.search(answer)
    first_open = _REASONING_OPEN.search(answer)
    if first_close and (first_open is None or first_close.start() < first_open.start()):
        pos = first_close.end()
    kept = []
    while (opening := _REASONING_OPEN.search(answer, pos)) is not None:
        kept.append(answer[pos : opening.start()])
        closing = re.compile(f"</{opening.group(1)}>", re.IGNORECASE).search(answer, opening.end())
        if closing is None:
            return "".join(kept)
        pos = closing.end()
    kept.append(answer[pos:])
    return "".join(kept)


def _check_depth(text: str, what: str) -> None:
    brackets = _NOT_BRACKET.sub("", _JSON_STRING.sub("", text))
    if len(brackets) > MAX_JSON_DEPTH and max(accumulate(map(_BRACKET_STEP.__getitem__, brackets))) > (
        MAX_JSON_DEPTH
    ):
        raise UnusableAnswer(f"{what} is nested too deeply (more than {MAX_JSON_DEPTH} levels of brackets)")


def _json_scalar(text: str) -> str | None:
    """What ``text`` is when it is one JSON value that holds no text to search (null or a bool; a
    number is a query: "1984"), as the answer names it; else None."""
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        return None
    if value is None or isinstance(value, bool):
        return json.dumps(value)
    return None


def _embedded_json(text: str) -> object | None:
    """The JSON value in ``text``: the whole text, or the span from the first brace to the last."""
    for start_char, end_char in (("{", "}"), ("[", "]")):
        start, end = text.find(start_char), text.rfind(end_char)
        if start == -1 or end <= start:
            continue
        try:
            value: object = json.loads(text[start : end + 1])
        except ValueError:
            continue
        except RecursionError:  # only if the caller's own stack is already deep
            raise UnusableAnswer("the model's answer is nested too deeply") from None
        return value
    return None


def _from_json(value: object) -> list[str]:
    if isinstance(value, dict):
        listed = value.get("queries")
        if listed is None:  # tolerate another key name, if exactly one value is a list
            lists = [v for v in value.values() if isinstance(v, list)]
            listed = lists[0] if len(lists) == 1 else None
        value = listed
    if not isinstance(value, list):
        raise UnusableAnswer('the model\'s JSON has no list of queries (expected {"queries": [...]})')
    queries = [_clean(text) for text in map(_query_of, value) if text is not None]
    return [q for q in queries if q]


def _query_of(item: object) -> str | None:
    """A list item's query: the item itself, or the ``query`` (else ``text``) field of an object."""
    if isinstance(item, str):
        return item
    if isinstance(item, Mapping):
        for name in _QUERY_FIELDS:
            if isinstance(item.get(name), str):
                return str(item[name])
    return None


def _from_lines(text: str) -> list[str]:
    queries = []
    for line in text.splitlines():
        line = line.strip()
        if not line or line.endswith(":") or _is_chatter(line):
            continue
        cleaned = _clean(_LINE_MARKER.sub("", line, count=1))
        if cleaned:
            queries.append(cleaned)
    if not queries:
        raise UnusableAnswer(f"no query lines in the model's answer: {_preview(text)}")
    return queries


def _is_chatter(line: str) -> bool:
    return (
        len(line) <= _CHATTER_MAX_LENGTH and _CHATTER.match(_LINE_MARKER.sub("", line, count=1)) is not None
    )


def _clean(text: str) -> str:
    # Control characters (a NUL, an escape) are no part of a query a backend should be sent.
    text = _CONTROL.sub(" ", text).strip().rstrip(",").strip()
    if len(text) >= 2 and text[0] in _QUOTES and text[-1] in _QUOTES:
        text = text[1:-1]
    return " ".join(text.split())


def _preview(text: str, limit: int = 60) -> str:
    return repr(text if len(text) <= limit else text[:limit] + "...")
