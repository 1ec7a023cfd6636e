"""Text arguments: a sequence of str (``check_strs``), and text that UTF-8 cannot carry: a str
holding a lone surrogate, which no backend can search and no writer can write. Python makes one from
a byte of the command line that is not UTF-8 (`surrogateescape`: 0xff becomes U+DCFF), and a JSON
escape can spell one (`"\\ud800"`). `check_unicode` refuses such text where the library takes it;
`where_not_utf8` says where it stops being UTF-8, in the words of the command line (the byte), for
`fanfuse.cli.utf8`."""

from __future__ import annotations

from typing import cast

from fanfuse.errors import InvalidSetting
from fanfuse.limits import check_sequence

__all__ = ["check_strs", "check_unicode", "where_not_utf8"]

# The surrogates `surrogateescape` makes of the bytes 0x80-0xff.
_ESCAPED_BYTES = range(0xDC80, 0xDD00)


def _first_lone_surrogate(text: str) -> UnicodeEncodeError | None:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as error:
        return error
    return None


def check_unicode(name: str, text: str, error: type[Exception] = InvalidSetting) -> str:
    """`text` if UTF-8 can carry it; else `error` naming `name` and the index of the first lone
    surrogate."""
    refused = _first_lone_surrogate(text)
    if refused is not None:
        raise error(f"{name} is not valid Unicode: {refused.reason} at index {refused.start}")
    return text


def where_not_utf8(word: str) -> str | None:
    """Where `word` stops being UTF-8, as a command line's byte (`byte 0xff at position 2`) or a
    lone surrogate's position; None where it is UTF-8 throughout."""
    refused = _first_lone_surrogate(word)
    if refused is None:
        return None
    code = ord(word[refused.start])
    if code in _ESCAPED_BYTES:
        return f"byte 0x{code - 0xDC00:02x} at position {refused.start + 1}"
    return f"a lone surrogate at position {refused.start + 1}"


def check_strs(value: object, name: str) -> list[str]:
    """`value`, a sequence of str (``check_sequence``: not a bare str, which would be read letter by
    letter, nor a set), as a list; an item that is no str is refused naming its place."""
    items = check_sequence(value, name, "str")
    for i, item in enumerate(items):
        if not isinstance(item, str):
            raise TypeError(f"{name}[{i}] must be a str (got {type(item).__name__})")
    return cast("list[str]", items)
