"""A path argument that is not UTF-8 (a name the core cannot take) is refused by each entry point of
the library that takes a path from a caller through `fanfuse.paths.utf8_path`: each public name of the
output guard (`fanfuse.output_guard.__all__`) with `InvalidOutput`, the corpus readers with
`InvalidCorpus`; each message names the path, on one line."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest
from fanfuse import output_guard
from fanfuse.corpus import read_jsonl, read_lines
from fanfuse.errors import InputError, InvalidCorpus, InvalidOutput
from fanfuse.paths import utf8_path


def _write(path: Path) -> None:
    with output_guard.OutputFile(path) as stream:
        stream.write(b"x")


def _stage(path: Path) -> None:
    with output_guard.StagedDirectory(path):
        pass


# Each entry point, called on the path: (call, the class that refuses it).
ENTRY_POINTS: dict[str, tuple[Callable[[Path], object], type[InputError]]] = {
    "OutputFile": (_write, InvalidOutput),
    "StagedDirectory": (_stage, InvalidOutput),
    "check_paths": (lambda path: output_guard.check_paths(outputs=[("-o", path)]), InvalidOutput),
    "retire_directory": (output_guard.retire_directory, InvalidOutput),
    "sync_directory": (output_guard.sync_directory, InvalidOutput),
    "read_lines": (lambda path: list(read_lines(path)), InvalidCorpus),
    "read_jsonl": (lambda path: list(read_jsonl(path)), InvalidCorpus),
}


def test_every_public_name_of_the_output_guard_is_called() -> None:
    assert set(output_guard.__all__) <= set(ENTRY_POINTS)


@pytest.mark.parametrize("name", sorted(ENTRY_POINTS))
def test_a_path_that_is_not_utf8_is_refused_naming_it(name: str, tmp_path: Path) -> None:
    call, refusal = ENTRY_POINTS[name]
    path = tmp_path / os.fsdecode(b"caf\xe9")
    if name.startswith("read_"):
        path.write_bytes(b'{"id": "a", "text": "x"}\n')  # a file there: the name alone is refused
    with pytest.raises(InputError) as raised:
        call(path)
    assert type(raised.value) is refusal, f"{name}: {type(raised.value).__name__}"
    message = str(raised.value)
    assert repr(str(path)) in message and "is not valid UTF-8" in message, message
    assert "\n" not in message


@pytest.mark.parametrize("value", [b"run.trec", 3, None])
def test_a_value_that_is_no_path_is_a_type_error_naming_the_argument(value: object) -> None:
    with pytest.raises(TypeError, match=r"^output must be a path \(str or os.PathLike\), not "):
        utf8_path(value, "output", InvalidOutput)
