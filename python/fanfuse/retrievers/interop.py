"""What every framework adapter shares, with no framework imported: fused hits as a framework's
(text, metadata), a framework's documents as hits, and the metadata filter convention.

The filter convention of the built-in backends: `{"key": value}` (exact match on metadata) and
`{"key": [v1, v2]}` (any of them); several keys must all match. Adapters translate it into each
framework's or database's own filter language.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from fanfuse._core import FusionError
from fanfuse.retrievers.base import Hit

if TYPE_CHECKING:
    from fanfuse.multiquery import FusedHit

__all__ = [
    "FANFUSE_METADATA_KEYS",
    "FilterScalar",
    "filter_conditions",
    "framework_hits",
    "fused_text_and_metadata",
]

T = TypeVar("T")
FilterScalar = str | int | float | bool
_FILTER_SCALARS = (str, int, float, bool)
# The keys a fused document's metadata gains: the explanation that travels with it. Frameworks that
# render metadata into prompts (LlamaIndex) are told to leave these out.
FANFUSE_METADATA_KEYS = ("id", "score", "rerank_score", "provenance")


def fused_text_and_metadata(hit: FusedHit) -> tuple[str, dict[str, Any]]:
    """A `FusedHit` as a framework document's text and metadata.

    The text is the payload's `text`; the rest of the payload becomes metadata, plus `id`, the fused
    `score`, `rerank_score` when a reranker ran, and `provenance`: which variant and retriever found
    the hit at which rank, and what that added to the fused score.
    """
    payload = dict(hit.payload)
    text = payload.pop("text", "")
    metadata: dict[str, Any] = {**payload, "id": hit.id, "score": hit.score}
    if hit.rerank_score is not None:
        metadata["rerank_score"] = hit.rerank_score
    metadata["provenance"] = [
        {
            "variant": p.variant,
            "variant_index": p.variant_index,
            "retriever": p.retriever,
            "rank": p.rank,
            "contribution": p.contribution,
        }
        for p in hit.provenance
    ]
    return str(text), metadata


def framework_hits(
    source: str,
    documents: Iterable[T],
    fields: Callable[[T], tuple[object, float | None, str | None, Mapping[str, Any]]],
    *,
    id_field: str,
    id_key: str,
) -> list[Hit]:
    """A framework's ranked documents as `Hit`s; `fields(document)` gives (id, score, text, metadata).

    The id is the document's own (`id_field`, named in the error), else `metadata[id_key]`; without
    either fusion cannot deduplicate it, so it is an error naming `source`. A document without a
    score gets 1/rank. The payload is the metadata plus `text`.
    """
    hits = []
    for rank, document in enumerate(documents, start=1):
        doc_id, score, text, metadata = fields(document)
        if doc_id is None or doc_id == "":
            doc_id = metadata.get(id_key)
        if doc_id is None or doc_id == "":
            raise FusionError(
                f"{source} returned a document without an id ({id_field} or metadata[{id_key!r}]); "
                f"pass id_key= naming the metadata field that identifies documents"
            )
        payload = {**metadata, "text": "" if text is None else text}
        hits.append(Hit(str(doc_id), float(1.0 / rank if score is None else score), payload))
    return hits


def filter_conditions(filter: Mapping[str, Any]) -> list[tuple[str, list[FilterScalar]]]:
    """The filter as (metadata key, accepted values) pairs, checked; a clear error names a bad entry."""
    if not isinstance(filter, Mapping):
        raise TypeError(f"filter must be a dict metadata key -> value(s) (got {type(filter).__name__})")
    conditions = []
    for key, wanted in filter.items():
        values = list(wanted) if isinstance(wanted, list | tuple | set | frozenset) else [wanted]
        if not isinstance(key, str) or not values or not all(isinstance(v, _FILTER_SCALARS) for v in values):
            raise FusionError(
                f"filter[{key!r}] = {wanted!r}: expected a metadata key mapped to a str, int, float "
                f"or bool, or a non-empty list of them"
            )
        conditions.append((key, values))
    return conditions
