"""An output path that cannot be written is refused as ``InvalidOutput`` (an ``InputError``, never a
``FusionError``, which is for fusion input only) whichever writer meets it: the core's run writers,
the Python layer's guard, the distributed engine's writer. Enumerated from the parsers (every option
of every command declared as an output file or folder: exit 2, one line naming the option and the
path) and from
the API (every callable of ``fanfuse.__all__`` and of the binding with a path parameter is a writer,
checked here, or a reader, listed), so a new writer cannot miss the check."""

from __future__ import annotations

import argparse
import inspect
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import fanfuse
import pytest
from command_inputs import write_inputs
from fanfuse import _core
from fanfuse._core import _internal
from fanfuse.cli import _common, build_parser, command_parsers, main
from fanfuse.cli.paths import INPUT, OUTPUT, OUTPUT_DIRECTORY, option_name, path_actions
from fanfuse.errors import InputError, InvalidOutput

# Paths no writer can write, by what they are; a folder output may be missing (it is created).
UNWRITABLE = {
    OUTPUT: ("in a missing folder", "under a regular file", "a folder"),
    OUTPUT_DIRECTORY: ("under a regular file",),
}


def unwritable(directory: Path, what: str) -> Path:
    if what == "in a missing folder":
        return directory / "missing" / "out"
    if what == "under a regular file":
        (directory / "regular").write_text("")
        return directory / "regular" / "out"
    (directory / "folder").mkdir()
    return directory / "folder"


def test_the_error_classes_are_one_family() -> None:
    assert fanfuse.errors.InvalidOutput is fanfuse.InvalidOutput is _core.InvalidOutput
    assert fanfuse.errors.InputError is fanfuse.InputError is _core.InputError
    assert issubclass(InvalidOutput, InputError) and issubclass(InputError, ValueError)
    assert not issubclass(InvalidOutput, fanfuse.FusionError)
    assert not issubclass(fanfuse.FusionError, InputError)


# The command line: a valid invocation (in the files of `write_inputs`) for every output option.
INVOCATIONS = [
    [
        "fuse", "a.trec", "b.trec", "--method", "probfuse", "--train-runs", "a.trec", "b.trec",
        "--train-qrels", "qrels.txt", "--save-model", "new-model.json", "-o", "out.trec",
    ],
    ["fuse", "a.trec", "b.trec", "-o", "out.trec", "--engine", "dask"],
    [
        "eval", "a.trec", "b.trec", "--qrels", "qrels.txt", "--baseline", "0", "-o", "report.txt",
        "--plot", "p.png",
    ],
    ["index", "corpus.jsonl", "--index", "index"],
    ["demo", "--no-dense", "--cache-dir", "cache", "a question"],
]  # fmt: skip


def command_parser(command: str) -> argparse.ArgumentParser:
    return command_parsers(build_parser(command))[command]


def output_flags(command: str) -> dict[str, tuple[str, str]]:
    """Each flag of a command's outputs: (how messages name the option, its role)."""
    return {
        flag: (option_name(action), role)
        for action, role, _ in path_actions(command_parser(command))
        if role != INPUT
        for flag in action.option_strings
    }


def cli_cases() -> Iterator[tuple[list[str], int, str]]:
    """(invocation, position of an output's path, what unwritable path it is given)."""
    for argv in INVOCATIONS:
        flags = output_flags(argv[0])
        for at in range(1, len(argv)):
            if argv[at - 1] in flags:
                for what in UNWRITABLE[flags[argv[at - 1]][1]]:
                    yield argv, at, what


CLI_CASES = list(cli_cases())


def test_the_invocations_give_every_output_option_of_every_command() -> None:
    declared = {
        (command, option_name(action))
        for command, parser in command_parsers(build_parser()).items()
        for action, role, _ in path_actions(parser)
        if role != INPUT
    }
    given = {(argv[0], output_flags(argv[0])[argv[at - 1]][0]) for argv, at, _ in CLI_CASES}
    assert declared - given == set(), "add an invocation giving these to INVOCATIONS"


@pytest.fixture()
def raised(monkeypatch: pytest.MonkeyPatch) -> list[BaseException]:
    """The exceptions commands end on (observed on their way to the one place commands end)."""
    caught: list[BaseException] = []
    ending = _common.run_command

    def observed(command: str, run: Callable[[], int]) -> int:
        def recording() -> int:
            try:
                return run()
            except BaseException as error:
                caught.append(error)
                raise

        return ending(command, recording)

    monkeypatch.setattr(_common, "run_command", observed)
    return caught


def cli_case_id(case: tuple[list[str], int, str]) -> str:
    argv, at, what = case
    engine = " --engine dask" if "dask" in argv else ""
    return f"{argv[0]}{engine} {argv[at - 1]} {what}"


@pytest.mark.parametrize("case", CLI_CASES, ids=cli_case_id)
def test_an_unwritable_output_of_a_command_is_invalid_output(
    case: tuple[list[str], int, str],
    tmp_path: Path,
    raised: list[BaseException],
    capsys: pytest.CaptureFixture[str],
) -> None:
    argv, at, what = case
    if "dask" in argv:
        pytest.importorskip("dask")
    if "--plot" in argv:
        pytest.importorskip("matplotlib")
    files = write_inputs(tmp_path)
    given = [str(files / word) if (files / word).exists() else word for word in argv]
    flags = output_flags(argv[0])
    for i in range(1, len(argv)):
        if argv[i - 1] in flags:
            given[i] = str(files / argv[i])
    path = unwritable(files, what)
    given[at] = str(path)
    assert main(given) == 2
    err = capsys.readouterr().err
    # Led by the option, as a refusal of an input is: `--output '/x': is a directory; ...`.
    option = flags[argv[at - 1]][0]
    assert err.startswith(f"fanfuse {argv[0]}: error: {option} '{path}': ") and err.count("\n") == 1, err
    assert [type(error) for error in raised] == [InvalidOutput], raised


