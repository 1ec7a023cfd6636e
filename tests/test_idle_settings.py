"""One form for a setting that goes with another (`fanfuse.idle_settings`): the rule, which given name
it refuses first, and the message, shared by the command line, the service and a search; and every
face's table is made of it, so that a face cannot grow a second copy of the mechanism."""

from __future__ import annotations

import argparse
import contextlib
import importlib

import pytest
from fanfuse.errors import InvalidSetting
from fanfuse.idle_settings import GoesWith, first_idle, idle_message, read_by_method, refuse_idle
from fanfuse.options import methods_reading

RULES = (
    GoesWith(("a", "b"), "x on", lambda subject: subject["x"]),
    GoesWith(("b",), "y above 1", lambda subject: subject["y"] > 1, ("--y", "2")),
)


def test_the_first_rule_that_fails_names_its_first_given_name() -> None:
    assert first_idle(RULES, {"b"}, {"x": False, "y": 1}) == ("b", RULES[0])
    assert first_idle(RULES, {"a", "b"}, {"x": False, "y": 1}) == ("a", RULES[0])
    assert first_idle(RULES, {"b"}, {"x": True, "y": 1}) == ("b", RULES[1])
    assert first_idle(RULES, {"b"}, {"x": True, "y": 2}) is None
    assert first_idle(RULES, set(), {"x": False, "y": 1}) is None


def test_the_message_names_the_setting_what_it_goes_with_and_the_mend() -> None:
    assert idle_message("b", RULES[1], "drop b") == (
        "b goes with y above 1 and would do nothing here; drop b or give --y 2"
    )
    assert (
        idle_message("a", RULES[0], "leave a out")
        == "a goes with x on and would do nothing here; leave a out"
    )
    with pytest.raises(InvalidSetting, match=r"^b goes with x on and would do nothing here; leave b out$"):
        refuse_idle(RULES, ["b"], {"x": False, "y": 2})
    refuse_idle(RULES, ["b"], {"x": True, "y": 2})


def test_a_fusion_parameter_goes_with_the_methods_that_read_it() -> None:
    rule = read_by_method("--phi", "phi", lambda method: method, "--method", lambda m: ("--method", m))
    methods = methods_reading("phi")
    assert rule.needs == "--method " + " or ".join(methods)
    assert rule.add == ("--method", methods[0])
    assert all(rule.holds(method) for method in methods)
    assert not rule.holds("rrf")


def face_tables() -> dict[str, tuple[object, ...]]:
    """Every face's table of rules: the commands', the service's (if its extra is here), a search's."""
    from fanfuse.cli.idle_flags import RULES as COMMAND_RULES
    from fanfuse.cli.idle_flags import rules_of
    from fanfuse.multiquery import planning

    tables: dict[str, tuple[object, ...]] = {
        command: rules_of(command) for command in [*COMMAND_RULES, "tune"]
    }
    tables["search options"] = (*planning._EXPANSION_RULES, *planning._RERANK_RULES)
    with contextlib.suppress(ImportError):  # the service's extra (fastapi) may not be installed
        tables["service"] = importlib.import_module("fanfuse.service.idle_fields").RULES
    return tables


@pytest.mark.parametrize(("face", "rules"), sorted(face_tables().items()))
def test_every_face_states_its_rules_in_the_one_form(face: str, rules: tuple[object, ...]) -> None:
    assert rules, face
    for rule in rules:
        assert isinstance(rule, GoesWith), (face, rule)
        assert rule.names and rule.needs, (face, rule)


def test_a_command_line_rule_reads_the_parsed_line() -> None:
    from fanfuse.cli.idle_flags import rules_of

    dask = next(rule for rule in rules_of("fuse") if "--scheduler" in rule.names)
    assert dask.holds(argparse.Namespace(engine="dask"))
    assert not dask.holds(argparse.Namespace(engine="local"))
