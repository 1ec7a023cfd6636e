"""No flag is read and ignored: a flag that does something only beside another setting is refused where
it would do nothing (`fanfuse.cli.idle_flags`), before any work, naming it and what it goes with.
What every flag does on a small input is `test_cli_flag_effects.py`'s."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest
from fanfuse.cli import build_parser, command_parsers, main
from fanfuse.cli._common import NumberFlag, NumberListFlag
from fanfuse.cli.flags import LLM_FLAGS
from fanfuse.cli.idle_flags import FlagRule, refuse_idle_flags, rules_of
from fanfuse.errors import InvalidSetting

PARSERS = command_parsers(build_parser())
RULES = {command: rules_of(command) for command in PARSERS if rules_of(command)}


def actions(parser: argparse.ArgumentParser) -> dict[str, argparse.Action]:
    return {flag: action for action in parser._actions for flag in action.option_strings}


def given(action: argparse.Action) -> list[str]:
    """The flag with a value its type accepts."""
    flag = action.option_strings[-1]
    if action.nargs == 0:
        return [flag]
    if action.choices:
        return [flag, str(next(iter(action.choices)))]
    if isinstance(action.type, NumberFlag | NumberListFlag):
        return [flag, "1" if action.type.limit.kind is int else "0.5"]
    return [flag, "x"]


def required_words(parser: argparse.ArgumentParser) -> list[str]:
    """One value for each positional and each required flag (nothing reads them before the check)."""
    words: list[str] = []
    for action in parser._actions:
        if not action.option_strings:
            words += [] if action.nargs in ("?", "*") else ["1"]
        elif action.required:
            words += [action.option_strings[-1], "1"]
    return words


def parsed(command: str, words: list[str]) -> argparse.Namespace:
    return PARSERS[command].parse_args(words)


# Words that make one rule fail, and every rule before it hold, where the command's required words
# alone do not; keyed by the command, the flag and the first word of what the rule's flag goes with.
LLM_ON_ONE_VARIANT = ["--expander", "llm", "--max-variants", "1"]
UNLESS = {
    ("fuse", "--rrf-k", "--method"): ["--method", "isr"],
    ("fuse", "--segments", "training"): ["--method", "probfuse"],
    ("fuse", "--window", "training"): ["--method", "slidefuse"],
    ("fuse", "--save-model", "training"): ["--method", "probfuse"],
    ("fuse", "--model", "a"): ["--method", "rrf"],  # without --method, the model's
    ("fuse", "--tag", "TREC"): ["--run-format", "mtrag"],
    **{("search", flag, "more"): LLM_ON_ONE_VARIANT for flag in LLM_FLAGS.values()},
    ("search", "--max-variants", "query"): ["--expander", "none"],
    ("search", "--rrf-k", "--method"): ["--method", "isr"],
    ("tune", "--ks", "--method"): ["--method", "isr"],
    ("tune", "--weight-levels", "--method"): ["--method", "isr"],
    ("tune", "--search", "more"): ["--method", "isr"],
    ("search", "--explain", "text"): ["--json"],
}


# The environment that makes a rule fail where no words do: the demo's search has no --expander.
UNLESS_ENVIRONMENT = {("demo", "--max-variants", "query"): {"FANFUSE_QUERY_EXPANSION": "off"}}


def unless(command: str, rule: FlagRule, flag: str, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    key = (command, flag, rule.needs.split()[0])
    for name, value in UNLESS_ENVIRONMENT.get(key, {}).items():
        monkeypatch.setenv(name, value)
    return UNLESS.get(key, [])


CASES = [
    pytest.param(command, rule, flag, id=f"{command}-{flag}-{rule.needs[:20]}")
    for command, rules in RULES.items()
    for rule in rules
    for flag in rule.names
]


def test_the_rules_name_commands_and_their_flags() -> None:
    for command, rules in RULES.items():
        assert command in PARSERS
        for rule in rules:
            assert set(rule.names) <= set(actions(PARSERS[command])), (command, rule.names)
            assert rule.add == () or rule.holds(
                parsed(command, [*required_words(PARSERS[command]), *rule.add])
            )


@pytest.mark.parametrize(("command", "rule", "flag"), CASES)
def test_a_flag_where_it_would_do_nothing_exits_2_naming_it_and_what_it_goes_with(
    command: str,
    rule: FlagRule,
    flag: str,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    parser = PARSERS[command]
    words = [command, *required_words(parser), *unless(command, rule, flag, monkeypatch)]
    assert not rule.holds(parsed(command, words[1:])), f"add the words that make {flag} idle to UNLESS"
    assert main_code([*words, *given(actions(parser)[flag])]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"fanfuse {command}: error: {flag} goes with {rule.needs} ")
    assert f"would do nothing here; drop {flag}" in err
    assert len(err.splitlines()) == 1


@pytest.mark.parametrize(("command", "rule", "flag"), [case for case in CASES if case.values[1].add])
def test_the_words_a_refusal_offers_let_the_flag_through(command: str, rule: FlagRule, flag: str) -> None:
    parser = PARSERS[command]
    words = [*required_words(parser), *given(actions(parser)[flag]), *rule.add]
    assert rule.holds(parsed(command, words))
    # The rule alone: other rules of the flag (a trained method's training) are not this test's.
    refuse_idle_flags(command, parser, words, parsed(command, words), (rule,))


def test_docs_cli_lists_the_rules() -> None:
    page = (Path(__file__).resolve().parents[1] / "docs" / "cli.md").read_text(encoding="utf-8")
    rows = {line for line in page.splitlines() if line.startswith("| `")}
    for command, rules in RULES.items():
        for rule in rules:
            assert f"| `{command}` | {', '.join(f'`{f}`' for f in rule.names)} | {rule.needs} |" in rows


def test_a_flag_is_given_by_being_on_the_line_whatever_its_value() -> None:
    words = ["1", "-o", "1", "--run-format", "mtrag", "--tag", "fanfuse"]
    with pytest.raises(InvalidSetting, match="--tag goes with TREC text output"):
        refuse_idle_flags("fuse", PARSERS["fuse"], words, parsed("fuse", words))


def test_a_model_loaded_is_not_retrained_so_its_sizes_and_saving_are_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    words = ["fuse", "a", "b", "-o", str(tmp_path / "out"), "--method", "probfuse", "--model", "m"]
    for extra in (["--segments", "3"], ["--save-model", str(tmp_path / "again.json")]):
        assert main_code([*words, *extra]) == 2
        assert "goes with training (--train-runs and --train-qrels)" in capsys.readouterr().err
    assert not list(tmp_path.iterdir())


def main_code(words: list[str]) -> int:
    try:
        return main(words)
    except SystemExit as ended:
        return int(ended.code or 0)
