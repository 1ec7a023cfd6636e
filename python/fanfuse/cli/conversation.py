"""The conversation a command searches in: `--history FILE` (JSONL) and repeated `--turn TEXT`.

`--history FILE` holds one earlier turn a line, oldest first: a message `{"role": ..., "content":
...}` or a JSON string (a user turn); blank lines are skipped, a byte order mark opening the file
too; `-` reads standard input. `--turn TEXT`
adds a user turn, after the file's. Each turn is checked where it is read, so an error names the file
and line (or the `--turn`), and the whole is checked and cut as every search's history is
(`fanfuse.multiquery.conversation`).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import IO

from fanfuse.cli.paths import add_input
from fanfuse.errors import ConversationTooLong, InvalidConversation
from fanfuse.jsonl import json_line
from fanfuse.limits import CONVERSATION
from fanfuse.multiquery.conversation import Turn, check_history, check_turn

__all__ = ["add_history_flags", "history_of"]

# What a line of --history holds, as an error about one says.
_LINE = 'one {"role": ..., "content": ...} message or JSON string per line, e.g. "How do I rotate the keys?"'

# The longest line read: a turn of CONVERSATION.turn_chars characters, every one written as a 12-byte JSON
# escape (a surrogate pair), with room for the keys. A longer line is refused without reading it all.
MAX_LINE_BYTES = 12 * CONVERSATION.turn_chars + 1024


def add_history_flags(parser: argparse.ArgumentParser) -> None:
    add_input(
        parser,
        "--history",
        kind="history",
        metavar="FILE",
        help='the conversation before the question, oldest first: JSONL, one {"role": ..., "content": ...} '
        "message or JSON string (a user turn) a line; - reads standard input",
    )
    parser.add_argument(
        "--turn",
        action="append",
        default=[],
        metavar="TEXT",
        help="an earlier user turn, oldest first (after --history's); repeatable",
    )


def history_of(args: argparse.Namespace) -> list[Turn]:
    """The turns of `--history` and `--turn`, checked (a search gives its expander the recent ones)."""
    turns = list(_read(args.history)) if args.history is not None else []
    turns += [check_turn(text, f"--turn {i + 1}") for i, text in enumerate(args.turn)]
    return list(check_history(turns, "--history and --turn" if args.turn else "--history"))


def _read(path: str) -> Iterator[Turn]:
    if path == "-":
        if sys.stdin is None or sys.stdin.closed:  # None: the process started with descriptor 0 closed
            raise InvalidConversation(
                "--history -: standard input is closed; give a file, or pipe the turns in"
            )
        yield from _turns(getattr(sys.stdin, "buffer", sys.stdin), "<stdin>")
        return
    try:
        with Path(path).open("rb") as stream:
            yield from _turns(stream, path)
    except OSError as error:
        raise InvalidConversation(f"--history {path}: {error.strerror or error}") from None


def _turns(stream: IO[bytes] | IO[str], name: str) -> Iterator[Turn]:
    count = 0
    for number, line in _lines(stream, name):
        if not line.strip():
            continue
        count += 1
        if count > CONVERSATION.turns:
            raise ConversationTooLong(
                f"--history {name} has more than {CONVERSATION.turns} turns (the most accepted)"
            )
        where = f"--history {name}:{number}"
        value = json_line(
            line,
            where,
            '{"role": ..., "content": ...} message or JSON string per line, e.g. "How do I rotate the keys?"',
            InvalidConversation,
        )
        try:
            yield check_turn(value, where)
        except TypeError as error:  # a command reports every bad input the same way
            raise InvalidConversation(str(error)) from None


def _lines(stream: IO[bytes] | IO[str], name: str) -> Iterator[tuple[int, str]]:
    """Each line as text, numbered from 1; read line by line, so an error names its line."""
    number = 0
    while True:
        raw = stream.readline(MAX_LINE_BYTES)
        if not raw:
            return
        number += 1
        if len(raw) == MAX_LINE_BYTES and raw[-1:] not in (b"\n", "\n"):
            raise ConversationTooLong(
                f"--history {name}:{number}: the line is longer than {MAX_LINE_BYTES} bytes; a turn has "
                f"at most {CONVERSATION.turn_chars} characters"
            )
        try:
            text = raw if isinstance(raw, str) else raw.decode("utf-8")
        except UnicodeDecodeError as error:
            raise InvalidConversation(f"--history {name}:{number}: not UTF-8 ({error.reason})") from None
        # A byte order mark opens the file, not its first turn (as every input file of the commands).
        yield number, text.removeprefix("\ufeff") if number == 1 else text
