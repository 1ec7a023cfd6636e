"""Settings of multi-query retrieval, read from the environment and overridable per instance and per call.

Every value is checked where it enters (construction, or the call that overrides it), so a bad
environment variable fails when the retriever is built, not on the first search in production.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from fanfuse.errors import InputError, OutOfRange
from fanfuse.limits import LIMITS, check_float, check_int

#: The most variants one search may use (the original query included).
MAX_VARIANTS_LIMIT = int(LIMITS["max_variants"].high or 0)

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
    raise InputError(f"{name} must be one of on/off, true/false, 1/0, yes/no (got {value!r})")


def check_max_variants(value: object, name: str = "max_variants") -> int:
    """1..5 variants, counting the original query."""
    return check_int("max_variants", value, name)


def check_variant_weights(weights: Sequence[float] | None) -> list[float]:
    """Weights of the variants in order (the original first); the last one repeats. None: all 1."""
    if weights is None:
        return [1.0]
    if isinstance(weights, (str, bytes)) or not isinstance(weights, Sequence) or not weights:
        raise TypeError("variant_weights must be a non-empty list of numbers (the last one repeats) or None")
    return [check_float("weight", w, f"variant_weights[{i}]") for i, w in enumerate(weights)]


def check_words(words: object, name: str) -> frozenset[str]:
    """A collection of words (``stopwords``) in lower case: a set as well as a list, since no order is
    read, but not a bare str, which would be read as its letters (``"the"`` as t, h and e)."""
    if isinstance(words, str | bytes) or not isinstance(words, Iterable):
        raise TypeError(
            f"{name} must be a collection of words (str) (got {type(words).__name__}); "
            "one word goes in a list (['the'])"
        )
    items = list(words)
    for word in items:
        if not isinstance(word, str):
            raise TypeError(f"{name} must hold only str (got {type(word).__name__}: {word!r})")
    return frozenset(word.casefold() for word in items)


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
                    accepted = LIMITS["max_variants"].accepted()
                    raise OutOfRange(f"FANFUSE_MAX_QUERY_VARIANTS must be {accepted} (got {raw!r})") from None
                max_variants = check_max_variants(parsed, "FANFUSE_MAX_QUERY_VARIANTS")
            else:
                max_variants = DEFAULT_MAX_VARIANTS
        return cls(expansion=expansion, max_variants=max_variants)
