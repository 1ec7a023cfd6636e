"""Text that is not UTF-8 is refused where it comes in, naming it: every word of every command (from
the argparse parsers; a byte the command line cannot decode arrives as a lone surrogate), before the
command does anything; and the library's search inputs (the query, explicit variants, an LLM's
instructions) with a lone surrogate. Unchecked, a query would be searched with U+FFFD and echoed into
`--json` as invalid UTF-8, a `--tag` would fail on encoding, a file name would reach the core
unnamed."""

from __future__ import annotations

import argparse
import asyncio
from pathlib import Path

import pytest
from fanfuse.cli import main
from fanfuse.cli.flags import Renamed
from fanfuse.cli.paths import option_name, path_actions
from fanfuse.cli.utf8 import check_utf8_arguments
from fanfuse.errors import InputError, InvalidSetting
from fanfuse.multiquery import LLMExpander, MultiQueryRetriever
from fanfuse.retrievers.tantivy_index import TantivyRetriever
from test_cli_idle_flags import PARSERS
from test_cli_search_options import DOCUMENTS

BAD = "a\udcffb"  # what the command line makes of the bytes a, 0xff, b


def words_giving(parser: argparse.ArgumentParser, target: argparse.Action) -> list[str]:
    """The command's required words, `target` given BAD."""
    words: list[str] = []
    for action in parser._actions:
        if not action.option_strings:
            if action is target:
                words.append(BAD)
            elif action.nargs not in ("?", "*"):
                words.append("1")
        elif action is target:
            words += [action.option_strings[-1], BAD]
        elif action.required:
            words += [action.option_strings[-1], "1"]
    return words


WORDS = [
    (command, action)
    for command, parser in PARSERS.items()
    for action in parser._actions
    # An old spelling is refused whatever its value, naming the new one.
    if action.nargs != 0 and not isinstance(action, argparse._HelpAction | Renamed)
]


@pytest.mark.parametrize(
    ("command", "action"), WORDS, ids=[f"{command} {option_name(action)}" for command, action in WORDS]
)
def test_every_word_of_every_command_is_refused_naming_it(
    command: str, action: argparse.Action, capsys: pytest.CaptureFixture[str]
) -> None:
    parser = PARSERS[command]
    option = option_name(action)
    try:
        args = parser.parse_args(words_giving(parser, action))
    except SystemExit:  # a number, a choice: argparse's own refusal, naming it
        assert f"argument {option if action.option_strings else action.dest}" in capsys.readouterr().err
        return
    is_path = action in {path_action for path_action, _, _ in path_actions(parser)}
    with pytest.raises(InputError if is_path else InvalidSetting) as refused:
        check_utf8_arguments(parser, args)
    assert "(byte 0xff at position 2" in str(refused.value)
    expected = f"{option} 'a\\xffb': the name is not UTF-8" if is_path else f"argument {option}: is not UTF-8"
    assert str(refused.value).startswith(expected), str(refused.value)


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("text-arguments") / "idx"
    TantivyRetriever.build(DOCUMENTS, directory)
    return directory


def test_a_command_refuses_before_doing_anything(
    index: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = tmp_path / "run.trec"
    run.write_text("q1 Q0 a 1 2.0 t\nq1 Q0 b 2 1.0 t\n")
    named = tmp_path / "r\udcff.trec"
    named.write_text(run.read_text())
    out = tmp_path / "out.trec"
    for argv, expected in [
        (["search", "owls \udcff", "--index", str(index), "--json"], "argument QUERY: is not UTF-8 text"),
        (["fuse", str(run), str(run), "-o", str(out), "--tag", "t\udcff"], "argument --tag: is not UTF-8"),
        (["fuse", str(named), str(run), "-o", str(out)], "RUN '" + str(tmp_path) + "/r\\xff.trec': the name"),
        (["fuse", str(run), str(run), "-o", str(tmp_path / "o\udcff")], "--output '"),
    ]:
        assert main(argv) == 2
        captured = capsys.readouterr()
        assert captured.out == ""
        assert captured.err.count("\n") == 1 and expected in captured.err, captured.err
        assert sorted(p.name for p in tmp_path.iterdir()) == sorted([run.name, named.name])


def test_the_search_inputs_of_the_library_refuse_a_lone_surrogate(index: Path) -> None:
    retriever = MultiQueryRetriever([TantivyRetriever(index)])
    calls = {
        "search": lambda **kw: retriever.search(**kw),
        "asearch": lambda **kw: asyncio.run(retriever.asearch(**kw)),
    }
    for name, call in calls.items():
        with pytest.raises(InvalidSetting, match=r"^query is not valid Unicode: .* at index 5"):
            call(query="owls \ud800")
        with pytest.raises(InvalidSetting, match=r"^variants\[1\] is not valid Unicode"):
            call(query="owls", variants=["owls", "mice \udcff"])
        assert call(query="owls é ✓").hits, name
    with pytest.raises(InvalidSetting, match=r"^instructions is not valid Unicode"):
        LLMExpander("http://127.0.0.1:9/v1", model="m", instructions="About \udcff owls.", environ={})
    with pytest.raises(TypeError, match="instructions must be a str or None"):
        LLMExpander("http://127.0.0.1:9/v1", model="m", instructions=3, environ={})  # type: ignore[arg-type]
