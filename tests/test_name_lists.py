"""Every list of option names has one source, the core's tables (`fanfuse.METHODS`, `fanfuse.NORMS`,
...): the functions accept exactly those names, and the Literal types of `fanfuse.choices`, the
reference, the CLI, the docs and the method tests list the same ones."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, get_args

import fanfuse
import pytest
from fanfuse import choices, reference
from fanfuse.cli import build_parser

ROOT = Path(__file__).resolve().parent.parent

# The Literal type of each option (fanfuse.choices, which the stubs and the package's signatures use),
# and the tuple the core exports for it.
LITERALS = {
    "Method": fanfuse.METHODS,
    "TrainedMethod": fanfuse.TRAINED_METHODS,
    "Norm": fanfuse.NORMS,
    "TieBreak": fanfuse.TIE_BREAKS,
    "DuplicatePolicy": fanfuse.DUPLICATE_POLICIES,
    "RankFrom": fanfuse.RANK_SOURCES,
    "RunFormat": fanfuse.RUN_FORMATS,
}


def test_the_core_exports_each_list_as_a_tuple_of_distinct_names() -> None:
    for names in LITERALS.values():
        assert isinstance(names, tuple) and names
        assert all(isinstance(name, str) for name in names)
        assert len(set(names)) == len(names)
    assert "rrf" in fanfuse.METHODS and "min-max" in fanfuse.NORMS


def test_the_literal_types_are_the_core_lists_in_the_same_order() -> None:
    assert {name: get_args(getattr(choices, name)) for name in LITERALS} == LITERALS
    assert get_args(choices.AnyMethod) == fanfuse.METHODS + fanfuse.TRAINED_METHODS
    assert tuple(fanfuse.METHOD_PARAMETERS) == get_args(choices.AnyMethod)
    assert set(choices.__all__) == {*LITERALS, "AnyMethod"}


def test_every_listed_name_is_accepted(tmp_path: Path) -> None:
    scored = [[("a", 2.0), ("b", 1.0)], [("b", 3.0), ("c", 0.5)]]
    for method in fanfuse.METHODS:
        assert fanfuse.fuse(scored, method=method).ids, method
    for norm in fanfuse.NORMS:
        assert fanfuse.fuse(scored, method="combsum", norm=norm).ids, norm
    for tie_break in fanfuse.TIE_BREAKS:
        assert fanfuse.rrf([["a", "b"]], tie_break=tie_break).ids == ["a", "b"]
    for duplicates in fanfuse.DUPLICATE_POLICIES:
        assert fanfuse.fuse([["a", "a", "b"]], duplicates=duplicates).ids == ["a", "b"]
    for rank_from in fanfuse.RANK_SOURCES:
        run = fanfuse.Run.from_columns(["q1"], ["d1"], [1.0], rank_from=rank_from)
        assert run.qids() == ["q1"]
    run = fanfuse.Run.from_columns(["q1"], ["d1"], [1.0])
    for run_format in fanfuse.RUN_FORMATS:
        run.write(str(tmp_path / f"out.{run_format}"), format=run_format)
        assert "d1" in (tmp_path / f"out.{run_format}").read_text()


@pytest.mark.parametrize(
    ("call", "names", "refusal"),
    [
        (lambda: fanfuse.fuse([["a"]], method="nope"), fanfuse.METHODS, fanfuse.FusionError),
        (
            lambda: fanfuse.fuse([[("a", 1.0)]], method="combsum", norm="nope"),
            fanfuse.NORMS,
            fanfuse.FusionError,
        ),
        (lambda: fanfuse.rrf([["a"]], tie_break="nope"), fanfuse.TIE_BREAKS, fanfuse.FusionError),
        (lambda: fanfuse.fuse([["a"]], duplicates="nope"), fanfuse.DUPLICATE_POLICIES, fanfuse.FusionError),
        (
            lambda: fanfuse.read_run("unread.trec", rank_from="nope"),
            fanfuse.RANK_SOURCES,
            fanfuse.InvalidSetting,
        ),
        (
            lambda: fanfuse.Run.from_columns([], [], []).write("unwritten", format="nope"),
            fanfuse.RUN_FORMATS,
            fanfuse.InvalidSetting,
        ),
    ],
)
def test_an_unknown_name_is_refused_with_every_accepted_name(
    call: Any, names: tuple[str, ...], refusal: type[Exception]
) -> None:
    with pytest.raises(refusal, match="got 'nope'") as caught:
        call()
    listed = re.findall(r"[\w-]+", str(caught.value).split("must be", 1)[1].split("(got", 1)[0])
    assert [word for word in listed if word not in ("one", "of", "or")] == list(names)


def test_the_reference_accepts_the_same_names() -> None:
    methods = [*reference.RANK_METHODS, *reference.SCORE_METHODS, *reference.ALIASES]
    assert sorted(methods) == sorted(fanfuse.METHODS)
    assert set(reference.ALIASES.values()) <= set(reference.RANK_METHODS + reference.SCORE_METHODS)
    assert reference.NORMS == fanfuse.NORMS
    assert reference.TIE_BREAKS == fanfuse.TIE_BREAKS
    assert reference.DUPLICATE_POLICIES == fanfuse.DUPLICATE_POLICIES


def test_the_fuse_command_offers_every_name() -> None:
    parser = build_parser("fuse")
    subparsers = next(a for a in parser._actions if a.dest == "command")
    options = {action.dest: action for action in subparsers.choices["fuse"]._actions}
    assert "tie_break" not in options  # a written run keeps no tie-break but the evaluators' own
    assert tuple(options["rank_from"].choices) == fanfuse.RANK_SOURCES
    assert tuple(options["run_format"].choices) == fanfuse.RUN_FORMATS
    method_help, norm_help = str(options["method"].help), str(options["norm"].help)
    assert all(f" {name}," in method_help or f" {name} " in method_help for name in fanfuse.METHODS)
    assert all(f" {name}," in norm_help or norm_help.endswith(f" {name}") for name in fanfuse.NORMS)


def test_the_method_tests_cover_every_name() -> None:
    from test_fusion_methods import NORMS, RANK_METHODS, SCORE_METHODS

    assert sorted(RANK_METHODS + SCORE_METHODS) == sorted(fanfuse.METHODS)
    assert tuple(NORMS) == (None, *fanfuse.NORMS)


def test_the_docs_name_every_method_and_norm() -> None:
    for doc in ("README.md", "docs/fusion-methods.md"):
        quoted = set(re.findall(r"`([\w-]+)`", (ROOT / doc).read_text()))
        assert set(fanfuse.METHODS) <= quoted, (doc, set(fanfuse.METHODS) - quoted)
    readme = set(re.findall(r"`([\w-]+)`", (ROOT / "README.md").read_text()))
    assert set(fanfuse.NORMS) <= readme, set(fanfuse.NORMS) - readme
