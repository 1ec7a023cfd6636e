"""Choosing how `tune` searches (the full grid up to `GRID_LIMIT` configurations, coordinate ascent
beyond) and whether `--search` has anything to choose count the grid only as far as the bound they
compare it with: its weights alone are levels^runs vectors (5^12, 244 million, for twelve runs at the
default levels), which listing whole would freeze the command before any work. Counted here by the
weight vectors looked at, against the full product, for every weighted method of the core's table."""

from __future__ import annotations

import pytest
from fanfuse._core import METHOD_PARAMETERS
from fanfuse.cli import build_parser, command_parsers
from fanfuse.cli.idle_flags import rules_of
from fanfuse.tune import space as tune_space
from fanfuse.tune.search import GRID_LIMIT, chosen_search
from fanfuse.tune.space import DEFAULT_WEIGHTS, search_space

RUNS = 12
FULL = len(DEFAULT_WEIGHTS) ** RUNS
WEIGHTED = sorted(method for method, read in METHOD_PARAMETERS.items() if "weights" in read)


@pytest.fixture
def looked_at(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """How many weight vectors were looked at (each goes through `weight_key` once)."""
    count = [0]
    key = tune_space.weight_key

    def counted(weights: tuple[float, ...]) -> tuple[float, ...] | None:
        count[0] += 1
        return key(weights)

    monkeypatch.setattr(tune_space, "weight_key", counted)
    return count


@pytest.mark.parametrize("method", WEIGHTED)
def test_auto_counts_the_grid_only_up_to_its_limit(method: str, looked_at: list[int]) -> None:
    space = search_space(method, RUNS, {})
    assert chosen_search("auto", space) == "coordinate"
    assert 0 < looked_at[0] < FULL // 1000


@pytest.mark.parametrize("method", WEIGHTED)
def test_whether_search_has_a_choice_counts_two_configurations(method: str, looked_at: list[int]) -> None:
    parser = command_parsers(build_parser())["tune"]
    args = parser.parse_args([*(["r"] * RUNS), "--qrels", "q", "--method", method, "--search", "coordinate"])
    (rule,) = (r for r in rules_of("tune") if "--search" in r.names)
    assert rule.holds(args)
    assert 0 < looked_at[0] < FULL // 1000


def test_a_bounded_count_agrees_with_the_full_one_below_the_bound() -> None:
    space = search_space("rrf", 3, {})
    full = space.grid_size()
    assert full == len(space.configurations()) < GRID_LIMIT
    assert space.grid_size(at_most=GRID_LIMIT + 1) == full
    assert space.grid_size(at_most=2) == 2
