"""Every int argument of the private entry points (``fanfuse._core._internal``, found from its stub) says what
it accepts, and accepts exactly that: ``an int >= L`` takes L and the largest int64 and refuses
L - 1; ``an int from L to H`` takes both ends and refuses the ints just outside them, with the same
words. An argument added to the stub with no failing call below fails the first test. An argument
that sizes what a call allocates takes its top in a call that completes in bounded memory."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import fanfuse
import pytest
from fanfuse._core import _internal

STUB = Path(fanfuse.__file__).parent / "_core" / "_internal.pyi"
MISSING = "/nonexistent/fanfuse-run.trec"
# A call of each entry point that reads every int argument, then fails on another one: so the ends of
# a range are tried without reading a file or allocating what they would cost.
FAILING_CALLS: dict[str, tuple[tuple[Any, ...], dict[str, Any]]] = {
    "file_blocks": ((MISSING,), {"block_bytes": 1}),
    "read_run_block": ((MISSING,), {}),
    "read_table_block": ((42,), {}),
    "fuse_rows": ((42,), {"blocks": [], "names": [], "format": "not a format"}),
    "_kernel_seconds": ((42,), {}),
}


def int_arguments() -> list[tuple[str, str]]:
    """(function, argument) for every argument the stub types as an int."""
    tree = ast.parse(STUB.read_text(encoding="utf-8"))
    return [
        (node.name, arg.arg)
        for node in tree.body
        if isinstance(node, ast.FunctionDef)
        for arg in [*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs]
        if arg.annotation is not None and "int" in ast.unparse(arg.annotation).split(" | ")
    ]


def refusal(function: str, name: str, value: int) -> str | None:
    """The message refusing ``name=value``, or None when the value is read and the call fails after."""
    args, kwargs = FAILING_CALLS[function]
    with pytest.raises(Exception) as raised:  # any failure, once the ints were read
        getattr(_internal, function)(*args, **{**kwargs, name: value})
    message = str(raised.value)
    return message if re.match(rf"{name} must be ", message) else None


def test_every_int_argument_has_a_call() -> None:
    found = int_arguments()
    assert len(found) >= 8, "the stub's int arguments were found"
    assert sorted({function for function, _ in found}) == sorted(FAILING_CALLS)


@pytest.mark.parametrize(("function", "name"), int_arguments())
def test_an_int_argument_accepts_what_its_message_says(function: str, name: str) -> None:
    message = refusal(function, name, -1)
    assert message is not None and message.endswith("(got -1)"), message
    closed = re.search(r"an int from (\d+) to (\d+) \(got", message)
    open_ended = re.search(r"an int >= (\d+) \(got", message)
    assert closed or open_ended, message
    low = int((closed or open_ended).group(1))  # type: ignore[union-attr]
    high = int(closed.group(2)) if closed else 2**63 - 1
    assert refusal(function, name, low) is None
    assert refusal(function, name, high) is None
    if low > 0:
        assert refusal(function, name, low - 1) == message.replace("(got -1)", f"(got {low - 1})")
    if closed:
        assert refusal(function, name, high + 1) == message.replace("(got -1)", f"(got {high + 1})")


# The arguments that size what a call allocates: a block's batches, a fusion's output batches.
SIZING = [("read_run_block", "partitions"), ("fuse_rows", "ranges")]
PROGRAM = """
import resource, sys
cap = 4 << 30  # bytes of address space: a call whose size outgrows it fails instead of taking the machine
resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
from fanfuse._core._internal import fuse_rows, read_run_block
path, name, top = sys.argv[1], sys.argv[2], int(sys.argv[3])
if name == "partitions":
    out = read_run_block(path, partitions=top)[1]
else:
    summary, batches = read_run_block(path)
    out = fuse_rows(batches, blocks=[summary], names=["run"], ranges=top)
print(len(out))
"""


@pytest.mark.parametrize(("function", "name"), SIZING)
def test_the_largest_size_an_argument_accepts_is_a_call_that_completes(
    function: str, name: str, tmp_path: Path
) -> None:
    message = refusal(function, name, -1)
    closed = re.search(r"an int from \d+ to (\d+) \(got", message or "")
    assert closed, f"{name} states its top: {message}"
    run = tmp_path / "run.trec"
    run.write_text("q1 Q0 a 1 2.0 t\nq2 Q0 b 1 1.0 t\n", encoding="utf-8")
    top = closed.group(1)
    done = subprocess.run(
        [sys.executable, "-c", PROGRAM, str(run), name, top], capture_output=True, text=True, check=False
    )
    assert (done.returncode, done.stdout.strip()) == (0, top), done.stderr[-2000:]
