"""A named choice (a strategy, a format, a role) is checked in one place, `fanfuse.limits.check_choice`:
its refusals, and a scan of the package for a check written by hand instead."""

from __future__ import annotations

import ast
import importlib
import sys
from dataclasses import dataclass
from pathlib import Path
from types import UnionType
from typing import Any, Literal, Union, get_args, get_origin

import fanfuse
import pytest
from fanfuse.errors import InvalidConversation, InvalidSetting
from fanfuse.limits import check_choice

PACKAGE = Path(fanfuse.__file__).parent
# Where a check of the form `value not in NAMES: raise` is not a caller's choice, or not ours to word.
NOT_CHOICES = {
    "reference.py": "the spec in plain Python, on its own by design",
    "service/schema.py": "pydantic's validators: the error's location names the field",
}


def test_a_name_among_the_choices_is_returned() -> None:
    assert check_choice("format", "csv", ("table", "csv")) == "csv"
    assert check_choice("method", "rrf", {"rrf": (), "rbc": ()}) == "rrf"  # a dict's keys


def test_another_name_is_refused_by_the_given_error_listing_the_choices() -> None:
    with pytest.raises(InvalidSetting, match=r"^format must be one of table, csv \(got 'tsv'\)$"):
        check_choice("format", "tsv", ("table", "csv"))
    with pytest.raises(InvalidConversation, match=r"^history\[0\]\.role must be one of user \(got 'bot'\)$"):
        check_choice("history[0].role", "bot", ("user",), InvalidConversation)


@pytest.mark.parametrize("value", [3, None, b"csv", ["csv"]])
def test_anything_but_a_str_is_a_type_error(value: object) -> None:
    with pytest.raises(
        TypeError, match=rf"^format must be one of table, csv \(got {type(value).__name__}\)$"
    ):
        check_choice("format", value, ("table", "csv"))


def hand_written_choices() -> list[str]:
    """Each `if name not in CONSTANT: raise ...` of the package, as file:line."""
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        relative = path.relative_to(PACKAGE).as_posix()
        if relative in NOT_CHOICES or relative == "limits.py":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not (isinstance(node, ast.If) and node.body and isinstance(node.body[0], ast.Raise)):
                continue
            test = node.test
            if (
                isinstance(test, ast.Compare)
                and len(test.ops) == 1
                and isinstance(test.ops[0], ast.NotIn)
                and isinstance(test.comparators[0], ast.Name)
                and test.comparators[0].id.isupper()
            ):
                found.append(f"{relative}:{node.lineno}")
    return found


def test_no_choice_is_checked_by_hand() -> None:
    assert hand_written_choices() == [], "check these with fanfuse.limits.check_choice"


def test_the_scan_finds_a_check_written_by_hand(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "mine.py").write_text(
        'NAMES = ("a",)\n\ndef f(x):\n    if x not in NAMES:\n        raise ValueError(x)\n', encoding="utf-8"
    )
    monkeypatch.setattr(sys.modules[__name__], "PACKAGE", tmp_path)
    assert hand_written_choices() == ["mine.py:4"]


# Functions that take any str to check it (the Literal is what they return), by the module that
# defines them and the names they accept: a call of one is a check like `check_choice`'s.
CHECKERS = {
    "check_strategy": "fanfuse.multiquery.expand.llm_prompts.STRATEGIES",
    "named_reranker": "fanfuse.multiquery.mmr.RERANKS",
}
# Checked parameters that stay `str`, each with the reason.
NOT_TYPED = {
    ("report/data.py", "comparison", "run"): "a run of the report: the names it was made with",
    ("report/data.py", "comparison", "metric"): "a metric of the report: the ones it was made with",
    ("multiquery/expand/llm.py", "_asked", "strategy"): "the Expander protocol's: any expander's own name",
    ("multiquery/retriever.py", "__init__", "strategy"): "the Expander protocol's: any expander's own name",
}


@dataclass(frozen=True)
class Checked:
    """A parameter a check of a named choice reads: in `function` of `file`, the names `accepted`
    (source text, evaluated in the file's module)."""

    file: str
    function: ast.FunctionDef | ast.AsyncFunctionDef
    parameter: str
    accepted: str

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.file, self.function.name, self.parameter)

    def module(self) -> dict[str, Any]:
        return vars(importlib.import_module(module_name(self.file)))


def module_name(relative: str) -> str:
    """The module of a file of the package, by its path there (`report/__init__.py`: `fanfuse.report`)."""
    return "fanfuse." + relative.removesuffix(".py").removesuffix("/__init__").replace("/", ".")


def checked_parameters() -> list[Checked]:
    """Each check of a named choice whose value is a parameter of the function around it: a
    `check_choice` call, or a call of a checker."""
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        relative = path.relative_to(PACKAGE).as_posix()
        for function in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(function, ast.FunctionDef | ast.AsyncFunctionDef) or function.name in CHECKERS:
                continue
            parameters = {a.arg for a in [*function.args.args, *function.args.kwonlyargs]}
            for call in ast.walk(function):
                if not isinstance(call, ast.Call) or not isinstance(call.func, ast.Name):
                    continue
                if call.func.id == "check_choice":
                    value, accepted = call.args[1], ast.unparse(call.args[2])
                elif call.func.id in CHECKERS:
                    value, accepted = call.args[0], CHECKERS[call.func.id]
                else:
                    continue
                if isinstance(value, ast.Name) and value.id in parameters:
                    found.append(Checked(relative, function, value.id, accepted))
    return found


