"""One flag name per concept, read from the parsers and the table of `fanfuse.cli.flags`: a flag of
several commands is in the table and has the same destination, value type and choices in each; a
destination has one flag name everywhere; an old spelling exits 2 naming the new one; a misspelt
flag exits 2 naming the command and the flag meant; the service's request fields are the flags' words."""

from __future__ import annotations

import argparse
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest
from fanfuse.cli import build_parser, main
from fanfuse.cli.flags import MAX_HITS, REMOVED, RENAMED, SHARED, Renamed, search_top_k
from fanfuse.errors import OutOfRange


def commands() -> dict[str, argparse.ArgumentParser]:
    parser = build_parser()
    (sub,) = (a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return dict(sub.choices)


def options() -> list[tuple[str, str, argparse.Action]]:
    """(command, flag, action) of every option of every command but the renamed spellings."""
    return [
        (name, flag, action)
        for name, parser in commands().items()
        for action in parser._actions
        if not isinstance(action, Renamed)
        for flag in action.option_strings
    ]


def value_kind(action: argparse.Action) -> Any:
    """What a flag's value is: its LIMITS row for a number (the note may say what 0 means where),
    else its type."""
    return getattr(action.type, "limit", action.type)


def test_a_flag_of_several_commands_is_in_the_table_and_means_the_same_in_each() -> None:
    by_flag: dict[str, list[tuple[str, argparse.Action]]] = defaultdict(list)
    for command, flag, action in options():
        by_flag[flag].append((command, action))
    shared = {flag for flag, uses in by_flag.items() if len(uses) > 1}
    assert shared == set(SHARED), "fanfuse.cli.flags.SHARED lists exactly the flags of several commands"
    for flag in shared:
        uses = by_flag[flag]
        assert len({a.dest for _, a in uses}) == 1, (flag, [(c, a.dest) for c, a in uses])
        assert len({repr(value_kind(a)) for _, a in uses}) == 1, (flag, [(c, a.type) for c, a in uses])
        listed = {tuple(a.choices) for _, a in uses if a.choices is not None}
        assert len(listed) <= 1, (flag, listed)


def test_a_destination_has_one_flag_name_in_every_command() -> None:
    names: dict[str, set[str]] = defaultdict(set)
    for _, flag, action in options():
        if flag.startswith("--") and not flag.startswith("--no-"):
            names[action.dest].add(flag)
    assert {dest: flags for dest, flags in names.items() if len(flags) > 1} == {}


@pytest.mark.parametrize(
    ("command", "old", "new"),
    [(c, old, new) for c, renamed in RENAMED.items() for old, new in renamed.items()],
)
def test_an_old_spelling_exits_2_naming_the_new_one(
    command: str, old: str, new: str, capsys: pytest.CaptureFixture[str]
) -> None:
    parser = commands()[command]
    assert any(new in a.option_strings for a in parser._actions), f"{command} has no {new}"
    assert not any(old in a.option_strings for a in parser._actions if not isinstance(a, Renamed))
    with pytest.raises(SystemExit) as stop:
        main([command, old, "x"])
    assert stop.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"fanfuse {command}: error: {old} is renamed to {new}; use {new}"]


def required_words(parser: argparse.ArgumentParser) -> list[str]:
    """Words for what `parser` requires (a value for each positional, each required flag with a
    value), so that parsing reaches the words it does not take. Parsing reads no file."""
    words: list[str] = []
    for action in parser._actions:
        value = str(next(iter(action.choices))) if action.choices else "1"
        if not action.option_strings:
            words += [value] if action.nargs not in ("?", "*") else []
        elif action.required:
            words += [action.option_strings[-1], value]
    return words


def misspelt(flag: str, flags: list[str]) -> str:
    """`flag` with one letter of its word dropped, as no flag of `flags` starts (argparse takes any
    prefix of a flag for the flag)."""
    for at in range(len(flag) - 1, 3, -1):
        wrong = flag[:at] + flag[at + 1 :]
        if not any(other.startswith(wrong) for other in flags):
            return wrong
    raise AssertionError(f"no misspelling of {flag} that is not a prefix of a flag")


MISSPELT = [(c, f) for c, f, _ in options() if f.startswith("--") and len(f) > 5]


