"""What `tune` searches for a fusion method: its parameters, their levels, and the configurations.

Which parameters a method has is the core's table (`METHOD_PARAMETERS`), never listed here. Every level
given is checked by its row of `fanfuse.limits` before any work starts: for a fusion or training
option, the core's range (tests/test_limits.py and tests/test_api_numbers.py hold the core to it).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from fanfuse._core import (
    METHOD_PARAMETERS,
    NORMS,
    TRAINED_METHODS,
    FusionError,
)
from fanfuse.choices import AnyMethod
from fanfuse.limits import LIMITS, check_choice, check_float, check_int, check_sequence

DEFAULT_KS = (1.0, 5.0, 10.0, 20.0, 40.0, 60.0, 100.0)
DEFAULT_WEIGHTS = (0.0, 0.25, 0.5, 1.0, 2.0)
DEFAULT_PHIS = (0.5, 0.7, 0.8, 0.9, 0.95, 0.99)
DEFAULT_SIGMAS = (0.0, 0.001, 0.01, 0.1, 0.5, 1.0)
DEFAULT_GAMMAS = (0.0, 0.5, 1.0, 1.5, 2.0, 3.0)
DEFAULT_SEGMENT_COUNTS = (2, 5, 10, 25, 50, 100)
DEFAULT_WINDOWS = (1, 2, 5, 10, 20, 50)


@dataclass(frozen=True)
class Option:
    """One search option of `tune`: its keyword, the core parameter it sets, its default levels
    (None: searched only when given, as norm, which would multiply the grid by every norm)."""

    keyword: str
    parameter: str
    default: tuple[Any, ...] | None


# The row of fanfuse.limits.LIMITS of each numeric parameter's levels.
LEVEL_ROWS = {"k": "k", "weights": "weight", "phi": "phi", "sigma": "sigma", "gamma": "gamma"}

OPTIONS = (
    Option("ks", "k", DEFAULT_KS),
    Option("weight_levels", "weights", DEFAULT_WEIGHTS),
    Option("phis", "phi", DEFAULT_PHIS),
    Option("sigmas", "sigma", DEFAULT_SIGMAS),
    Option("gammas", "gamma", DEFAULT_GAMMAS),
    Option("norms", "norm", None),
    Option("segment_counts", "segments", DEFAULT_SEGMENT_COUNTS),
    Option("windows", "window", DEFAULT_WINDOWS),
)


def shown_level(value: object) -> str:
    """A level as the command shows it (the chosen fusion in its table, the defaults in its help): a
    float in the fewest digits that read back to that same float, as its JSON holds it (Python's
    ``repr``, a whole number without its ``.0``: ``60``, ``0.30000000000000004``); a norm or a count
    as it is."""
    if isinstance(value, float):
        return repr(float(value)).removesuffix(".0")  # float(): a NumPy float's repr names its type
    return str(value)


def given_levels(source: object) -> dict[str, Any]:
    """The level lists `source` gives (a parsed command line: its attribute of each option's keyword)."""
    return {option.keyword: getattr(source, option.keyword) for option in OPTIONS}


def method_parameters(method: AnyMethod) -> tuple[str, ...]:
    """The parameters the core says `method` has (`METHOD_PARAMETERS`), in the order of `OPTIONS`."""
    check_choice("method", method, METHOD_PARAMETERS, FusionError)
    has = METHOD_PARAMETERS[method]
    return tuple(option.parameter for option in OPTIONS if option.parameter in has)


@dataclass
class Space:
    """The levels searched per parameter (in `OPTIONS` order), and the method's other parameters."""

    method: AnyMethod
    trained: bool
    runs: int
    levels: dict[str, list[Any]] = field(default_factory=dict)
    unsearched: tuple[str, ...] = ()

    def configurations(self) -> list[dict[str, Any]]:
        """The full grid: every combination of levels, weights as vectors of `weight_grid`."""
        axes = []
        for name, levels in self.levels.items():
            axes.append(weight_grid(self.runs, levels) if name == "weights" else levels)
        return [dict(zip(self.levels, values, strict=True)) for values in itertools.product(*axes)]

    def grid_size(self, at_most: int | None = None) -> int:
        """The configurations of the full grid, counted up to `at_most` (a larger grid counts as
        `at_most`): its weights alone are up to levels^runs vectors, too many to list to compare
        them with a bound (5^12 for twelve runs at the default levels)."""
        counts = [
            sum(1 for _ in itertools.islice(weight_vectors(self.runs, v), at_most))
            if n == "weights"
            else len(v)
            for n, v in self.levels.items()
        ]
        size = math.prod(counts)
        return size if at_most is None else min(size, at_most)


def search_space(method: AnyMethod, runs: int, given: dict[str, Iterable[Any] | None]) -> Space:
    """The levels to search for `method` fusing `runs` runs: the given ones (checked) or the defaults
    of its parameters.

    A level list given for a parameter the method does not have is an error naming both."""
    trained = method in TRAINED_METHODS
    parameters = method_parameters(method)
    space = Space(method, trained, runs)
    unsearched = []
    for option in OPTIONS:
        values = given.get(option.keyword)
        if option.parameter not in parameters:
            if values is not None:
                has = ", ".join(o.keyword for o in OPTIONS if o.parameter in parameters) or "nothing"
                raise FusionError(
                    f"{option.keyword}: method {method!r} has no {option.parameter} "
                    f"(its search options: {has})"
                )
            continue
        levels = option.default if values is None else values
        if levels is None:
            unsearched.append(option.parameter)
            continue
        space.levels[option.parameter] = _checked_levels(option, levels)
    space.unsearched = tuple(unsearched)
    return space


def _checked_levels(option: Option, values: Iterable[Any]) -> list[Any]:
    """The levels of one option, each checked against the row of `fanfuse.limits` its option has
    (the core's range for a fusion option), each given once; errors name the level (`phis[1]`)."""
    name = option.keyword
    if option.parameter == "norm":
        levels = _listed(values, name, "norm names (str)")
        checked: list[Any] = [
            check_choice(f"{name}[{i}]", norm, NORMS, FusionError) for i, norm in enumerate(levels)
        ]
    elif option.parameter in ("segments", "window"):
        levels = _listed(values, name, "ints")
        checked = [check_int(option.parameter, value, f"{name}[{i}]") for i, value in enumerate(levels)]
    else:
        checked = check_numbers(values, name, LEVEL_ROWS[option.parameter])
    if option.parameter == "weights" and not any(w > 0 for w in checked):
        raise FusionError(f"{name} has no level > 0 (got {checked}); fusion needs two weighted runs")
    return _distinct(checked, name)


def _distinct(levels: list[Any], name: str) -> list[Any]:
    """`levels`, refused where one repeats: a level given twice is searched twice and counted as
    two, and a search over one configuration looks like a search."""
    for i, level in enumerate(levels):
        if level in levels[:i]:
            first = levels.index(level)
            raise FusionError(f"{name}[{i}] repeats {name}[{first}] ({level!r}): give each level once")
    return levels


def _listed(values: Iterable[Any], name: str, what: str) -> list[Any]:
    levels = check_sequence(values, name, what)
    if not levels:
        raise FusionError(f"{name} is empty: give at least one value")
    return levels


def check_numbers(values: Iterable[Any], name: str, key: str) -> list[float]:
    """A non-empty sequence (or array) of numbers, each in the range of the row `key` of
    `fanfuse.limits.LIMITS`; errors name the entry (`ks[2]`)."""
    accepted = LIMITS[key].accepted()
    checked = check_sequence(values, name, f"numbers, each {accepted}")
    if not checked:
        raise FusionError(f"{name} is empty: give at least one value, each {accepted}")
    return [check_float(key, value, f"{name}[{i}]") for i, value in enumerate(checked)]


def weight_grid(n_runs: int, levels: Sequence[float]) -> list[tuple[float, ...]]:
    """Every weight vector over ``levels`` with at least two non-zero runs, without scaled duplicates
    (every weighted method ranks the same when all weights are multiplied by one factor)."""
    return list(weight_vectors(n_runs, levels))


def weight_vectors(n_runs: int, levels: Sequence[float]) -> Iterator[tuple[float, ...]]:
    """The vectors of ``weight_grid``, one at a time (the levels are checked at the call)."""
    return _weight_vectors(n_runs, check_numbers(levels, "levels", "weight"))


def _weight_vectors(n_runs: int, levels: Sequence[float]) -> Iterator[tuple[float, ...]]:
    seen: set[tuple[float, ...]] = set()
    for weights in itertools.product(levels, repeat=n_runs):
        key = weight_key(weights)
        if key is not None and key not in seen:
            seen.add(key)
            yield tuple(weights)


def weight_key(weights: Sequence[float]) -> tuple[float, ...] | None:
    """The weights scaled to a largest weight of 1 (one key per ranking), or None when fewer than two
    runs have a weight > 0 (no fusion)."""
    nonzero = [w for w in weights if w > 0]
    if len(nonzero) < 2:
        return None
    top = max(nonzero)
    return tuple(round(w / top, 9) for w in weights)
