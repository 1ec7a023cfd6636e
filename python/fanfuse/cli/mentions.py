"""How a refusal of the library or the core mentions an option, rewritten as the command's flag for
it (``fanfuse.cli._common.named_by_flags`` gives the table of names and flags). The library speaks of
its keywords (``norm``, ``weights``, ``rank_from``, ``format``); a user of the command gave flags.
A mention is one of:

- the message's subject, at its start: ``norms must ...``, ``ks: ...``;
- an item of a list: ``norms[0]`` (``value 1 of --norms``);
- a value: ``method 'isr'``, ``norm='zmuv'`` (``--norm 'zmuv'``), a suggestion ``(format 'mtrag')``;
  ``name=`` alone is the flag;
- what to do with it: ``drop weights``, ``leave norm unset``.

Anything else is prose (``a weighted method``, ``per-list weights``) and is kept, as are quoted
values, file names (``norm.trec:3``, ``runs/weights``, ``norm:3:``) and the command's own paths
(a run file named ``weights``)."""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping

# A quoted value, as the library writes one (Python's repr, Rust's '{}' or {:?}); a quote opens only
# where no word runs into it (an apostrophe in prose, `run's`, opens nothing).
_QUOTED = r"""(?<!\w)(?:'(?:[^'\\\n]|\\.)*'|"(?:[^"\\\n]|\\.)*")"""
# The words after which an option's bare name is what to do with it.
_VERBS = ("drop", "leave", "give", "set", "unset", "omit", "pass", "remove")
# A value written after `name=` without quotes (`top_k=5`); a call (`model=train(...)`) is code.
_PLAIN_VALUE = re.compile(r"[\w.@+-]+(?![\w.@+(-])")


def _pattern(names: Collection[str]) -> re.Pattern[str]:
    alternatives = "|".join(re.escape(name) for name in sorted(names, key=len, reverse=True))
    # A name is a word of its own: not inside another word, a flag (`--norm`), a path or a file name.
    name = rf"(?<![\w./\\-])(?P<name>{alternatives})(?![\w/\\-]|\.\w)"
    return re.compile(rf"(?P<quoted>{_QUOTED})|{name}")


def with_flags(message: str, flags: Mapping[str, str], paths: Collection[str] = ()) -> str:
    """`message` with every mention of a name of `flags` written as its flag (see the module)."""
    if not flags:
        return message
    pieces: list[str] = []
    at = 0
    for found in _pattern(flags).finditer(message):
        if found.group("quoted") is not None or found.start() < at:
            continue
        written = _mention(message, found, flags[found.group("name")], paths)
        if written is None:
            continue
        end, text = written
        pieces += [message[at : found.start()], text]
        at = end
    return "".join([*pieces, message[at:]])


def _mention(message: str, found: re.Match[str], flag: str, paths: Collection[str]) -> tuple[int, str] | None:
    """(where the mention ends, how it is written), or None where the name is no mention."""
    start, end = found.span()
    if _token(message, start, end) in paths:
        return None
    rest = message[end:]
    item = re.match(r"\[(\d+)\]", rest)
    if item:
        return end + item.end(), f"value {int(item.group(1)) + 1} of {flag}"
    if rest.startswith("="):
        value = re.match(_QUOTED, rest[1:]) or _PLAIN_VALUE.match(rest[1:])
        if value:
            return end + 1 + value.end(), f"{flag} {value.group(0)}"
        return (end + 1, flag) if not rest[1:2].strip(" ,;.)") else None
    if re.match(rf"\s{_QUOTED}", rest):
        return end, flag
    if start == 0 and re.match(r"(?:\s|:(?!\d)|$)", rest):
        return end, flag
    before = message[:start].rstrip().rsplit(None, 1)
    if before and before[-1].lower() in _VERBS and message[start - 1] == " ":
        return end, flag
    return None


def _token(message: str, start: int, end: int) -> str:
    """The whitespace-delimited word around `message[start:end]`, without the punctuation and the
    `:LINE` a message puts after a file name."""
    left = message.rfind(" ", 0, start) + 1
    right = message.find(" ", end)
    word = message[left : len(message) if right < 0 else right]
    return re.sub(r"(?::\d+)*:?[,;)]*$", "", word.lstrip("("))
