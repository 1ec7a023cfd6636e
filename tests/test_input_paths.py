"""An input that cannot be read as what it is for is refused before the command runs, naming the
option, the path, what is wrong and what the option takes: missing, a directory given for a file, a
file given for an index directory. Every input option of every command (from the parsers) is given
each, and nothing is written. A pipe or a device is a file (`--history -`, `/dev/stdin`, `<(...)`).
The library's own refusals say the same (`fanfuse.paths.unreadable`), and an I/O error of the core
reads in the system's words, without Rust's `(os error N)`."""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import fanfuse
import pytest
from fanfuse.cli import build_parser, command_parsers, main
from fanfuse.cli.paths import DASH_INPUT, INPUT, KINDS, TAKES, option_name, path_actions
from fanfuse.corpus import read_jsonl
from fanfuse.paths import unreadable
from test_input_bounds import INVOCATIONS as READ_INVOCATIONS
from test_input_bounds import files  # noqa: F401 (the fixture the invocations need)

# The read inputs' invocations, and those giving an index directory.
INVOCATIONS = [*READ_INVOCATIONS, ["serve", "--index", "index", "--port", "0"]]


def input_words(argv: list[str]) -> list[tuple[int, str, str]]:
    """(position, kind, option) of every input word of an invocation, from the command's parser."""
    parser = command_parsers(build_parser(argv[0]))[argv[0]]
    args = parser.parse_args(argv[1:])
    found = []
    for action, role, kind in path_actions(parser):
        value = getattr(args, action.dest)
        values = value if isinstance(value, list) else [] if value is None else [value]
        if role != INPUT or not values:
            continue
        flag_at = next((i for i, w in enumerate(argv) if w in action.option_strings), None)
        start = flag_at + 1 if flag_at is not None else argv.index(values[0], 1)
        found += [(start + offset, kind, option_name(action)) for offset in range(len(values))]
    return sorted(found)


CASES = [
    (argv, at, kind, option, wrong)
    for argv in INVOCATIONS
    for at, kind, option in input_words(argv)
    for wrong in ("missing", "other kind", "dash")
    if wrong != "dash" or kind not in ("history", "index")
]


def test_the_invocations_give_every_input_of_every_command() -> None:
    for command, parser in command_parsers(build_parser()).items():
        inputs = {option_name(a) for a, role, _ in path_actions(parser) if role == INPUT}
        given = {
            option_name(a)
            for argv in INVOCATIONS
            if argv[0] == command
            for a, role, _ in path_actions(parser)
            if role == INPUT and getattr(parser.parse_args(argv[1:]), a.dest) not in (None, [])
        }
        assert inputs == given, command
    assert set(TAKES) == set(KINDS)


@pytest.mark.parametrize(
    ("argv", "at", "kind", "option", "wrong"),
    CASES,
    ids=[f"{a[0]} {option}={a[at]} {wrong}" for a, at, _, option, wrong in CASES],
)
def test_an_unreadable_input_is_refused_naming_option_path_and_what_it_takes(
    files: Path,  # noqa: F811
    tmp_path: Path,
    argv: list[str],
    at: int,
    kind: str,
    option: str,
    wrong: str,
    capsys: pytest.CaptureFixture[str],
) -> None:
    full = [str(files / w) if i > 0 and (files / w).exists() else w for i, w in enumerate(argv)]
    if "-o" in argv:  # the output goes to this test's folder
        full[argv.index("-o") + 1] = str(tmp_path / "out")
    if argv[0] == "index":
        full[argv.index("--index") + 1] = str(tmp_path / "new-index")
    if wrong == "dash":
        full[at] = "-"
        assert main(full) == 2
        assert capsys.readouterr().err.strip() == f"fanfuse {argv[0]}: error: {option} '-': {DASH_INPUT}"
        return
    if wrong == "missing":
        given, problem = tmp_path / "nowhere", "no such file or directory"
    elif kind == "index":
        given, problem = files / "a.trec", "is not a directory"
    else:
        given, problem = tmp_path, "is a directory"
    full[at] = str(given)
    before = sorted(tmp_path.iterdir())
    assert main(full) == 2
    err = capsys.readouterr().err
    expected = f"fanfuse {argv[0]}: error: {option} {str(given)!r}: {problem}; give {TAKES[kind]}"
    assert err.strip() == expected
    assert sorted(tmp_path.iterdir()) == before


