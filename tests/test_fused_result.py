"""`Fused` and `Contribution`, what the core's fusion entry points return, found from the stub (every
function whose return annotation names ``Fused``), so an entry point added without a call here fails.
A result holds no Python object (the garbage collector never walks one, however many a batch makes)
and builds fresh lists on every read; its explanation is a list of ``Contribution`` values: equal on
every read, immutable, picklable, shown as the call that builds them."""

from __future__ import annotations

import ast
import gc
import pickle
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import fanfuse
import pytest

STUB = Path(fanfuse.__file__).parent / "_core.pyi"
STR_LISTS = [["a", "b", "c"], ["b", "c", "d"]]
INT_LISTS = [[3, 1, 2], [1, 2, 9]]
# One call per entry point that returns results, as a list of them.
CALLS: dict[str, Callable[..., list[fanfuse.Fused]]] = {
    "rrf": lambda lists, **options: [fanfuse.rrf(lists, **options)],
    "rrf_batch": lambda lists, **options: fanfuse.rrf_batch([lists, lists[::-1]], **options),
    "fuse": lambda lists, **options: [fanfuse.fuse(lists, **options)],
    "fuse_batch": lambda lists, **options: fanfuse.fuse_batch([lists, lists[::-1]], **options),
}
EXPLAINS = ("fuse", "fuse_batch")


def entry_points_returning_results() -> set[str]:
    tree = ast.parse(STUB.read_text(encoding="utf-8"))
    return {
        node.name
        for node in tree.body
        if isinstance(node, ast.FunctionDef)
        and node.returns is not None
        and re.search(r"\bFused\b", ast.unparse(node.returns))
    }


def test_every_entry_point_returning_results_is_called_here() -> None:
    assert entry_points_returning_results() == set(CALLS)


@pytest.mark.parametrize("name", sorted(CALLS))
@pytest.mark.parametrize("lists", [STR_LISTS, INT_LISTS], ids=["str", "int"])
def test_a_result_holds_no_python_object_and_reads_fresh_lists(name: str, lists: list[list[Any]]) -> None:
    explained = [{}, {"explain": True}] if name in EXPLAINS else [{}]
    for options in explained:
        for result in CALLS[name](lists, **options):
            assert not gc.is_tracked(result), (name, options)
            ids, scores = result.ids, result.scores
            assert list(result) == list(zip(ids, scores, strict=True))
            assert {type(i) for i in ids} == {type(lists[0][0])}
            ids.reverse()
            scores.clear()
            assert result.ids == ids[::-1] and len(result.scores) == len(result) == len(ids)


def test_results_are_equal_by_ids_and_scores() -> None:
    assert fanfuse.rrf(STR_LISTS) == fanfuse.fuse(STR_LISTS, explain=True)
    assert fanfuse.rrf([["a", "b"]]) != fanfuse.rrf([["b", "a"]])
    assert fanfuse.rrf([[1, 2]]) != fanfuse.rrf([["1", "2"]])
    assert fanfuse.rrf([[]]) == fanfuse.rrf([["a"]], top_k=0) == fanfuse.rrf([[1]], top_k=0)
    assert fanfuse.rrf([["a"]]) != "a"


@pytest.mark.parametrize("name", EXPLAINS)
def test_contributions_are_values(name: str) -> None:
    scored = [[("a", 3.0), ("b", 1.0)], ["b", "c"]]
    for result in CALLS[name](scored, explain=True):
        explain = result.explain
        assert explain is not None and len(explain) == len(result)
        assert result.explain == explain and result.explain is not explain
        for contribution in (c for row in explain for c in row):
            assert type(contribution) is fanfuse.Contribution
            with pytest.raises(AttributeError):
                contribution.rank = 7  # type: ignore[misc]
            assert pickle.loads(pickle.dumps(contribution)) == contribution
            assert eval(repr(contribution), {"Contribution": fanfuse.Contribution}) == contribution
            assert repr(contribution).startswith(f"Contribution(list={contribution.list}, rank=")
