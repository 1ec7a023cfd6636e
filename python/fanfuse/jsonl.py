"""One line of a JSONL input read as its value: the corpus of `fanfuse index` and a conversation's
lines (`fanfuse search --history`)."""

from __future__ import annotations

import json
from typing import Any

from fanfuse.errors import InputError


def json_line(text: str, where: str, expected: str, refusal: type[InputError]) -> Any:
    """One line of a JSONL input as its value; a line that is not JSON, or nested too deeply for
    Python's parser to read, is a `refusal` naming `where` (file:line) and what a line holds."""
    try:
        return json.loads(text)
    except RecursionError:
        problem = "nested too deeply to read"
    except ValueError as error:  # JSONDecodeError, and an integer of more digits than Python converts
        problem = f"not valid JSON ({getattr(error, 'msg', error)})"
    raise refusal(f"{where}: {problem}; expected {expected}")
