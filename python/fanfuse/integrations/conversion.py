"""What every framework adapter shares, with no framework imported: fused hits as a framework's
(text, metadata), a framework's documents as hits, and the filter check of what a framework returns.

A filter means what `fanfuse.retrievers.filters` says on every backend. Adapters translate it into
the framework's own filter language, so the framework's store does the narrowing, and then keep only
the documents that match by fanfuse's rules: a store that compares more loosely (Python's `True ==
1`, dates parsed from strings) never lets a document through that another backend would not.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from fanfuse.errors import InvalidCorpus
from fanfuse.retrievers.base import Hit
from fanfuse.retrievers.filters import Condition, conditions, matches

if TYPE_CHECKING:
    from fanfuse.multiquery import FusedHit

__all__ = ["FANFUSE_METADATA_KEYS", "framework_hits", "fused_text_and_metadata"]

T = TypeVar("T")
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
    # A payload without text (None) is a document without text, not the word "None".
    return "" if text is None else str(text), metadata


def framework_hits(
    source: str,
    documents: Iterable[T],
    fields: Callable[[T], tuple[object, float | None, str | None, Mapping[str, Any]]],
    *,
    id_field: str,
    id_key: str,
    filter: Mapping[str, Any] | None = None,
    k: int | None = None,
) -> list[Hit]:
    """A framework's ranked documents as `Hit`s; `fields(document)` gives (id, score, text, metadata).

    The id is the document's own (`id_field`, named in the error), else `metadata[id_key]`; without
    either fusion cannot deduplicate it, so it is an error naming `source`. A document without a
    score gets 1/rank (its rank in what the framework returned). The payload is the metadata plus
    `text`. With `filter`, a document whose metadata does not match it is left out; at most `k`.
    """
    checked: list[Condition] = conditions(filter) if filter else []
    hits: list[Hit] = []
    for rank, document in enumerate(documents, start=1):
        if k is not None and len(hits) == k:
            break
        doc_id, score, text, metadata = fields(document)
        if checked and not matches(checked, metadata):
            continue
        if doc_id is None or doc_id == "":
            doc_id = metadata.get(id_key)
        if doc_id is None or doc_id == "":
            raise InvalidCorpus(
                f"{source} returned a document without an id ({id_field} or metadata[{id_key!r}]); "
                f"pass id_key= naming the metadata field that identifies documents"
            )
        payload = {**metadata, "text": "" if text is None else text}
        hits.append(Hit(str(doc_id), float(1.0 / rank if score is None else score), payload))
    return hits