def test_a_pipe_is_a_file_and_a_conversation_on_standard_input_is_taken(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    assert unreadable(fifo) is None
    assert unreadable("/dev/stdin") is None
    assert unreadable(tmp_path, folder=True) is None
    assert unreadable(fifo, folder=True) == "is not a directory"
    assert unreadable(tmp_path / "nowhere" / "x") == "no such file or directory"
    assert unreadable(tmp_path / "fifo" / "x") == "not a directory"


@contextmanager
def fed_pipe(path: Path, text: str) -> Iterator[Path]:
    """A FIFO at `path` that a thread feeds `text` to (once a reader opens it)."""
    os.mkfifo(path)

    def write() -> None:
        with contextlib.suppress(BrokenPipeError), path.open("w") as stream:
            stream.write(text)

    writer = threading.Thread(target=write, daemon=True)
    writer.start()
    try:
        yield path
    finally:
        if writer.is_alive():  # nobody opened it: open it once so that the writer ends
            with contextlib.suppress(OSError), open(os.open(path, os.O_RDONLY | os.O_NONBLOCK)):
                pass
        writer.join(timeout=30)


def test_a_corpus_and_qrels_read_once_from_a_pipe_are_read(tmp_path: Path) -> None:
    # Opening the pipe waits for its writer without holding the GIL, which the writer needs.
    corpus = '{"id": "a", "text": "one"}\n{"id": "b", "text": "two"}\n'
    with fed_pipe(tmp_path / "corpus.jsonl", corpus) as fifo:
        assert [d.id for d in read_jsonl(fifo)] == ["a", "b"]
    with fed_pipe(tmp_path / "qrels", "q1 0 a 1\nq2 0 b 2\n") as fifo:
        assert fanfuse.read_qrels(str(fifo)).qids() == ["q1", "q2"]


RUN = "q1 Q0 a 1 2.0 t\nq1 Q0 b 2 1.0 t\n"
PIPE_REFUSED = (
    "is a pipe; a run is read more than once (its format, then its lines), which a pipe cannot give"
)


def test_a_run_on_a_pipe_is_refused_saying_why_and_what_to_give(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with fed_pipe(tmp_path / "run", RUN) as fifo, pytest.raises(fanfuse.FusionError) as refused:
        fanfuse.read_run(str(fifo))
    assert str(refused.value) == f"{fifo}: {PIPE_REFUSED}: write it to a file and give the file"
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("q1 0 a 1\n")
    with fed_pipe(tmp_path / "run2", RUN) as fifo:
        assert main(["eval", str(fifo), "--qrels", str(qrels)]) == 2
    assert f"fanfuse eval: error: {fifo}: {PIPE_REFUSED}" in capsys.readouterr().err


def test_the_library_names_what_is_wrong_with_a_path(tmp_path: Path) -> None:
    with pytest.raises(fanfuse.InvalidCorpus, match="is a directory \\(expected a JSONL file"):
        list(read_jsonl(tmp_path))
    with pytest.raises(fanfuse.InvalidCorpus, match="no such file or directory \\(expected a JSONL file"):
        list(read_jsonl(tmp_path / "nowhere.jsonl"))
    with pytest.raises(fanfuse.FusionError) as refused:
        fanfuse.read_run(str(tmp_path))
    assert str(refused.value) == f"{tmp_path}: Is a directory"
    with pytest.raises(fanfuse.FusionError) as refused:
        fanfuse.read_qrels(str(tmp_path / "nowhere"))
    assert str(refused.value) == f"{tmp_path / 'nowhere'}: No such file or directory"


def test_qrels_and_a_corpus_on_a_pipe_serve_the_commands(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    run, qrels = tmp_path / "run.trec", tmp_path / "qrels.txt"
    run.write_text(RUN)
    qrels.write_text("q1 0 a 1\n")
    assert main(["eval", str(run), "--qrels", str(qrels), "--json"]) == 0
    from_file = capsys.readouterr().out
    # Parquet is looked for in a file's first bytes; a pipe is not asked (they would be gone).
    with fed_pipe(tmp_path / "qrels-pipe", "q1 0 a 1\n") as fifo:
        assert main(["eval", str(run), "--qrels", str(fifo), "--json"]) == 0
    assert capsys.readouterr().out == from_file.replace(str(qrels), str(fifo))
    # With a progress bar shown, the lines of a file are counted first; those of a pipe are not
    # (counting would read the documents away and index none).
    monkeypatch.setattr("sys.stderr.isatty", lambda: True)
    corpus = '{"id": "a", "text": "owls at night"}\n{"id": "b", "text": "larks at dawn"}\n'
    with fed_pipe(tmp_path / "corpus.jsonl", corpus) as fifo:
        assert main(["index", str(fifo), "--index", str(tmp_path / "index")]) == 0
    from_pipe = capsys.readouterr()
    assert "indexed 2 documents" in from_pipe.out
    assert "2/2" not in from_pipe.err  # no total: the pipe was not counted
    file = tmp_path / "corpus-file.jsonl"
    file.write_text(corpus)
    assert main(["index", str(file), "--index", str(tmp_path / "index-of-file")]) == 0
    from_file = capsys.readouterr()
    assert "indexed 2 documents" in from_file.out
    assert "2/2 100%" in from_file.err
