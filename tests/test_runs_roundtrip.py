"""What fanfuse writes reads back the same: runs with arbitrary ids and scores, written as TREC and as
MT-RAG JSONL. TREC refuses exactly the ids that trec_eval or Python's ``str.split()`` would not read
back as one field (the coverage-guided version of these properties is under fuzz/)."""

from __future__ import annotations

import re
import tempfile
from pathlib import Path

import fanfuse
import pytest
from hypothesis import given
from hypothesis import strategies as st
from rrf_strategies import examples

# Any text but lone surrogates (not UTF-8); small alphabets make shared ids and separators frequent.
ANY_TEXT = st.text(st.characters(exclude_categories=("Cs",)), min_size=1, max_size=8)
ODD = " \t\n\v\f\r\x00\x1c\x85\xa0\u2028\u3000\ufeff#{"
TRICKY = st.text(st.sampled_from("ab\u00e9\U0001f642" + ODD), min_size=1, max_size=6)
SCORES = st.floats(allow_nan=False, allow_infinity=False)


def one_field(value: str) -> bool:
    """Whether trec_eval (C isspace, stops at NUL) and Python (str.split, universal newlines) both
    read `value` back as one field, and it is no invisible control character or byte-order mark."""
    c_split = [f for f in value.translate({ord(c): " " for c in " \t\n\v\f\r"}).split(" ") if f]
    return (
        value.split() == [value]
        and c_split == [value]
        and not any(c == "\ufeff" or ord(c) < 0x20 or 0x7F <= ord(c) <= 0x9F for c in value)
    )


@st.composite
def runs(draw: st.DrawFn, ids: st.SearchStrategy[str]) -> list[tuple[str, list[tuple[str, float]]]]:
    qids = draw(st.lists(ids, min_size=1, max_size=4, unique=True))
    return [
        (q, draw(st.lists(st.tuples(ids, SCORES), min_size=1, max_size=4, unique_by=lambda h: h[0])))
        for q in qids
    ]


def columns(run: list[tuple[str, list[tuple[str, float]]]]) -> tuple[list[str], list[str], list[float]]:
    rows = [(q, d, s) for q, hits in run for d, s in hits]
    return [r[0] for r in rows], [r[1] for r in rows], [r[2] for r in rows]


def written_and_read(
    run: fanfuse.Run, out: Path, fmt: str
) -> tuple[list[str], list[str], list[int], list[str]]:
    run.write(str(out), format=fmt)
    qids, docids, ranks, scores = fanfuse.read_run(str(out), rank_from="file").columns()
    return qids, docids, ranks, [s.hex() for s in scores]


def as_written(run: fanfuse.Run) -> tuple[list[str], list[str], list[int], list[str]]:
    qids, docids, ranks, scores = run.columns()
    return qids, docids, ranks, [s.hex() for s in scores]


@examples(0.008)
@given(runs(ANY_TEXT | TRICKY), st.sampled_from(["trec", "mtrag"]))
def test_written_runs_read_back_the_same(run: list[tuple[str, list[tuple[str, float]]]], fmt: str) -> None:
    built = fanfuse.Run.from_columns(*columns(run), rank_from="file")
    # A first line starting with "{" would be read as MT-RAG JSONL.
    holdable = not run[0][0].startswith("{") and all(
        one_field(q) and not q.startswith("#") and all(one_field(d) for d, _ in h) for q, h in run
    )
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / f"run.{fmt}"
        if fmt == "trec" and not holdable:
            with pytest.raises(fanfuse.FusionError, match="format 'mtrag'"):
                built.write(str(out), format=fmt)
            assert not out.exists()
        else:
            assert written_and_read(built, out, fmt) == as_written(built)


@examples(0.004)
@given(runs(TRICKY), st.text(st.sampled_from("t" + ODD), min_size=0, max_size=3))
def test_a_tag_is_refused_exactly_when_a_trec_line_cannot_hold_it(
    run: list[tuple[str, list[tuple[str, float]]]], tag: str
) -> None:
    built = fanfuse.Run.from_columns(*columns(run))
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "run.trec"
        if one_field(tag):
            try:
                built.write(str(out), tag=tag)
            except fanfuse.FusionError as error:  # an id, not the tag, was refused
                assert re.search(r"^<columns>:\d+: (query|document) id ", str(error)), str(error)
        else:
            with pytest.raises(fanfuse.InvalidSetting, match="tag"):
                built.write(str(out), tag=tag)
            assert not out.exists()
