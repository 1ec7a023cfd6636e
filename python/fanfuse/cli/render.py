"""Text and JSON views of a multi-query `SearchResult`, shared by `fanfuse search` and `fanfuse demo`.

Every text field of a view (ids, titles, variants, retriever names, errors: text from an index, a
model or a server) goes through `terminal.visible`, so the tables show control characters instead of
letting a terminal act on them, wherever they are printed to.
"""

from __future__ import annotations

import json

from fanfuse.cli.terminal import json_visible, visible
from fanfuse.multiquery import FusedHit, SearchResult
from fanfuse.multiquery.result_json import as_data


def clip(text: str, width: int) -> str:
    """One visible line of at most `width` characters (an ellipsis marks a cut)."""
    line = visible(" ".join(text.split()))
    return line if len(line) <= width else line[: width - 1] + "…"


def found_by(hit: FusedHit, by_retriever: bool = False) -> str:
    """The variants that found the hit, as their numbers in the variant list: "0,2"; by retriever
    (in name order): "bm25 0,2  dense 0,1,3"."""
    found: dict[str, set[int]] = {}
    for p in hit.provenance:
        if p.rank is not None:  # a list that lacks the hit (Borda points) did not find it
            found.setdefault(p.retriever if by_retriever else "", set()).add(p.variant_index)
    parts = [f"{visible(name)} {','.join(map(str, sorted(v)))}".strip() for name, v in sorted(found.items())]
    return "  ".join(parts)


def several_retrievers(result: SearchResult) -> bool:
    return len({b.retriever for b in result.diagnostics.branches}) > 1


def variant_lines(result: SearchResult) -> list[str]:
    expander = result.diagnostics.expansion
    lines = [f"variants ({visible(expander.expander)}):"]
    lines += [
        f"  [{i}] {visible(v.text)}  ({visible(v.source)})" for i, v in enumerate(result.diagnostics.variants)
    ]
    if expander.fallback_reason:
        lines.append(f"  expansion fell back: {visible(expander.fallback_reason)}")
    if expander.dropped_turns:
        lines.append(f"  the conversation's {expander.dropped_turns} oldest turn(s) left out (its budget)")
    return lines


def hit_table(result: SearchResult, title_width: int = 48) -> list[str]:
    lines = [f"{'rank':>4}  {'id':<32} {'score':>8}  {'title':<{title_width}} found by"]
    labelled = several_retrievers(result)
    for rank, hit in enumerate(result.hits, start=1):
        title = clip(str(hit.payload.get("title", "")), title_width)
        via = found_by(hit, labelled)
        lines.append(f"{rank:>4}  {clip(hit.id, 32):<32} {hit.score:8.5f}  {title:<{title_width}} {via}")
    if not result.hits:
        lines.append("  (no hits)")
    return lines


def timing_line(result: SearchResult) -> str:
    d = result.diagnostics
    slowest = max((b.latency_ms for b in d.branches), default=0.0)
    # A branch of weight 0 (a word list the dense side does not search) is counted, not searched.
    skipped = sum(b.skipped for b in d.branches)
    return (
        f"{len(d.variants)} variants x {len({b.retriever for b in d.branches})} retrievers "
        f"= {len(d.branches)} branches{f' ({skipped} skipped: weight 0)' if skipped else ''} "
        f"in {d.total_ms:.2f} ms "
        f"(expand {d.expansion.elapsed_ms:.2f}, slowest branch {slowest:.2f}, fusion {d.fusion_ms:.3f})"
    )


def as_json(result: SearchResult) -> str:
    """The whole result, hits with provenance and diagnostics, as one JSON document (strict JSON: a
    NaN contribution, as Condorcet's, is null; characters a terminal acts on are escaped)."""
    return json_visible(
        json.dumps(as_data(result), indent=2, ensure_ascii=False, default=str, allow_nan=False)
    )
