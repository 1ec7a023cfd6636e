"""`fanfuse search --explain`: a search explained in the sections of the search page of `fanfuse
serve`, in the same order, so the two read alike: `degraded` first when it is, the variants (source,
weight), the fused list (each hit's text and payload, and a bar of its score split by what each
(variant, retriever) added, with the rank it had there), and every branch on one timeline.

Every text (ids, titles, documents, variants, retriever names, errors) goes through
`terminal.visible`, as in `fanfuse.cli.render`.
"""

from __future__ import annotations

import json
import string

from fanfuse.cli.render import clip
from fanfuse.cli.terminal import visible
from fanfuse.multiquery import Diagnostics, FusedHit, SearchResult

__all__ = ["explain_lines"]

BAR_WIDTH = 48
TEXT_WIDTH = 100
# A bar's pieces are lettered in the order of the hit's provenance; the letters name them below it.
_LETTERS = string.ascii_lowercase + string.ascii_uppercase


def explain_lines(result: SearchResult) -> list[str]:
    diagnostics = result.diagnostics
    lines = degraded_lines(diagnostics)
    lines += [*variant_lines(diagnostics), "", *fused_lines(result), "", *branch_lines(diagnostics)]
    return lines


def degraded_lines(d: Diagnostics) -> list[str]:
    if not d.degraded:
        return []
    why = []
    if d.failed_branches:
        why.append(
            f"{len(d.failed_branches)} of {len(d.branches)} branches failed; the list fuses the others"
        )
    if d.expansion.fallback_reason:
        why.append(f"expansion fell back: {visible(d.expansion.fallback_reason)}")
    if d.rerank_error:
        why.append(f"reranking failed: {visible(d.rerank_error)}")
    return [f"degraded: {'; '.join(why)}", ""]


def variant_lines(d: Diagnostics) -> list[str]:
    notes = [f"expander {visible(d.expansion.expander)}", f"{d.expansion.elapsed_ms:.2f} ms"]
    if d.expansion.cached:
        notes.append("cached")
    if d.expansion.note:
        notes.append(visible(d.expansion.note))
    lines = [f"variants ({', '.join(notes)}):"]
    lines += [
        f"  [{i}] {visible(v.text)}  ({visible(v.source)}, weight {v.weight:.2f})"
        for i, v in enumerate(d.variants)
    ]
    return lines


def share(hit: FusedHit) -> float:
    return sum(max(0.0, p.contribution) for p in hit.provenance if _is_number(p.contribution))


def _is_number(value: float | None) -> bool:
    return value is not None and value == value  # Condorcet's contributions are NaN


def fused_lines(result: SearchResult) -> list[str]:
    d = result.diagnostics
    lines = [
        f"fused list ({len(result.hits)} hits, fusion {d.fusion_ms:.3f} ms; the bar: the score split by "
        "what each (variant, retriever) added):"
    ]
    most = max((share(hit) for hit in result.hits), default=0.0) or 1.0
    for rank, hit in enumerate(result.hits, start=1):
        title = visible(str(hit.payload.get("title", "")))
        rerank = f"  rerank {hit.rerank_score:.4f}" if hit.rerank_score is not None else ""
        lines.append(f"  #{rank:<3} {visible(hit.id)}  {title}{rerank}  {hit.score:.5f}")
        if "text" in hit.payload:
            lines.append(f"       {clip(str(hit.payload['text']), TEXT_WIDTH)}")
        for key, value in hit.payload.items():
            if key not in ("title", "text"):
                shown = (
                    value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
                )
                lines.append(f"       {visible(str(key))}: {clip(shown, TEXT_WIDTH)}")
        lines += hit_bar(hit, most)
    if not result.hits:
        lines.append("  (no hits)")
    return lines


def hit_bar(hit: FusedHit, most: float) -> list[str]:
    """The bar of the hit's score (as long as its share of the list's largest), a letter per
    (variant, retriever) piece, and each piece named: its letter, variant, retriever, rank, share."""
    if not any(_is_number(p.contribution) for p in hit.provenance):
        pieces = [f"[{p.variant_index}] {visible(p.retriever)} rank {p.rank or '-'}" for p in hit.provenance]
        return ["       (this method gives no share of the score per list)", "       " + "  ".join(pieces)]
    bar, named = "", []
    for i, p in enumerate(hit.provenance):
        letter = _LETTERS[i % len(_LETTERS)]
        contribution = p.contribution if _is_number(p.contribution) else 0.0
        bar += letter * round(BAR_WIDTH * max(0.0, contribution) / most)
        rank = f"rank {p.rank}" if p.rank is not None else "not in its list"
        named.append(f"{letter} [{p.variant_index}] {visible(p.retriever)} {rank} {contribution:+.5f}")
    return [f"       |{bar[:BAR_WIDTH]:<{BAR_WIDTH}}|", *(f"       {line}" for line in _rows(named))]


def _rows(pieces: list[str], per_row: int = 3) -> list[str]:
    return ["   ".join(pieces[i : i + per_row]) for i in range(0, len(pieces), per_row)]


def branch_lines(d: Diagnostics) -> list[str]:
    """The expansion and every branch as a span of one timeline, from the search's start."""
    end = max([d.expansion.elapsed_ms, *(b.started_ms + b.latency_ms for b in d.branches)]) or 1.0
    lines = [
        f"branches (variant x retriever on one timeline, 0-{end:.2f} ms; total {d.total_ms:.2f} ms, "
        f"fusion {d.fusion_ms:.3f} ms):"
    ]
    rows = [("expansion", 0.0, d.expansion.elapsed_ms, f"{len(d.variants)} variants")]
    for b in d.branches:
        state = f"error: {visible(b.error)}" if b.error else f"{b.hits} hits"
        flags = [name for name, on in (("timed out", b.timed_out), ("skipped", b.skipped)) if on]
        state += f" ({', '.join(flags)})" if flags else ""
        rows.append((f"[{b.variant_index}] {visible(b.retriever)}", b.started_ms, b.latency_ms, state))
    width = max(len(label) for label, *_ in rows)
    for label, start, latency, state in rows:
        begin = min(BAR_WIDTH - 1, int(BAR_WIDTH * start / end))
        length = max(1, round(BAR_WIDTH * latency / end))
        track = (" " * begin + "#" * length)[:BAR_WIDTH]
        lines.append(f"  {label:<{width}} |{track:<{BAR_WIDTH}}| {state}, {latency:.2f} ms")
    return lines
