"""Every output of every command is checked against the command's inputs and its other outputs
before the command runs. The path options come from the parsers (declared with `fanfuse.cli.paths`);
each output of an invocation is given, in turn, the path of every other file of the same invocation
(an input, another output), spelled as it is, as a symbolic link and as a hard link, and an output
directory is given the directory that holds an input. Each is refused with exit 2 naming both
options, and no file changes. The invocations cover every path option of every command that has an
output and something to pair it with (asserted), so a new option cannot miss the check."""

from __future__ import annotations

import argparse
import os
from collections.abc import Iterator
from pathlib import Path

import fanfuse
import pytest
from command_inputs import write_inputs
from fanfuse.cli import COMMANDS, build_parser, command_parsers, main
from fanfuse.cli.paths import INPUT, OUTPUT, OUTPUT_DIRECTORY, option_name, path_actions

PREVIOUS = b"a previous output the user wants to keep\n"

# Valid invocations, in files named by these words (created by the `files` fixture; outputs are new).
INVOCATIONS = [
    ["fuse", "a.trec", "b.trec", "-o", "out.trec"],
    ["fuse", "a.trec", "b.trec", "-o", "out.trec", "--engine", "dask"],
    [
        "fuse", "a.trec", "b.trec", "--method", "probfuse", "--train-runs", "a.trec", "b.trec",
        "--train-qrels", "qrels.txt", "--save-model", "new-model.json", "-o", "out.trec",
    ],
    ["fuse", "a.trec", "b.trec", "--method", "probfuse", "--model", "model.json", "-o", "out.trec"],
    [
        "eval", "a.trec", "b.trec", "--qrels", "qrels.txt", "--baseline", "0", "-o", "report.txt",
        "--plot", "p.png",
    ],
    ["index", "corpus.jsonl", "--index", "index"],
]  # fmt: skip


def command_parser(command: str) -> argparse.ArgumentParser:
    return command_parsers(build_parser(command))[command]


def given_paths(argv: list[str]) -> dict[str, str]:
    """The path arguments of an invocation, each with its role (from the command's parser)."""
    parser = command_parser(argv[0])
    args = parser.parse_args(argv[1:])
    found = {}
    for action, role, _ in path_actions(parser):
        value = getattr(args, action.dest)
        for path in value if isinstance(value, list) else [] if value is None else [value]:
            found[path] = role
    return found


def output_positions(argv: list[str]) -> list[int]:
    """Where the outputs (files and directories) stand in argv: after their flags."""
    parser = command_parser(argv[0])
    flags = {f for action, role, _ in path_actions(parser) if role != INPUT for f in action.option_strings}
    return [i for i in range(1, len(argv)) if argv[i - 1] in flags]


@pytest.fixture()
def files(tmp_path: Path) -> Path:
    return write_inputs(tmp_path)


def snapshot(directory: Path) -> dict[str, bytes | None]:
    return {
        str(p.relative_to(directory)): None if p.is_dir() else p.read_bytes()
        for p in sorted(directory.rglob("*"))
        if not p.is_symlink()
    }


def in_dir(argv: list[str], directory: Path) -> list[str]:
    """argv with its file words made paths in `directory`."""
    names = given_paths(argv)
    return [str(directory / w) if i > 0 and w in names else w for i, w in enumerate(argv)]


def cases() -> Iterator[tuple[list[str], int, str, str]]:
    """(invocation, position of an output, the path it is given, the spelling)."""
    for argv in INVOCATIONS:
        paths = given_paths(argv)
        for at in output_positions(argv):
            for other in sorted(p for p in paths if p != argv[at]):
                for spelling in ("same", "symlink", "hardlink"):
                    yield argv, at, other, spelling
            if paths[argv[at]] == OUTPUT_DIRECTORY:
                yield argv, at, "", "holds an input"


def case_id(case: tuple[list[str], int, str, str]) -> str:
    argv, at, other, spelling = case
    engine = "-dask" if "dask" in argv else ""
    return f"{argv[0]}{engine} {argv[at - 1]}={other or 'dir'} {spelling}"


CASES = list(cases())


def test_the_invocations_cover_every_path_option_of_every_command_with_an_output() -> None:
    for command, parser in command_parsers(build_parser()).items():
        actions = path_actions(parser)
        if len(actions) < 2 or all(role == INPUT for _, role, _ in actions):
            continue  # nothing to pair an output with (demo --cache-dir; search, serve, tune only read)
        given = set()
        for argv in (a for a in INVOCATIONS if a[0] == command):
            args = parser.parse_args(argv[1:])
            given |= {option_name(a) for a, _, _ in actions if getattr(args, a.dest) not in (None, [])}
        missing = [option_name(a) for a, _, _ in actions if option_name(a) not in given]
        assert missing == [], f"{command}: no invocation gives {missing}; add one to INVOCATIONS"
    assert {argv[0] for argv in INVOCATIONS} <= set(COMMANDS)