@pytest.mark.parametrize(("command", "flag"), MISSPELT, ids=[f"{c} {f}" for c, f in MISSPELT])
def test_a_misspelt_flag_exits_2_naming_the_command_and_the_flag_meant(
    command: str, flag: str, capsys: pytest.CaptureFixture[str]
) -> None:
    parser = commands()[command]
    wrong = misspelt(flag, [f for a in parser._actions for f in a.option_strings])
    with pytest.raises(SystemExit) as stop:
        main([command, *required_words(parser), f"{wrong}=1"])
    assert stop.value.code == 2
    (line,) = capsys.readouterr().err.splitlines()
    head = f"fanfuse {command}: error: unrecognized arguments: {wrong}=1; {wrong}: did you mean "
    assert line.startswith(head)
    assert flag in line.split("did you mean ", 1)[1].split("?")[0].split(" or ")
    assert line.endswith(f"(`fanfuse {command} --help` lists its options)")


def test_a_word_no_command_takes_exits_2_naming_the_command(capsys: pytest.CaptureFixture[str]) -> None:
    parser = commands()["eval"]
    with pytest.raises(SystemExit) as stop:
        main(["eval", *required_words(parser), "stray", "--no-such-flag"])
    assert stop.value.code == 2
    assert capsys.readouterr().err.splitlines() == [
        "fanfuse eval: error: unrecognized arguments: stray --no-such-flag"
        " (`fanfuse eval --help` lists its options)"
    ]


@pytest.mark.parametrize(
    ("command", "gone", "why"),
    [(c, gone, why) for c, removed in REMOVED.items() for gone, why in removed.items()],
)
def test_a_removed_flag_exits_2_saying_why(
    command: str, gone: str, why: str, capsys: pytest.CaptureFixture[str]
) -> None:
    parser = commands()[command]
    assert not any(gone in a.option_strings for a in parser._actions if not isinstance(a, Renamed))
    with pytest.raises(SystemExit) as stop:
        main([command, gone, "x"])
    assert stop.value.code == 2
    assert capsys.readouterr().err == f"fanfuse {command}: error: {gone} is removed: {why}\n"


def test_the_service_fields_are_the_flags_words() -> None:
    """Each field of a search request is the word of a flag (`rrf_k` is `--rrf-k`) with that same
    destination, or the search's positional question."""
    pytest.importorskip("pydantic")
    from fanfuse.service.schema import SearchRequest

    dests = {flag: action.dest for _, flag, action in options()}
    search = commands()["search"]
    positionals = {a.dest for a in search._actions if not a.option_strings}
    for field in SearchRequest.model_fields:
        if field in positionals:
            continue
        flag = "--" + field.replace("_", "-")
        assert flag in dests, f"the service's field {field} is no flag's word ({flag})"
        assert dests[flag] == field, (field, dests[flag])


def test_a_renamed_flag_of_search_is_a_renamed_field_of_the_service() -> None:
    """The service refuses the old word of each renamed `fanfuse search` flag whose new word is a
    request field, naming the new field; and it refuses no word that is still a field."""
    pytest.importorskip("pydantic")
    from fanfuse.service.schema import RENAMED_FIELDS, SearchRequest

    def word(flag: str) -> str:
        return flag.removeprefix("--").replace("-", "_")

    fields = set(SearchRequest.model_fields)
    expected = {word(old): word(new) for old, new in RENAMED["search"].items() if word(new) in fields}
    assert expected == RENAMED_FIELDS
    assert not set(RENAMED_FIELDS) & fields


def test_docs_cli_lists_the_table() -> None:
    page = (Path(__file__).resolve().parents[1] / "docs" / "cli.md").read_text(encoding="utf-8")
    rows = {line for line in page.splitlines() if line.startswith("| `")}
    assert {f"| `{flag}` | {concept} |" for flag, concept in SHARED.items()} <= rows
    assert {f"| `{c}` | `{old}` | `{new}` |" for c, r in RENAMED.items() for old, new in r.items()} <= rows
    for command, removed in REMOVED.items():
        for gone in removed:
            assert any(row.startswith(f"| `{command}` | `{gone}` | ") for row in rows), gone


def test_search_top_k_0_keeps_all_a_search_returns() -> None:
    assert search_top_k(0) == MAX_HITS and search_top_k(7) == 7
    with pytest.raises(OutOfRange, match=r"--top-k must be an int from 0 to 10000"):
        search_top_k(MAX_HITS + 1)
