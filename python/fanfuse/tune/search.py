"""The two searches of `tune` over a `Space`: the full grid, and coordinate ascent for when the grid
grows as levels^runs. Both call `score(params)` (the training-fold mean) and return the parameters
of the best score; ties keep the earlier configuration, so a search is deterministic.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal, get_args

from fanfuse.limits import check_choice
from fanfuse.tune.space import Space, weight_key

#: How the space is searched: the full grid, coordinate ascent, or (auto) the grid while it is small.
Search = Literal["auto", "grid", "coordinate"]
SEARCHES: tuple[Search, ...] = get_args(Search)
# `auto` searches the full grid up to this many configurations (3 runs of RRF with the default
# levels: 406), coordinate ascent beyond.
GRID_LIMIT = 1000
# Coordinate ascent stops when a round changes nothing; this caps the rounds whatever the data.
MAX_ROUNDS = 10

Params = dict[str, Any]
Score = Callable[[Params], float]


def chosen_search(search: Search, space: Space) -> Search:
    """`grid` or `coordinate`: `auto` is the grid while it holds at most `GRID_LIMIT` configurations."""
    check_choice("search", search, SEARCHES)
    if search == "auto":
        return "grid" if space.grid_size(at_most=GRID_LIMIT + 1) <= GRID_LIMIT else "coordinate"
    return search


def grid_search(space: Space, score: Score) -> Params:
    configurations = space.configurations()
    return max(configurations, key=score)  # max() keeps the first of equal scores


def params_key(params: Params) -> tuple[Any, ...]:
    """One key per distinct fusion: weights scaled to a largest weight of 1 (the same ranking)."""
    return tuple(
        (name, weight_key(value) if name == "weights" else value) for name, value in sorted(params.items())
    )


def starting_point(space: Space) -> Params:
    """Equal weights (1, or the largest level without 1) and the middle level of every other parameter."""
    start: Params = {}
    for name, levels in space.levels.items():
        if name == "weights":
            weight = 1.0 if 1.0 in levels else max(levels)
            start[name] = tuple([weight] * space.runs)
        else:
            start[name] = levels[(len(levels) - 1) // 2]
    return start


def coordinate_search(space: Space, score: Score) -> Params:
    """Coordinate ascent: one parameter at a time (each run's weight is one coordinate), every level
    of it tried with the others fixed, the best kept; rounds until one changes nothing.

    It visits about rounds x (runs x weight levels + other levels) configurations, against
    levels^runs for the grid; on rankings where weights interact it can stop at a local optimum."""
    best = starting_point(space)
    best_score = score(best)
    for _ in range(MAX_ROUNDS):
        improved = False
        for name, levels in space.levels.items():
            positions = range(space.runs) if name == "weights" else [None]
            for position in positions:
                for level in levels:
                    candidate = _with(best, name, position, level)
                    if candidate == best or (name == "weights" and weight_key(candidate[name]) is None):
                        continue
                    value = score(candidate)
                    if value > best_score:
                        best, best_score, improved = candidate, value, True
        if not improved:
            break
    return best


def _with(params: Params, name: str, position: int | None, level: Any) -> Params:
    changed = dict(params)
    if position is None:
        changed[name] = level
    else:
        weights = list(params[name])
        weights[position] = level
        changed[name] = tuple(weights)
    return changed
