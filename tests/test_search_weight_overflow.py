"""A search's list weights are a variant's weight times its retriever's: weights that are each in
range but whose products sum beyond the largest float are refused naming the two arguments that make
them, not the core's `weights[i]`, which the caller never gave. Every public entry point taking
`variant_weights` or `retriever_weights` (the walk of `test_api_numbers.py`) x where each is given."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import fanfuse
import pytest
from fanfuse import MultiQueryRetriever, StaticExpander, TantivyRetriever
from test_api_numbers import entry_points
from test_cli_search_options import DOCUMENTS

BIG = 1e200
REFUSAL = r"^variant_weights x retriever_weights: the weights of the lists .* sum to inf"
ENTRIES = sorted(
    entry for entry, params in entry_points() if {"variant_weights", "retriever_weights"} & set(params)
)


def test_the_walk_finds_the_search() -> None:
    assert ENTRIES == [
        "MultiQueryRetriever.__init__",
        "MultiQueryRetriever.asearch",
        "MultiQueryRetriever.search",
    ]


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> TantivyRetriever:
    return TantivyRetriever.build(DOCUMENTS, tmp_path_factory.mktemp("weights") / "index")


def searched(index: TantivyRetriever, entry: str, **weights: Any) -> Any:
    expander = StaticExpander({"owls": ["owls hunt"]})
    if entry.endswith("__init__"):
        return MultiQueryRetriever(index, expander=expander, **weights).search("owls")
    retriever = MultiQueryRetriever(index, expander=expander)
    if entry.endswith("asearch"):
        return asyncio.run(retriever.asearch("owls", **weights))
    return retriever.search("owls", **weights)


CASES = {
    "products": {"variant_weights": [BIG, BIG], "retriever_weights": {"TantivyRetriever": BIG}},
    "sum": {"variant_weights": [1e308, 1e308]},
}


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("entry", ENTRIES)
def test_weights_whose_products_overflow_are_refused_naming_both(
    index: TantivyRetriever, entry: str, case: str
) -> None:
    with pytest.raises(fanfuse.FusionError, match=REFUSAL):
        searched(index, entry, **CASES[case])


@pytest.mark.parametrize("entry", ENTRIES)
def test_large_weights_that_stay_in_range_are_searched(index: TantivyRetriever, entry: str) -> None:
    result = searched(
        index, entry, variant_weights=[1e100, 1e100], retriever_weights={"TantivyRetriever": 1e100}
    )
    assert result.hits


def test_the_fixture_is_a_real_index(index: TantivyRetriever) -> None:
    assert Path(index.directory).is_dir() and len(index) == len(DOCUMENTS)
