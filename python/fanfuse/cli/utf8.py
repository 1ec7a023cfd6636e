"""Every word a command is given must be UTF-8. Python decodes the command line with
`surrogateescape`, so a byte that is not UTF-8 reaches the command as a lone surrogate, which no
later step can write, search or hand to the core (a query would be searched with U+FFFD and echoed
into `--json` as invalid UTF-8; a `--tag` would fail on encoding; a file name would reach the core
unnamed). Each is refused once the words are parsed, naming the option and the byte; a path as a
file whose name fanfuse cannot take (the core takes UTF-8 paths)."""

from __future__ import annotations

import argparse

from fanfuse.cli.paths import option_name, path_actions
from fanfuse.errors import InputError, InvalidSetting
from fanfuse.text import where_not_utf8


def check_utf8_arguments(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """Raises InvalidSetting for a word of the command's options that is not UTF-8, InputError for
    such a path."""
    paths = {action.dest for action, _, _ in path_actions(parser)}
    for action in parser._actions:
        value = getattr(args, action.dest, None)
        for word in value if isinstance(value, list) else [value]:
            if not isinstance(word, str):
                continue
            problem = where_not_utf8(word)
            if problem is None:
                continue
            # The bytes as given, each undecodable one as \xNN.
            shown = "'" + word.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace") + "'"
            option = option_name(action)
            if action.dest in paths:
                raise InputError(
                    f"{option} {shown}: the name is not UTF-8 ({problem}); fanfuse takes "
                    "file names in UTF-8 only: give one (rename the file, or link to it under one)"
                )
            raise InvalidSetting(f"argument {option}: is not UTF-8 text ({problem}; got {shown})")
