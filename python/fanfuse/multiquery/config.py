"""Settings of multi-query retrieval, read from the environment and overridable per instance and per call.

Every value is checked where it enters (construction, or the call that overrides it), so a bad
environment variable fails when the retriever is built, not on the first search in production.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from fanfuse._core import FusionError

#: The most variants one search may use (the original query included).
MAX_VARIANTS_LIMIT = 5

DEFAULT_EXPANSION = True
DEFAULT_MAX_VARIANTS = 4

_TRUE = ("1", "on", "true", "yes")
_FALSE = ("0", "off", "false", "no")


def parse_switch(value: str, name: str) -> bool:
    """An on/off setting as written in an environment variable."""
    lowered = value.strip().lower()
    if lowered in _TRUE:
        return True
    if lowered in _FALSE:
        return False
    raise FusionError(f"{name} must be one of on/off, true/false, 1/0, yes/no (got {value!r})")


def check_max_variants(value: object, name: str = "max_variants") -> int:
    """1..5 variants, counting the original query."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an int from 1 to {MAX_VARIANTS_LIMIT} (got {type(value).__name__})")
    if not 1 <= value <= MAX_VARIANTS_LIMIT:
        raise FusionError(
            f"{name} must be from 1 to {MAX_VARIANTS_LIMIT}, the original query included (got {value})"
        )
    return value


def check_positive_int(value: object, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an int >= 1 (got {type(value).__name__})")
    if value < 1:
        raise FusionError(f"{name} must be an int >= 1 (got {value})")
    return value


def check_positive_float(value: object, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{name} must be a number > 0 (got {type(value).__name__})")
    if not (math.isfinite(value) and value > 0):
        raise FusionError(f"{name} must be a finite number > 0 (got {value})")
    return float(value)


def check_weight(value: object, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{name} must be a number >= 0 (got {type(value).__name__})")
    if not (math.isfinite(value) and value >= 0):
        raise FusionError(f"{name} must be a finite number >= 0 (got {value})")
    return float(value)


def check_optional_positive_int(value: object, name: str) -> int | None:
    return None if value is None else check_positive_int(value, name)


def check_min_score(value: object) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"min_score must be a number or None (got {type(value).__name__})")
    return float(value)


def check_variant_weights(weights: Sequence[float] | None) -> list[float]:
    """Weights of the variants in order (the original first); the last one repeats. None: all 1."""
    if weights is None:
        return [1.0]
    if isinstance(weights, (str, bytes)) or not isinstance(weights, Sequence) or not weights:
        raise TypeError("variant_weights must be a non-empty list of numbers (the last one repeats) or None")
    return [check_weight(w, f"variant_weights[{i}]") for i, w in enumerate(weights)]


def variant_weight(weights: list[float], index: int) -> float:
    """Variant ``index``'s weight: the last entry repeats for the variants past the list's end."""
    return weights[min(index, len(weights) - 1)]


@dataclass(frozen=True, slots=True)
class MultiQueryConfig:
    """Whether to expand queries and into how many variants.

    ``from_env`` reads ``FANFUSE_QUERY_EXPANSION`` (on/off, default on) and
    ``FANFUSE_MAX_QUERY_VARIANTS`` (1..5, default 4); arguments of ``MultiQueryRetriever`` override
    them, and the arguments of each ``search`` call override those.
    """

    expansion: bool = DEFAULT_EXPANSION
    max_variants: int = DEFAULT_MAX_VARIANTS

    def __post_init__(self) -> None:
        if not isinstance(self.expansion, bool):
            raise TypeError(f"expansion must be a bool (got {type(self.expansion).__name__})")
        check_max_variants(self.max_variants)

    @classmethod
    def from_env(
        cls,
        environ: Mapping[str, str] | None = None,
        *,
        expansion: bool | None = None,
        max_variants: int | None = None,
    ) -> MultiQueryConfig:
        env = os.environ if environ is None else environ
        if expansion is None:
            raw = env.get("FANFUSE_QUERY_EXPANSION", "").strip()
            expansion = parse_switch(raw, "FANFUSE_QUERY_EXPANSION") if raw else DEFAULT_EXPANSION
        if max_variants is None:
            raw = env.get("FANFUSE_MAX_QUERY_VARIANTS", "").strip()
            if raw:
                try:
                    parsed = int(raw)
                except ValueError:
                    raise FusionError(
                        f"FANFUSE_MAX_QUERY_VARIANTS must be an int from 1 to {MAX_VARIANTS_LIMIT} "
                        f"(got {raw!r})"
                    ) from None
                max_variants = check_max_variants(parsed, "FANFUSE_MAX_QUERY_VARIANTS")
            else:
                max_variants = DEFAULT_MAX_VARIANTS
        return cls(expansion=expansion, max_variants=max_variants)
