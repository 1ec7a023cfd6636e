"""No input eats the machine. Every file a command reads line by line is read with bounded lines
(16 MiB) and fields (64 KiB), a conversation (`--history`) with lines of one turn's bound, and a
whole-file input (a saved model) with a bounded size. Each input option of every command (from the
parsers) is given, in turn, a file whose first line never ends (a sparse file of NULs: like
/dev/zero, but with an end), and is refused with exit 2 naming file:line and the limit. /dev/zero
itself, the issue's example, is read by a process whose address space is capped: an unbounded
reader fails by running out of it instead of taking the machine's memory."""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
from pathlib import Path

import pytest
from cli_process import CLI
from command_inputs import write_inputs
from fanfuse import FusionError, InvalidCorpus, read_run
from fanfuse._core import READER_LIMITS
from fanfuse.cli import build_parser, command_parsers, main
from fanfuse.cli.conversation import MAX_LINE_BYTES as MAX_HISTORY_LINE
from fanfuse.cli.paths import INPUT, option_name, path_actions
from fanfuse.corpus import read_jsonl, read_lines
from fanfuse.retrievers.tantivy_index import TantivyRetriever

LINE, FIELD = READER_LIMITS["line"], READER_LIMITS["field"]
# Inputs read from a file's content (not an index directory), and valid invocations giving each.
READ_KINDS = ("run", "qrels", "corpus", "model", "history")
INVOCATIONS = [
    ["fuse", "a.trec", "b.trec", "-o", "out.trec"],
    [
        "fuse", "a.trec", "b.trec", "--method", "probfuse", "--train-runs", "a.trec", "b.trec",
        "--train-qrels", "qrels.txt", "-o", "out.trec",
    ],
    ["fuse", "a.trec", "b.trec", "--method", "probfuse", "--model", "model.json", "-o", "out.trec"],
    ["eval", "a.trec", "b.trec", "--qrels", "qrels.txt"],
    ["tune", "a.trec", "b.trec", "--qrels", "qrels.txt", "--folds", "2"],
    ["index", "corpus.jsonl", "--index", "index"],
    ["search", "alpha", "--index", "index", "--no-dense", "--history", "history.jsonl"],
]  # fmt: skip


def read_inputs(command: str) -> list[tuple[argparse.Action, str]]:
    """The input options of a command that name files read for their content, with their kind."""
    parser = command_parsers(build_parser(command))[command]
    return [(a, kind) for a, role, kind in path_actions(parser) if role == INPUT and kind in READ_KINDS]


def input_positions(argv: list[str]) -> list[tuple[int, str]]:
    """(position, kind) of every input word of an invocation that is read as a file."""
    actions = read_inputs(argv[0])
    parser = command_parsers(build_parser(argv[0]))[argv[0]]
    args = parser.parse_args(argv[1:])
    positions = []
    for action, kind in actions:
        value = getattr(args, action.dest)
        values = value if isinstance(value, list) else [] if value is None else [value]
        flag_at = next((i for i, w in enumerate(argv) if w in action.option_strings), None)
        start = flag_at + 1 if flag_at is not None else 1
        for offset, word in enumerate(values):
            at = argv.index(word, start + offset) if flag_at is None else start + offset
            positions.append((at, kind))
    return sorted(set(positions))


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = write_inputs(tmp_path_factory.mktemp("bounds"))
    with (directory / "endless").open("wb") as endless:  # sparse: no disk, no newline
        endless.truncate(LINE + 1)
    with (directory / "huge-model").open("wb") as huge:
        huge.truncate((256 << 20) + 1)
    (directory / "history.jsonl").write_text('"How do I rotate the keys?"\n')
    TantivyRetriever.build(read_jsonl(directory / "corpus.jsonl"), directory / "index")
    return directory


def test_the_invocations_give_every_input_read_from_a_file() -> None:
    for command, parser in command_parsers(build_parser()).items():
        given = {
            option_name(a)
            for argv in INVOCATIONS
            if argv[0] == command
            for a, _ in read_inputs(command)
            if getattr(parser.parse_args(argv[1:]), a.dest) not in (None, [])
        }
        assert {option_name(a) for a, _ in read_inputs(command)} == given, command