def literal_names(annotation: object) -> tuple[object, ...] | None:
    """The names of a `Literal[...]` annotation, `| None` allowed; None for anything else."""
    members = [annotation]
    if get_origin(annotation) in (Union, UnionType):
        members = [a for a in get_args(annotation) if a is not type(None)]
    if len(members) == 1 and get_origin(members[0]) is Literal:
        return get_args(members[0])
    return None


def test_the_scan_finds_the_checked_parameters() -> None:
    found = {checked.key for checked in checked_parameters()}
    assert ("multiquery/expand/llm.py", "__init__", "fallback") in found
    assert ("index_retriever.py", "_over", "rerank") in found  # through a checker
    assert set(NOT_TYPED) <= found, "an exemption no longer names a checked parameter"


def test_every_check_names_the_parameter_it_reads() -> None:
    """The refusal's `{name} must be one of ...` names the argument the caller gave."""
    labels = []
    for checked in checked_parameters():
        for call in ast.walk(checked.function):
            if isinstance(call, ast.Call) and getattr(call.func, "id", None) == "check_choice":
                label, value = call.args[0], call.args[1]
                if getattr(value, "id", None) == checked.parameter and isinstance(label, ast.Constant):
                    labels.append((label.value, checked.parameter))
    assert labels, "the scan found no check"
    assert [(label, parameter) for label, parameter in labels if label != parameter] == []


def test_every_checked_parameter_is_typed_as_its_names() -> None:
    """A parameter a choice check reads is a `Literal` of exactly the names it accepts, in their order:
    a type checker then refuses a misspelled name before it runs, and every caller that passes one
    on must be typed the same way (mypy refuses a `str` there)."""
    wrong = []
    for checked in checked_parameters():
        if checked.key in NOT_TYPED:
            continue
        try:
            namespace = checked.module()
        except ImportError:  # an optional extra this environment lacks: checked where it is installed
            continue
        if "." in checked.accepted and checked.accepted.startswith("fanfuse."):
            home, _, name = checked.accepted.rpartition(".")
            accepted = tuple(getattr(importlib.import_module(home), name))
        else:
            try:
                accepted = tuple(eval(checked.accepted, namespace))
            except NameError:  # a list of names the type cannot be checked against
                wrong.append(
                    f"{checked.file}:{checked.function.lineno} {checked.accepted} is not a module's name"
                )
                continue
        argument = next(
            a
            for a in [*checked.function.args.args, *checked.function.args.kwonlyargs]
            if a.arg == checked.parameter
        )
        annotation = (
            None if argument.annotation is None else eval(ast.unparse(argument.annotation), namespace)
        )
        if literal_names(annotation) != accepted:
            line = f"{checked.file}:{checked.function.lineno}"
            wrong.append(
                f"{line} {checked.function.name}({checked.parameter}: {annotation}) accepts {accepted}"
            )
    assert wrong == []


def choice_checks() -> list[tuple[str, str, str]]:
    """Each `check_choice` call of the package: (file:line, the names it accepts, the error it raises)."""
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        relative = path.relative_to(PACKAGE).as_posix()
        for call in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(call, ast.Call) and getattr(call.func, "id", None) == "check_choice":
                error = ast.unparse(call.args[3]) if len(call.args) > 3 else "InvalidSetting"
                found.append((f"{relative}:{call.lineno}", ast.unparse(call.args[2]), error))
    return found


# The core's lists of names by what they name: the values of fusion options, which it refuses as
# FusionError, and the values of settings (a run file's format, a metric), which it refuses as
# InvalidSetting. A trained method is a fusion option's value (`method=` with a model) as well.
FUSION_OPTION_LISTS = {"METHODS", "TRAINED_METHODS", "METHOD_PARAMETERS", "SCORE_METHODS", "NORMS"}
FUSION_OPTION_LISTS |= {"TIE_BREAKS", "DUPLICATE_POLICIES", "FUSION_OPTIONS"}
SETTING_LISTS = {"RANK_SOURCES", "RUN_FORMATS", "METRICS", "TREC_EVAL_METRICS"}


def test_every_list_of_names_of_the_core_is_of_fusion_options_or_of_settings() -> None:
    def is_names(value: object) -> bool:  # a tuple of names, or a dict of them by key
        if isinstance(value, dict):
            return all(is_names(names) for names in value.values())
        return isinstance(value, tuple) and all(isinstance(name, str) for name in value)

    lists = {name for name in dir(fanfuse._core) if name.isupper() and is_names(getattr(fanfuse._core, name))}
    assert lists == FUSION_OPTION_LISTS | SETTING_LISTS


def test_a_choice_is_refused_as_a_fusion_error_only_when_it_is_a_fusion_option() -> None:
    """FusionError means fusion input or a fusion option the core refused: a choice refused as one
    is a list of names the core publishes for its options (methods, norms, ...), and every such
    choice is refused as one; any other choice is a setting, refused as InvalidSetting."""
    checks = choice_checks()
    assert any(error == "FusionError" for _, _, error in checks), "the scan found no fusion option"
    wrong = [
        f"{where} checks {names} as {error}"
        for where, names, error in checks
        if (error == "FusionError") != (names in FUSION_OPTION_LISTS)
    ]
    assert wrong == []