# Metavars that say an option names a file or directory.
PATH_WORDS = ("FILE", "DIR", "JSON", "RUN", "QRELS", "CORPUS", "PATH")


def test_every_option_named_as_a_path_is_declared_as_one() -> None:
    for command, parser in command_parsers(build_parser()).items():
        marked = {id(action) for action, _, _ in path_actions(parser)}
        unmarked = [
            option_name(action)
            for action in parser._actions
            if isinstance(action.metavar, str)
            and any(word in action.metavar.upper() for word in PATH_WORDS)
            and id(action) not in marked
        ]
        assert unmarked == [], f"{command}: declare {unmarked} with fanfuse.cli.paths (add_input/add_output)"


@pytest.mark.parametrize("argv", INVOCATIONS, ids=lambda a: " ".join(a[:2]))
def test_each_invocation_runs_as_given(files: Path, argv: list[str]) -> None:
    assert main(in_dir(argv, files)) == 0


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_an_output_on_another_path_of_the_command_is_refused(
    files: Path, case: tuple[list[str], int, str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    argv, at, other, spelling = case
    full = in_dir(argv, files)
    for path, role in given_paths(argv).items():  # outputs exist, so that links to them can be made
        if role == OUTPUT:
            (files / path).write_bytes(PREVIOUS)
    target = files / other
    if spelling == "symlink":
        (files / "alias").symlink_to(target)
        target = files / "alias"
    elif spelling == "hardlink":
        os.link(target, files / "alias")
        target = files / "alias"
    elif spelling == "holds an input":
        target = files  # the directory of every input
    full[at] = str(target)
    before = snapshot(files)
    assert main(full) == 2
    err = capsys.readouterr().err
    option = next(
        option_name(a)
        for a, _, _ in path_actions(command_parser(argv[0]))
        if argv[at - 1] in a.option_strings
    )
    assert err.startswith(f"fanfuse {argv[0]}: error: the "), err
    assert f"{option} '{target}'" in err and len(err.splitlines()) == 1, err
    assert snapshot(files) == before


def test_two_outputs_on_one_new_path_are_refused_before_either_is_written(
    files: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = in_dir(INVOCATIONS[2], files)
    argv[argv.index("--save-model") + 1] = str(files / "out.trec")
    assert main(argv) == 2
    assert "the outputs --output" in capsys.readouterr().err
    assert not (files / "out.trec").exists()


def held_cases() -> Iterator[tuple[list[str], int]]:
    """(invocation, position of an output) for every invocation that writes two files or more."""
    for argv in INVOCATIONS:
        files_out = [at for at in output_positions(argv) if given_paths(argv)[argv[at]] == OUTPUT]
        if len(files_out) >= 2:
            yield from ((argv, at) for at in files_out)


HELD_CASES = list(held_cases())


def test_every_command_writing_two_files_is_among_the_held_cases() -> None:
    writing_two = {
        command
        for command, parser in command_parsers(build_parser()).items()
        if sum(role == OUTPUT for _, role, _ in path_actions(parser)) >= 2
    }
    assert writing_two == {argv[0] for argv, _ in HELD_CASES} and writing_two


@pytest.mark.parametrize("case", HELD_CASES, ids=lambda c: f"{c[0][0]} {c[0][c[1] - 1]}")
def test_an_output_that_fails_leaves_the_other_outputs_as_they_were(
    files: Path, case: tuple[list[str], int], capsys: pytest.CaptureFixture[str]
) -> None:
    argv, at = case
    full = in_dir(argv, files)
    for path, role in given_paths(argv).items():
        if role == OUTPUT:
            (files / path).write_bytes(PREVIOUS)
    full[at] = "/dev/full"  # a write fails there: no space left on device
    before = snapshot(files)
    assert main(full) == 2
    err = capsys.readouterr().err
    assert "/dev/full" in err and len(err.splitlines()) == 1, err
    assert snapshot(files) == before


def test_a_run_that_fails_after_training_leaves_the_saved_model_as_it_was(
    files: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = in_dir(INVOCATIONS[2], files)
    late = files / "late.trec"  # its last line, read after the model is trained, is malformed
    late.write_text((files / "b.trec").read_text() + "q5 Q0 d5-9 six 1.0 b\n")
    argv[argv.index(str(files / "b.trec"))] = str(late)
    (files / "new-model.json").write_bytes(PREVIOUS)
    before = snapshot(files)
    assert main(argv) == 2
    assert "late.trec:31" in capsys.readouterr().err
    assert snapshot(files) == before


def test_the_model_written_beside_the_fused_run_is_the_one_fusion_model_save_writes(files: Path) -> None:
    assert main(in_dir(INVOCATIONS[2], files)) == 0
    written = fanfuse.FusionModel.load(str(files / "new-model.json"))
    written.save(str(files / "saved.json"))
    assert (files / "new-model.json").read_bytes() == (files / "saved.json").read_bytes()
