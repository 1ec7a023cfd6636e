"""`--engine dask` takes an input that is not a regular file (a pipe, a device) as the process engine
does: every input option of every command with `--engine` (from the parsers) is given a real FIFO
fed by a thread, in a separate process; the Dask engine then gives what it gives for the same
content in a regular file, or refuses it as the process engine does (a run on a pipe), never "no
such file". Qrels on a pipe are read once in this process; where the workers of `--scheduler`
would read them by path, they are refused before connecting, naming `--qrels` and saying why."""

from __future__ import annotations

import contextlib
import io
import os
import socket
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from cli_process import CLI
from command_inputs import write_inputs
from fanfuse.cli import build_parser, command_parsers, main
from fanfuse.cli.paths import INPUT, option_name, path_actions

pytest.importorskip("dask", reason="the dask extra is not installed")

# A valid invocation of each command with --engine, giving every input option it has (asserted).
INVOCATIONS = [
    ["fuse", "a.trec", "b.trec", "-o", "out.trec"],
    [
        "fuse", "a.trec", "b.trec", "--method", "probfuse", "--train-runs", "a.trec", "b.trec",
        "--train-qrels", "qrels.txt", "-o", "out.trec",
    ],
    ["fuse", "a.trec", "b.trec", "--method", "probfuse", "--model", "model.json", "-o", "out.trec"],
    ["eval", "a.trec", "b.trec", "--qrels", "qrels.txt", "--json"],
]  # fmt: skip


def _parser(command: str) -> object:
    return command_parsers(build_parser(command))[command]


def _engine_commands() -> list[str]:
    return [
        command
        for command, parser in command_parsers(build_parser()).items()
        if any("--engine" in a.option_strings for a in parser._actions)
    ]


def _input_positions(argv: list[str]) -> list[tuple[int, str]]:
    """(position, option) of the first word of every input option given in `argv`."""
    parser = command_parsers(build_parser(argv[0]))[argv[0]]
    args = parser.parse_args(argv[1:])
    found = []
    for action, role, _ in path_actions(parser):
        value = getattr(args, action.dest)
        if role != INPUT or value in (None, []):
            continue
        first = value[0] if isinstance(value, list) else value
        flag_at = next((i for i, w in enumerate(argv) if w in action.option_strings), None)
        found.append((flag_at + 1 if flag_at is not None else argv.index(first, 1), option_name(action)))
    return found


CASES = [(argv, at, option) for argv in INVOCATIONS for at, option in _input_positions(argv)]


def test_the_invocations_give_every_input_of_every_command_with_an_engine() -> None:
    assert set(_engine_commands()) == {argv[0] for argv in INVOCATIONS}
    for command in _engine_commands():
        parser = command_parsers(build_parser(command))[command]
        inputs = {option_name(a) for a, role, _ in path_actions(parser) if role == INPUT}
        assert inputs == {option for argv, _, option in CASES if argv[0] == command}, command


@contextlib.contextmanager
def fed_fifo(path: Path, data: bytes) -> Iterator[Path]:
    """A FIFO at `path` that a thread feeds `data` to once a reader opens it."""
    os.mkfifo(path)

    def write() -> None:
        with contextlib.suppress(BrokenPipeError), path.open("wb") as stream:
            stream.write(data)

    writer = threading.Thread(target=write, daemon=True)
    writer.start()
    try:
        yield path
    finally:
        if writer.is_alive():  # nobody opened it: open it once so that the writer ends
            with contextlib.suppress(OSError), open(os.open(path, os.O_RDONLY | os.O_NONBLOCK)):
                pass
        writer.join(timeout=30)
        path.unlink()


def _run(argv: list[str], cwd: Path) -> tuple[int, str, str, bytes | None]:
    """The command in its own process: exit code, stdout, stderr and the output file's bytes."""
    out = cwd / "out.trec"
    out.unlink(missing_ok=True)
    done = subprocess.run([*CLI, *argv], cwd=cwd, capture_output=True, timeout=180, check=False)
    written = out.read_bytes() if out.exists() else None
    return done.returncode, done.stdout.decode(), done.stderr.decode(), written


def _outcome(argv: list[str], at: int, cwd: Path, *engine: str) -> tuple[int, str, str, bytes | None]:
    """`argv` with its word at `at` on a FIFO holding that file's bytes; the FIFO's name in what the
    command prints is replaced by the file's, so that outcomes compare."""
    original = argv[at]
    with fed_fifo(cwd / "fifo", (cwd / original).read_bytes()) as fifo:
        code, out, err, written = _run([*argv[:at], str(fifo), *argv[at + 1 :], *engine], cwd)
    return code, out.replace(str(fifo), original), err.replace(str(fifo), original), written


@pytest.mark.parametrize(("argv", "at", "option"), CASES, ids=[f"{a[0]} {o} {a[2]}" for a, _, o in CASES])
def test_an_input_on_a_pipe_is_taken_by_dask_as_by_one_process(
    tmp_path: Path, argv: list[str], at: int, option: str
) -> None:
    write_inputs(tmp_path)
    dask = ("--engine", "dask")
    from_file = _run([*argv, *dask], tmp_path)
    from_pipe = _outcome(argv, at, tmp_path, *dask)
    assert "no such file" not in from_pipe[2], from_pipe[2]
    if from_pipe == from_file:
        return
    # Refused on the pipe alone: as the process engine refuses it, with the same words.
    one_process = _outcome(argv, at, tmp_path)
    assert from_pipe[0] == 2, from_pipe
    assert (from_pipe[0], from_pipe[2]) == (one_process[0], one_process[2])


def test_qrels_on_a_pipe_give_the_report_of_the_file(tmp_path: Path) -> None:
    write_inputs(tmp_path)
    argv = ["eval", "a.trec", "b.trec", "--qrels", "qrels.txt", "--json", "--engine", "dask"]
    from_file = _run(argv, tmp_path)
    assert from_file[0] == 0, from_file[2]
    assert _outcome(argv, argv.index("qrels.txt"), tmp_path) == from_file


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_qrels_on_a_pipe_are_refused_for_a_scheduler_before_connecting(tmp_path: Path) -> None:
    """The workers of a scheduler read the qrels by path, each where it runs: a pipe of this process
    is refused naming --qrels, before the scheduler (here an address where nothing listens) is asked."""
    write_inputs(tmp_path)
    scheduler = f"tcp://127.0.0.1:{_closed_port()}"
    argv = ["eval", "a.trec", "--qrels", "qrels.txt", "--engine", "dask", "--scheduler", scheduler]
    with fed_fifo(tmp_path / "fifo", (tmp_path / "qrels.txt").read_bytes()) as fifo:
        argv[argv.index("qrels.txt")] = str(fifo)
        code, out, err, _ = _run(argv, tmp_path)
    assert code == 2 and out == "", err
    assert err.startswith(f"fanfuse eval: error: --qrels {str(fifo)!r}: is a pipe"), err
    assert "--scheduler" in err and "cannot connect" not in err, err


@pytest.mark.parametrize("device", ["/dev/zero", "/dev/null"])
def test_qrels_on_a_device_are_read_as_one_process_reads_them(tmp_path: Path, device: str) -> None:
    write_inputs(tmp_path)
    said = []
    for engine in ([], ["--engine", "dask"]):
        err = io.StringIO()
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            code = main(["eval", str(tmp_path / "a.trec"), "--qrels", device, *engine])
        said.append((code, err.getvalue()))
    assert said[0][0] == 2
    assert said[1] == said[0]
