"""Removing a secret from text a server chose, in any spelling and any fragment of it.

A server may echo what it was sent (the ``Authorization`` header above all) in a reason phrase, a
``Location`` header, an error body, broken JSON or the model's answer; a client library may put that
body into its exception's message. By the time the text reaches a message it may be spelled as the
raw key, JSON-escaped (``\\"``, ``\\\\``, ``\\/``), as Python's ``repr`` writes it, URL-encoded (either
hex case, ``+`` or ``%20`` for a space) or HTML-escaped; a key that holds an escape (``\\n``) echoed raw
into a JSON string is read back with the escape decoded; and a preview or a server may have cut it
anywhere. So ``Redactor`` removes every run of at least ``MIN_FRAGMENT`` characters that also occurs
in one of the secret's spellings (each spelling, and each of those spelled again, e.g. the JSON of a
repr), wherever it starts or ends: a cut key is a fragment too. A secret shorter than that is removed
where it occurs whole. ``LLMExpander`` runs every piece of server text through its ``Redactor`` before
anything else reads it: the reply as received, the content taken out of it, each variant parsed out
of that, and every failure's description, before any of them is clipped for a preview.
"""

from __future__ import annotations

import html
import json
from collections.abc import Callable, Iterable
from urllib.parse import quote, quote_plus

__all__ = ["MIN_FRAGMENT", "REDACTED", "Redactor", "shown", "spellings"]

#: The shortest run of a secret's characters removed (a secret shorter than this is removed whole).
MIN_FRAGMENT = 8
REDACTED = "***"


def _json(text: str) -> str:
    return json.dumps(text)[1:-1]


def _json_ascii_off(text: str) -> str:
    return json.dumps(text, ensure_ascii=False)[1:-1]


def _json_slashes(text: str) -> str:
    return _json(text).replace("/", "\\/")


def _json_read(text: str) -> str:
    """As a JSON reader reads ``text`` written raw between quotes: its escapes (``\\n``) decoded."""
    if "\\" not in text:
        return text
    try:
        read = json.loads(f'"{text}"')
    except ValueError:
        return text
    return read if isinstance(read, str) else text


def _single_quoted(text: str) -> str:
    """As ``repr`` writes a string that holds both quotes: a backslash doubled, ``'`` escaped."""
    return text.replace("\\", "\\\\").replace("'", "\\'")


def _repr(text: str) -> str:
    return repr(text)[1:-1]


def _url(text: str) -> str:
    return quote(text, safe="")


def _url_plus(text: str) -> str:
    return quote_plus(text, safe="")


def _url_path(text: str) -> str:
    return quote(text)  # "/" left as it is, as in a Location header's path


def _lower_hex(encoded: str) -> str:
    pieces = encoded.split("%")
    return pieces[0] + "".join("%" + piece[:2].lower() + piece[2:] for piece in pieces[1:])


_SPELLINGS: tuple[Callable[[str], str], ...] = (
    _json,
    _json_read,
    _json_ascii_off,
    _json_slashes,
    _repr,
    _single_quoted,
    _url,
    _url_plus,
    _url_path,
    lambda text: _lower_hex(_url(text)),
    lambda text: _lower_hex(_url_plus(text)),
    html.escape,
)


def spellings(secret: str) -> set[str]:
    """The secret as written raw, by each spelling, and by each spelling of a spelling."""
    first = {secret} | {spell(secret) for spell in _SPELLINGS}
    return first | {spell(text) for text in first for spell in _SPELLINGS}


class Redactor:
    """``redactor(text)``: ``text`` with every fragment of the secrets replaced by ``***``.

    One pass over the text, in steps of ``MIN_FRAGMENT // 2`` characters: any run of ``MIN_FRAGMENT``
    characters holds one such step's block whole, so only where a block is a piece of some spelling
    are the windows around it compared with the spellings' fragments.
    """

    def __init__(self, secrets: Iterable[str | None]):
        self._windows: set[str] = set()
        self._blocks: set[str] = set()
        self._whole: set[str] = set()
        for secret in {s for s in secrets if s}:
            for spelled in spellings(secret):
                if len(spelled) < MIN_FRAGMENT:
                    self._whole.add(spelled)
                    continue
                self._windows.update(_pieces(spelled, MIN_FRAGMENT))
                self._blocks.update(_pieces(spelled, _BLOCK))

    def __bool__(self) -> bool:
        return bool(self._windows or self._whole)

    def __call__(self, text: str) -> str:
        if not self or not text:
            return text
        spans = self._fragment_spans(text) + self._whole_spans(text)
        if not spans:
            return text
        merged: list[list[int]] = []
        for start, stop in sorted(spans) if self._whole else spans:
            if merged and start <= merged[-1][1]:
                merged[-1][1] = max(merged[-1][1], stop)
            else:
                merged.append([start, stop])
        out, end = [], 0
        for start, stop in merged:
            out += [text[end:start], REDACTED]
            end = stop
        out.append(text[end:])
        return "".join(out)

    def _fragment_spans(self, text: str) -> list[list[int]]:
        """The runs of matching windows, in order, each already merged with its neighbours."""
        blocks, windows = self._blocks, self._windows
        spans: list[list[int]] = []
        checked = -1  # the last window start compared
        for block_start in range(0, len(text) - _BLOCK + 1, _BLOCK):
            if text[block_start : block_start + _BLOCK] not in blocks:
                continue
            for start in range(max(checked + 1, block_start - (MIN_FRAGMENT - _BLOCK)), block_start + 1):
                if text[start : start + MIN_FRAGMENT] in windows:
                    if spans and start <= spans[-1][1]:
                        spans[-1][1] = start + MIN_FRAGMENT
                    else:
                        spans.append([start, start + MIN_FRAGMENT])
            checked = block_start
        return spans

    def _whole_spans(self, text: str) -> list[list[int]]:
        spans = []
        for spelled in self._whole:
            found = text.find(spelled)
            while found != -1:
                spans.append([found, found + len(spelled)])
                found = text.find(spelled, found + 1)
        return spans


_BLOCK = MIN_FRAGMENT // 2


def _pieces(text: str, length: int) -> list[str]:
    return [text[i : i + length] for i in range(len(text) - length + 1)]


def shown(text: str | None, limit: int) -> str:
    """Redacted server text made safe to show: printable, at most ``limit`` characters."""
    if not text:
        return ""
    clean = "".join(c if c.isprintable() else "?" for c in text[:limit])
    return clean + ("..." if len(text) > limit else "")
