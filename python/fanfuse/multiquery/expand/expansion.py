"""What an expander returns: an ``Expansion`` of ``Variant`` s, the original query first, and the
helpers every expander builds one with (``assemble_variants``, ``original_only``)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace

__all__ = ["Expansion", "Variant", "assemble_variants", "original_only"]


@dataclass(frozen=True, slots=True)
class Variant:
    """One query variant and who produced it: ``original``, ``history``, ``history-topic``, ``heuristic``,
    ``feedback``, ``llm``, ``static``, ``callable`` or ``explicit`` (given to
    ``search(variants=...)``). ``plain`` is the same variant written for a retriever that reads text,
    not query syntax (a dense encoder), where that is more than ``text`` without its syntax; None:
    ``text`` serves both. ``plain_only``: only the retrievers that read plain text search it
    (``hyde``'s passage, which reads as a document, not a query); for the others its branch is not
    run (reported as skipped). ``weight`` is the fusion weight its expander gives its lists, as a
    share of the original query's (``0.5``: half as much); None: the search's ``variant_weights``
    decide by position."""

    text: str
    source: str
    plain: str | None = None
    plain_only: bool = False
    weight: float | None = None


@dataclass(frozen=True, slots=True)
class Expansion:
    """What an expander returned. ``fallback_reason`` is set when it could not do its job and a
    simpler expansion stands in; ``note`` records anything else worth knowing (e.g. too few variants)."""

    variants: tuple[Variant, ...]
    fallback_reason: str | None = None
    note: str | None = None


def assemble_variants(
    query: str, candidates: Iterable[str | Variant], max_variants: int, source: str
) -> tuple[Variant, ...]:
    """The original query first, then the candidates (texts of ``source``, or whole variants):
    blanks and case-insensitive duplicates dropped (the original included), cut so that the original
    plus the rest is at most ``max_variants``."""
    variants = [Variant(query, "original")]
    seen = {dedupe_key(query)}
    for candidate in candidates:
        if len(variants) >= max_variants:
            break
        variant = candidate if isinstance(candidate, Variant) else Variant(candidate, source)
        text = " ".join(variant.text.split())
        key = dedupe_key(text)
        if key and key not in seen:
            seen.add(key)
            variants.append(replace(variant, text=text))
    return tuple(variants)


def dedupe_key(text: str) -> str:
    return " ".join(text.split()).casefold()


def original_only(query: str, error: BaseException) -> Expansion:
    """The expansion of an expander that failed: the original query alone, and why."""
    return Expansion((Variant(query, "original"),), fallback_reason=f"{type(error).__name__}: {error}")


def wrong_answer(result: object) -> str | None:
    """What an expander returned, said, if it is not an ``Expansion`` of ``Variant`` s; else None."""
    if not isinstance(result, Expansion):
        return type(result).__name__
    variants = result.variants
    usable = isinstance(variants, tuple | list) and variants and all(isinstance(v, Variant) for v in variants)
    return None if usable else "an Expansion without a tuple of Variant"