# The API: each callable with a parameter naming a path, read or written.
PATH_PARAMETERS = {"path", "output", "directory", "target"}
READERS = {
    "read_run", "read_qrels", "FusionModel.load", "TfidfSvdEmbedder.load", "TantivyRetriever",
    "_Lines", "file_blocks", "read_run_block",
}  # fmt: skip


def _parameters(member: object) -> set[str]:
    try:
        return set(inspect.signature(member).parameters)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return set()


def path_callables() -> set[str]:
    """The public callables and the binding's, with a path parameter: `name` or `Class.method`."""
    found = set()
    modules = [
        (fanfuse, fanfuse.__all__),
        (_core, [name for name in dir(_core) if not name.startswith("__")]),
        (_internal, [name for name in dir(_internal) if not name.startswith("__")]),
    ]
    for module, names in modules:
        for name in names:
            member = getattr(module, name)
            if inspect.isclass(member) and issubclass(member, BaseException):
                continue
            if _parameters(member) & PATH_PARAMETERS:
                found.add(getattr(member, "__name__", name))
            if inspect.isclass(member):
                for method in dir(member):
                    if not method.startswith("__") and _parameters(getattr(member, method)) & PATH_PARAMETERS:
                        found.add(f"{member.__name__}.{method}")
    return found


class Inputs:
    """What the writers write: two runs, a trained model, a report, an embedder, documents."""

    def __init__(self, directory: Path) -> None:
        write_inputs(directory)
        self.runs = [str(directory / "a.trec"), str(directory / "b.trec")]
        self.run = fanfuse.read_run(self.runs[0])
        self.model = fanfuse.FusionModel.load(str(directory / "model.json"))
        self.qrels = str(directory / "qrels.txt")


def _plot(inputs: Inputs, path: Path) -> None:
    pytest.importorskip("matplotlib")
    fanfuse.compare(inputs.runs, inputs.qrels, ["ndcg@10"]).plot(path)


def _embedder(inputs: Inputs, path: Path) -> None:
    fanfuse.TfidfSvdEmbedder(dimensions=2).fit(["alpha beta", "beta gamma", "gamma delta"]).save(path)


def _write_run_text(inputs: Inputs, path: Path) -> None:
    _internal.write_run_text(str(path), [b"q1 Q0 d1 1 1 fanfuse\n"])


def _output(inputs: Inputs, path: Path) -> None:
    _internal._Output(str(path), [])


def _publish(inputs: Inputs, path: Path) -> None:
    staged = _internal._StagedDirectory(str(path.parent.parent / "staged"))
    try:
        staged.publish(str(path))
    finally:
        staged.discard()


# Each writer, called to write `path`, and the role of what it writes.
WRITERS: dict[str, tuple[Callable[[Inputs, Path], Any], str]] = {
    "fuse_files": (lambda inputs, path: fanfuse.fuse_files(inputs.runs, str(path)), OUTPUT),
    "Run.write": (lambda inputs, path: inputs.run.write(str(path)), OUTPUT),
    "FusionModel.save": (lambda inputs, path: inputs.model.save(str(path)), OUTPUT),
    "Report.plot": (_plot, OUTPUT),
    "TfidfSvdEmbedder.save": (_embedder, OUTPUT),
    "TantivyRetriever.build": (
        lambda inputs, path: fanfuse.TantivyRetriever.build([{"id": "d", "text": "t"}], path),
        OUTPUT_DIRECTORY,
    ),
    "write_run_text": (_write_run_text, OUTPUT),
    "_Output": (_output, OUTPUT),
    "_StagedDirectory": (lambda inputs, path: _internal._StagedDirectory(str(path)), OUTPUT_DIRECTORY),
    "_StagedDirectory.publish": (_publish, OUTPUT_DIRECTORY),
    "_retire_directory": (lambda inputs, path: _internal._retire_directory(str(path)), OUTPUT_DIRECTORY),
    "_sync_directory": (lambda inputs, path: _internal._sync_directory(str(path)), OUTPUT_DIRECTORY),
}


def test_every_callable_with_a_path_is_a_checked_writer_or_a_reader() -> None:
    assert not set(WRITERS) & READERS
    assert path_callables() == set(WRITERS) | READERS


@pytest.mark.parametrize(
    ("name", "what"), [(name, what) for name, (_, role) in WRITERS.items() for what in UNWRITABLE[role]]
)
def test_an_unwritable_path_given_to_a_writer_is_invalid_output(name: str, what: str, tmp_path: Path) -> None:
    write, _ = WRITERS[name]
    inputs = Inputs(tmp_path)
    path = unwritable(tmp_path, what)
    with pytest.raises(ValueError) as raised:
        write(inputs, path)
    assert type(raised.value) is InvalidOutput, f"{name}: {type(raised.value).__name__}: {raised.value}"
    message = str(raised.value)
    assert str(path) in message and "\n" not in message, message
