"""One boundary ends every command (`fanfuse.cli._common.run_command`): whatever escapes a command,
bad input or a failure no check foresaw, is one line `fanfuse CMD: error: ...` and exit 2, never a
traceback (`FANFUSE_DEBUG=1` adds it). Fuzzed: every input option of every command that reads a
file's content (from the parsers, as `test_input_bounds.py` finds them) is given random bytes,
brackets nested up to 200,000 deep, a byte order mark before a valid file, and random JSON lines."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from cli_process import CLI
from command_inputs import write_inputs
from fanfuse import FusionError
from fanfuse.cli import main
from fanfuse.cli._common import DEBUG, run_command
from fanfuse.corpus import read_jsonl
from fanfuse.retrievers.tantivy_index import TantivyRetriever
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from rrf_strategies import examples
from test_input_bounds import INVOCATIONS, input_positions


class PanicException(BaseException):
    """Test double of pyo3's PanicException (a Rust panic reaching Python), which no command input
    produces on demand: recognised by its name and module, as `fanfuse._panics` recognises the real one
    (tests/test_damaged_index.py makes Tantivy raise the real one)."""


PanicException.__module__ = "pyo3_runtime"


def raising(error: BaseException) -> Callable[[], int]:
    def run() -> int:
        raise error

    return run


def deep(depth: int) -> Callable[[], int]:
    def run() -> int:
        return deep(depth + 1)()

    return run


FAILURES: dict[str, tuple[Callable[[], int], str]] = {
    "bad input": (raising(FusionError("--x: must be 1")), "--x: must be 1"),
    "a line break quoted from a file": (
        raising(FusionError("f: fusion model: unknown field '\r\n'; the fields are format")),
        "unknown field '\\x0d\\x0a'; the fields are format",
    ),
    "refused by the system": (raising(PermissionError(13, "Permission denied", "f")), "f: Permission denied"),
    "recursion": (deep(0), "the input is nested too deeply to read"),
    "memory": (raising(MemoryError()), "out of memory"),
    "closed stream": (
        raising(AttributeError("'NoneType' object has no attribute 'readline'")),
        "AttributeError: 'NoneType' object has no attribute 'readline' (set FANFUSE_DEBUG=1",
    ),
    "unforeseen": (raising(KeyError("k")), "KeyError: 'k'"),
    "multi-line message": (raising(ValueError("one\ntwo\n" + "x" * 5000)), "ValueError: one two xxx"),
    "rust panic": (raising(PanicException("index out of bounds")), "PanicException: index out of bounds"),
}


@pytest.mark.parametrize("kind", FAILURES)
def test_every_failure_is_one_line_and_exit_2(
    kind: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(DEBUG, raising=False)
    run, message = FAILURES[kind]
    assert run_command("cmd", run) == 2
    err = capsys.readouterr().err
    assert err.startswith("fanfuse cmd: error: ") and message in err, err
    assert len(err.splitlines()) == 1 and len(err) < 700, err


def test_fanfuse_debug_adds_the_traceback(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(DEBUG, "1")
    assert run_command("cmd", raising(KeyError("k"))) == 2
    err = capsys.readouterr().err
    assert err.startswith("Traceback") and err.splitlines()[-1].startswith("fanfuse cmd: error: KeyError")


def test_an_exit_goes_on_up() -> None:
    with pytest.raises(SystemExit):
        run_command("cmd", raising(SystemExit(3)))


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = write_inputs(tmp_path_factory.mktemp("boundary"))
    (directory / "history.jsonl").write_text('"How do I rotate the keys?"\n')
    TantivyRetriever.build(read_jsonl(directory / "corpus.jsonl"), directory / "index")
    return directory


def process(argv: list[str], cwd: Path, **options: object) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != DEBUG}
    return subprocess.run(
        [*CLI, *argv], cwd=cwd, capture_output=True, text=True, timeout=120, env=env, **options
    )


def assert_one_line(done: subprocess.CompletedProcess[str], command: str, message: str) -> None:
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith(f"fanfuse {command}: error: ") and message in done.stderr, done.stderr
    assert len(done.stderr.splitlines()) == 1 and "Traceback" not in done.stderr


def test_a_history_line_nested_50000_deep_names_its_line(files: Path) -> None:
    (files / "deep.jsonl").write_text("[" * 50_000 + "\n")
    done = process(["search", "alpha", "--index", "index", "--history", "deep.jsonl"], files)
    assert_one_line(done, "search", "--history deep.jsonl:1: nested too deeply to read")


def test_history_from_a_closed_standard_input_is_refused_by_name(files: Path) -> None:
    argv = ["search", "alpha", "--index", "index", "--history", "-"]
    done = process(argv, files, stdin=None, preexec_fn=lambda: os.close(0))
    assert_one_line(done, "search", "--history -: standard input is closed")


def test_a_history_file_may_open_with_a_byte_order_mark(files: Path) -> None:
    (files / "bom.jsonl").write_bytes(b'\xef\xbb\xbf"How do I rotate the keys?"\n')
    assert (
        main(["search", "alpha", "--index", str(files / "index"), "--history", str(files / "bom.jsonl")]) == 0
    )


# What an input file is given: anything, the ways a reader's parser breaks, and valid input after a BOM.
JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12,
)
CONTENTS = st.one_of(
    st.binary(max_size=2_000),
    st.tuples(st.integers(1, 200_000), st.sampled_from(["[", "{", '{"a":', "[[{"])).map(
        lambda nested: (nested[1] * nested[0]).encode() + b"\n"
    ),
    st.lists(JSON_VALUES, max_size=5).map(
        lambda values: "".join(json.dumps(v) + "\n" for v in values).encode()
    ),
    st.sampled_from(["a.trec", "qrels.txt", "corpus.jsonl", "history.jsonl", "model.json"]).map(
        lambda name: b"\xef\xbb\xbf" + name.encode()  # resolved to the file's own bytes below
    ),
)

CASES = [(argv, at, kind) for argv in INVOCATIONS for at, kind in input_positions(argv)]


@pytest.mark.parametrize(
    ("argv", "at", "kind"), CASES, ids=[f"{a[0]} {a[at - 1]}->{a[at]}" for a, at, _ in CASES]
)
def test_any_content_of_any_input_ends_in_0_or_one_line_and_2(
    files: Path,
    tmp_path_factory: pytest.TempPathFactory,
    argv: list[str],
    at: int,
    kind: str,
    capsys: pytest.CaptureFixture[str],
) -> None:
    work = tmp_path_factory.mktemp("fuzzed")

    @given(content=CONTENTS)
    # 1,500 runs of the command per input under CI=true, 27,000 in all (at 6,250 each they took 45% of
    # the suite's time); the readers behind them are fuzzed by coverage too (fuzz/).
    @settings(examples(0.06), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
    def check(content: bytes) -> None:
        if content.startswith(b"\xef\xbb\xbf") and (files / content[3:].decode()).is_file():
            content = b"\xef\xbb\xbf" + (files / content[3:].decode()).read_bytes()
        fuzzed = work / "fuzzed"
        fuzzed.write_bytes(content)
        full = [argv[0], *(str(files / w) if (files / w).exists() else w for w in argv[1:])]
        for flag in ("-o", "--index"):  # outputs go to the scratch directory
            if flag in argv and argv[0] != "search":
                full[argv.index(flag) + 1] = str(work / argv[argv.index(flag) + 1])
        full[at] = str(fuzzed)
        code = main(full)
        err = capsys.readouterr().err
        assert code in (0, 2), (code, err)
        assert "Traceback" not in err, err
        if code == 2:
            assert err.startswith(f"fanfuse {argv[0]}: error: ") and len(err.splitlines()) == 1, err

    check()


# A command whose library swallows the signal's exception and raises its own, as an extension module
# imported at that moment does (onnxruntime: `ImportError: import numpy failed`, with no cause).
SWALLOWED = """
import os, signal, sys
from fanfuse.cli._common import run_command

def run():
    try:
        os.kill(os.getpid(), signal.{name})
        signal.pause()
    except BaseException:
        raise ImportError("import numpy failed") from None
    return 0

sys.exit(run_command("cmd", run))
"""


@pytest.mark.parametrize("name", ["SIGINT", "SIGTERM"])
def test_a_signal_whose_exception_a_library_replaced_still_ends_the_command_by_it(name: str) -> None:
    done = subprocess.run(
        [sys.executable, "-c", SWALLOWED.format(name=name)], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == -getattr(signal, name), done.stderr
    assert done.stderr == "fanfuse cmd: interrupted\n"