CASES = [(argv, at, kind) for argv in INVOCATIONS for at, kind in input_positions(argv)]


@pytest.mark.parametrize(
    ("argv", "at", "kind"), CASES, ids=[f"{a[0]} {a[at - 1]}->{a[at]}" for a, at, _ in CASES]
)
def test_an_input_without_an_end_is_refused_at_its_first_line(
    files: Path, argv: list[str], at: int, kind: str, capsys: pytest.CaptureFixture[str]
) -> None:
    full = [str(files / w) if (files / w).is_file() else w for w in argv]
    for flag in ("-o", "--index"):  # outputs go to the test's directory too
        if flag in argv:
            full[argv.index(flag) + 1] = str(files / argv[argv.index(flag) + 1])
    endless = files / ("huge-model" if kind == "model" else "endless")
    full[at] = str(endless)
    assert main(full) == 2
    err = capsys.readouterr().err
    limits = {
        "model": "the file is longer than 256 MiB",
        # A conversation's line holds one turn: its bound is the turn's, far below a run's line.
        "history": f"--history {endless}:1: the line is longer than {MAX_HISTORY_LINE} bytes",
    }
    limit = limits.get(kind, f"{endless}:1: the line is longer than 16 MiB")
    assert limit in err and len(err.splitlines()) == 1, err


def test_fields_and_ids_longer_than_the_limit_name_their_line(files: Path, tmp_path: Path) -> None:
    long_id = "d" * (FIELD + 1)
    trec = tmp_path / "long.trec"
    trec.write_text(f"q1 Q0 d1 1 2 t\nq1 Q0 {long_id} 2 1 t\n")
    with pytest.raises(
        FusionError, match=r"long\.trec:2: field 3 'd{60}…' \(65537 bytes\) is 65537 bytes long"
    ):
        read_run(str(trec))
    assert main(["fuse", str(trec), "-o", str(tmp_path / "out")]) == 2
    mtrag = tmp_path / "long.jsonl"
    mtrag.write_text(json.dumps({"task_id": "q", "contexts": [{"document_id": long_id, "score": 1}]}) + "\n")
    with pytest.raises(FusionError, match=r"long\.jsonl:1: contexts\[0\]\.document_id is 65537 bytes long"):
        read_run(str(mtrag))
    just = tmp_path / "just.trec"
    just.write_text(f"q1 Q0 {long_id[1:]} 1 2 t\n")
    assert len(read_run(str(just))) == 1


def test_the_corpus_reader_is_the_core_line_reader(files: Path, tmp_path: Path) -> None:
    lines = tmp_path / "lines.txt"
    lines.write_bytes(b"\xef\xbb\xbffirst\r\n\nthird")
    assert list(read_lines(lines)) == [(1, "first"), (2, ""), (3, "third")]
    with pytest.raises(InvalidCorpus, match=r"endless:1: the line is longer than 16 MiB"):
        list(read_lines(files / "endless"))


def capped(gigabytes: int) -> None:
    """Caps the address space of the child process (run between fork and exec)."""
    limit = gigabytes << 30
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))


@pytest.mark.parametrize(
    "argv",
    [["fuse", "/dev/zero", "-o", "out.trec"], ["eval", "a.trec", "--qrels", "/dev/zero"]],
    ids=["fuse", "eval-qrels"],
)
def test_dev_zero_is_refused_in_a_capped_process(files: Path, tmp_path: Path, argv: list[str]) -> None:
    full = [str(files / w) if (files / w).is_file() else w for w in argv]
    done = subprocess.run(
        [*CLI, *full],
        cwd=tmp_path,
        capture_output=True,
        timeout=300,
        check=False,
        preexec_fn=lambda: capped(4),
    )
    assert done.returncode == 2, done.stderr.decode()[-2000:]
    assert done.stderr.decode().endswith(
        "/dev/zero:1: the line is longer than 16 MiB, the most a line may hold; "
        "this is not a text file of lines (a run, qrels or corpus)?\n"
    )
