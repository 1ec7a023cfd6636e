"""An option of `MultiQueryRetriever` that a search call takes too is refused at construction where the
call's would be, by the same rules and with the same message: the instance's settings are every
call's defaults, so one that no search would read is a mistake made once, refused where it is made.

The options are read from the constructor's signature and `SearchOptions`, so a new one is held to
the rule (and must be given values below) without being named here. Each option and each pair of
them is tried with an expander that reads no strategy and one that does, and with the environment
setting what the constructor leaves out, as a call's left-out options take the instance's."""

from __future__ import annotations

import dataclasses
import functools
import inspect
import itertools
from typing import Any

import pytest
from fanfuse import FusionError
from fanfuse.errors import InputError
from fanfuse.multiquery import HeuristicExpander, LLMExpander, MultiQueryRetriever
from fanfuse.multiquery.config import MultiQueryConfig
from fanfuse.multiquery.planning import SearchOptions
from multiquery_toys import KeywordRetriever

QUERY = "how does reciprocal rank fusion combine lists"
RETRIEVERS = {"kw": KeywordRetriever()}

# The constructor's options that a search call also takes (its twins), from the two signatures.
TWINS = sorted(
    name
    for name, parameter in inspect.signature(MultiQueryRetriever).parameters.items()
    if parameter.kind is inspect.Parameter.KEYWORD_ONLY and name in SearchOptions.__annotations__
)


def reranker(query: str, hits: list[Any]) -> list[float]:
    return [float(len(hit.id)) for hit in hits]


# Values of each twin, valid alone; the ones the rules read take each side of them.
VALUES: dict[str, list[Any]] = {
    "top_k": [3],
    "expansion": [False, True],
    "max_variants": [1, 3],
    "strategy": ["entity"],
    "variant_weights": [[2.0, 1.0]],
    "retriever_weights": [{"kw": 2.0}],
    "branch_k": [5],
    "reranker": [reranker],
    "rerank_window": [5],
    "return_k": [2],
    "min_score": [0.0],
    "method": ["isr", "combsum"],
    "rrf_k": [5.0],
    "norm": ["zmuv"],
    "phi": [0.5],
    "sigma": [0.5],
    "gamma": [2.0],
    "tie_break": ["id"],
    "duplicates": ["max"],
}

SINGLES = [(name, value) for name in TWINS for value in VALUES.get(name, [])]
COMBINATIONS = [dict([one]) for one in SINGLES] + [
    dict(pair) for pair in itertools.combinations(SINGLES, 2) if pair[0][0] != pair[1][0]
]
ENVIRONMENTS = {
    "no variables": {},
    "expansion off": {"FANFUSE_QUERY_EXPANSION": "off"},
    "one variant": {"FANFUSE_MAX_QUERY_VARIANTS": "1"},
}


def expanders() -> dict[str, Any]:
    """An expander that reads no strategy, and one that does (its model is never asked here: every
    search is refused before it, or has expansion off, or is not run)."""
    return {
        "heuristic": HeuristicExpander(),
        "llm": LLMExpander(base_url="http://127.0.0.1:9/v1", model="m", timeout=0.5),
    }


def outcome(call: Any) -> tuple[type[BaseException], str] | None:
    try:
        call()
    except (InputError, FusionError, TypeError) as error:
        return type(error), str(error)
    return None


def test_the_twins_are_the_constructors_options_that_a_call_takes() -> None:
    config_fields = {field.name for field in dataclasses.fields(MultiQueryConfig)}
    assert config_fields <= set(TWINS)
    assert {"strategy", "reranker", "return_k", "rerank_window", "method"} <= set(TWINS)
    assert set(VALUES) == set(TWINS), "give values to every twin"


@pytest.mark.parametrize("environment", sorted(ENVIRONMENTS))
@pytest.mark.parametrize("expander", ["heuristic", "llm"])
def test_the_constructor_refuses_what_a_call_refuses(expander: str, environment: str) -> None:
    chosen = expanders()[expander]
    environ = ENVIRONMENTS[environment]
    plain = MultiQueryRetriever(RETRIEVERS, expander=chosen, environ=environ)
    differ = []
    for options in COMBINATIONS:
        # The search is checked, not run: a refusal comes before any branch, and an accepted call
        # is told apart by its plan alone.
        by_call = outcome(functools.partial(plain_plan, plain, options))
        by_constructor = outcome(
            functools.partial(MultiQueryRetriever, RETRIEVERS, expander=chosen, environ=environ, **options)
        )
        if by_call != by_constructor:
            differ.append((options, by_call, by_constructor))
        elif by_call is not None:
            assert any(name in by_call[1] for name in options), (options, by_call)
    assert not differ, "\n".join(f"{o}: call {c}, constructor {m}" for o, c, m in differ)


def plain_plan(retriever: MultiQueryRetriever, options: dict[str, Any]) -> None:
    """What `search` checks of its options before it searches."""
    from fanfuse.multiquery.planning import make_plan

    make_plan(retriever, QUERY, options, "search")


@pytest.mark.parametrize(
    ("options", "refused"),
    [
        ({"expansion": False, "max_variants": 3}, "max_variants goes with query expansion, which is off"),
        ({"expansion": False, "strategy": "entity"}, "strategy goes with query expansion, which is off"),
        ({"max_variants": 1, "strategy": "entity"}, "strategy goes with more than one variant"),
        ({"return_k": 3}, "return_k goes with a reranker"),
    ],
)
def test_the_reviewers_cases_are_refused_naming_the_option(options: dict[str, Any], refused: str) -> None:
    llm = expanders()["llm"]
    with pytest.raises(InputError, match=refused):
        MultiQueryRetriever(RETRIEVERS, expander=llm, environ={}, **options)
    with pytest.raises(InputError, match=refused):
        MultiQueryRetriever(RETRIEVERS, expander=llm, environ={}).search(QUERY, **options)


def test_the_environment_stands_for_what_the_constructor_leaves_out() -> None:
    off = {"FANFUSE_QUERY_EXPANSION": "off"}
    with pytest.raises(InputError, match="max_variants goes with query expansion, which is off"):
        MultiQueryRetriever(RETRIEVERS, max_variants=3, environ=off)
    assert (
        MultiQueryRetriever(RETRIEVERS, expansion=True, max_variants=3, environ=off).config.max_variants == 3
    )
