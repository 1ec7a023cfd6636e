"""Reading query variants out of a chat model's answer.

Models are asked for ``{"queries": [...]}`` but answer in many shapes: the JSON inside a code fence or
after a sentence, a bare JSON list, or one query per line with numbers, bullets and quotes. Anything
that starts like JSON but does not parse is junk (usually a truncated answer), not a list of lines.
"""

from __future__ import annotations

import json
import re

__all__ = ["UnusableAnswer", "parse_variants"]


class UnusableAnswer(ValueError):
    """The answer holds no query variants we can trust; the message says why."""


_FENCE = re.compile(r"^```[\w-]*\s*\n?(.*?)\n?```\s*$", re.DOTALL)
# "1. ", "2) ", "(3) ", "- ", "* ", "• ", "Q1: ", "Query 2: " at the start of a line.
# A marker must be followed by a space, so "3.5 turbo pricing" keeps its number.
_LINE_MARKER = re.compile(
    r"^\s*(?:[-*•]\s+|\(?\d+[.):]\s+|(?:q|query|variant)\s*\d+\s*[:.)-]\s*)", re.IGNORECASE
)
_QUOTES = "\"'“”‘’`"  # noqa: RUF001 (typographic quotes are what models write)


def parse_variants(answer: str) -> list[str]:
    """The query strings in ``answer``, in order (not yet deduplicated against the original)."""
    text = answer.strip()
    fenced = _FENCE.match(text)
    if fenced:
        text = fenced.group(1).strip()
    if not text:
        raise UnusableAnswer("the model's answer is empty")
    embedded = _embedded_json(text)
    if embedded is not None:
        return _from_json(embedded)
    if text[0] in "{[":
        raise UnusableAnswer(f"the model's answer looks like JSON but does not parse: {_preview(text)}")
    return _from_lines(text)


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
    queries = [_clean(item) for item in value if isinstance(item, str)]
    return [q for q in queries if q]


def _from_lines(text: str) -> list[str]:
    queries = []
    for line in text.splitlines():
        line = line.strip()
        if not line or line.endswith(":"):  # blank, or a preamble such as "Here are 3 queries:"
            continue
        cleaned = _clean(_LINE_MARKER.sub("", line, count=1))
        if cleaned:
            queries.append(cleaned)
    if not queries:
        raise UnusableAnswer(f"no query lines in the model's answer: {_preview(text)}")
    return queries


def _clean(text: str) -> str:
    text = text.strip().rstrip(",").strip()
    if len(text) >= 2 and text[0] in _QUOTES and text[-1] in _QUOTES:
        text = text[1:-1]
    return " ".join(text.split())


def _preview(text: str, limit: int = 60) -> str:
    return repr(text if len(text) <= limit else text[:limit] + "...")
