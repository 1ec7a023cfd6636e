"""One reading of every input file: a byte-order mark is skipped, fields split where trec_eval and
Python's ``str.split()`` both split, and a character on which they disagree is refused, not guessed."""

from __future__ import annotations

import gzip
import json
import re
from pathlib import Path

import fanfuse
import pytest
from fanfuse.cli import main
from fanfuse.corpus import read_jsonl

BOM = "\ufeff"
RUN = "q1 Q0 d1 1 3.0 t\nq1 Q0 d2 2 2.0 t\nq1 Q0 d3 3 1.0 t\nq2 Q0 d4 1 1.0 t\n"
QRELS = "q1 0 d1 1\nq1 0 d3 1\nq2 0 d4 1\n"
MTRAG = (
    '{"task_id": "q1", "Collection": "c", "contexts": [{"document_id": "d1", "score": 3.0}, '
    '{"document_id": "d2", "score": 2.0}]}\n'
)


def put(path: Path, content: str | bytes, *, packed: bool = False) -> str:
    data = content.encode() if isinstance(content, str) else content
    path.write_bytes(gzip.compress(data) if packed else data)
    return str(path)


def ndcg(run: str, qrels: str) -> list[float]:
    _qids, values = fanfuse.evaluate(fanfuse.read_run(run), fanfuse.read_qrels(qrels), metrics=["ndcg@10"])
    return values["ndcg@10"]


@pytest.mark.parametrize("packed", [False, True], ids=["plain", "gzip"])
def test_a_byte_order_mark_does_not_become_part_of_the_first_query_id(tmp_path: Path, packed: bool) -> None:
    # The mark on the first line once made a query "\ufeffq1" beside "q1": one extra query, silently.
    run = put(tmp_path / "run.trec", BOM + RUN + "q1 Q0 d9 4 0.5 t\n", packed=packed)
    assert fanfuse.read_run(run).qids() == ["q1", "q2"]


@pytest.mark.parametrize("packed", [False, True], ids=["plain", "gzip"])
def test_a_byte_order_mark_on_qrels_keeps_the_first_judgment(tmp_path: Path, packed: bool) -> None:
    run = put(tmp_path / "run.trec", RUN)
    plain = put(tmp_path / "plain.qrels", QRELS)
    marked = put(tmp_path / "marked.qrels", BOM + QRELS, packed=packed)
    assert fanfuse.read_qrels(marked).qids() == ["q1", "q2"]
    assert ndcg(run, marked) == ndcg(run, plain)


def test_a_byte_order_mark_on_beir_qrels_keeps_the_header_a_header(tmp_path: Path) -> None:
    beir = put(tmp_path / "qrels.tsv", BOM + "query-id\tcorpus-id\tscore\nq1\td1\t1\n")
    assert fanfuse.read_qrels(beir).qids() == ["q1"]


def test_real_qrels_with_a_byte_order_mark_evaluate_the_same(mtrag_dir: Path, tmp_path: Path) -> None:
    rows = (mtrag_dir / "qrels" / "clapnq" / "dev.tsv").read_text().splitlines()[1:]
    trec = "".join(f"{q} 0 {d} {rel}\n" for q, d, rel in (row.split("\t") for row in rows))
    plain = put(tmp_path / "dev.qrels", trec)
    marked = put(tmp_path / "marked.qrels", BOM + trec)
    run = str(mtrag_dir / "runs_trec" / "elser_clapnq_rewrite.trec")
    assert ndcg(run, marked) == ndcg(run, plain)


@pytest.mark.parametrize("packed", [False, True], ids=["plain", "gzip"])
def test_a_byte_order_mark_on_mtrag_jsonl_keeps_the_format(tmp_path: Path, packed: bool) -> None:
    run = put(tmp_path / "run.jsonl", BOM + MTRAG, packed=packed)
    assert fanfuse.read_run(run).columns()[:2] == (["q1", "q1"], ["d1", "d2"])


@pytest.mark.parametrize("packed", [False, True], ids=["plain", "gzip"])
def test_a_byte_order_mark_on_a_corpus_is_skipped(tmp_path: Path, packed: bool) -> None:
    corpus = put(
        tmp_path / ("corpus.jsonl.gz" if packed else "corpus.jsonl"), BOM + '{"id": "a", "text": "x"}\n'
    )
    assert [d.id for d in read_jsonl(corpus)] == ["a"]


@pytest.mark.parametrize("separator", ["\v", "\f", "\t", " \t "], ids=["vtab", "formfeed", "tab", "mixed"])
def test_every_whitespace_that_trec_eval_and_python_split_on_separates_fields(
    tmp_path: Path, separator: str
) -> None:
    # A qid ending in a vertical tab was its own query, while trec_eval (isspace) and Python split it off.
    line = f"q1{separator}Q0 d1{separator}1 2.0 t\n"
    assert line.split()[:3] == ["q1", "Q0", "d1"]
    run = put(tmp_path / "run.trec", line + "q1 Q0 d2 2 1.0 t\n")
    assert fanfuse.read_run(run).columns()[:2] == (["q1", "q1"], ["d1", "d2"])
    qrels = put(tmp_path / "qrels", f"q1{separator}0 d1 1\n")
    assert fanfuse.read_qrels(qrels).qids() == ["q1"]


# Characters inside an id on which trec_eval and Python disagree (or that no reader should guess at).
ODD = [
    ("\u00a0", "U+00A0"),  # no-break space: Python's split() splits there, trec_eval does not
    ("\u2003", "U+2003"),  # em space, likewise
    ("\x85", "U+0085"),  # next line, likewise
    ("\x1c", "U+001C"),  # file separator: whitespace to Python only
    ("\x00", "U+0000"),  # NUL: trec_eval stops reading the file there
    ("\x7f", "U+007F"),  # delete: invisible
    ("\ufeff", "U+FEFF"),  # a byte-order mark past the start: a marked file appended to another
]


@pytest.mark.parametrize(("odd", "name"), ODD, ids=[name for _, name in ODD])
def test_characters_read_differently_by_trec_eval_and_python_are_refused(
    tmp_path: Path, odd: str, name: str
) -> None:
    for content in (
        f"q1 Q0 d1 1 1.0 t\n{odd}q2 Q0 d2 1 0.5 t\n",
        f"q1 Q0 d1 1 1.0 t\nq2 Q0 d{odd}2 1 0.5 t\n",
    ):
        run = put(tmp_path / "run.trec", content)
        with pytest.raises(fanfuse.FusionError, match=rf"run\.trec:2: .*{re.escape(name)}"):
            fanfuse.read_run(run)
        out = tmp_path / "fused.trec"
        with pytest.raises(fanfuse.FusionError, match=re.escape(name)):
            fanfuse.fuse_files([run], str(out))
        assert not out.exists()
    qrels = put(tmp_path / "qrels", f"q1 0 d1 1\nq{odd}2 0 d2 1\n")
    with pytest.raises(fanfuse.FusionError, match=rf"qrels:2: .*{re.escape(name)}"):
        fanfuse.read_qrels(qrels)


@pytest.mark.parametrize(
    ("run", "qrels", "line"),
    [
        ("q1 Q0 d1 1 1.0 t\nq1\rQ0 d2 2 0.5 t\n", "q1 0 d1 1\nq1\r0 d2 1\n", 2),
        ("q1 Q0 d1 1 1.0 t\rq1 Q0 d2 2 0.5 t\r", "q1 0 d1 1\rq1 0 d2 1\r", 1),
    ],
    ids=["inside", "line-ends"],
)
def test_a_carriage_return_inside_a_line_is_refused(tmp_path: Path, run: str, qrels: str, line: int) -> None:
    # trec_eval reads it as a space, Python's universal newlines as the end of a line.
    with pytest.raises(fanfuse.FusionError, match=rf"run\.trec:{line}: .*carriage return"):
        fanfuse.read_run(put(tmp_path / "run.trec", run))
    with pytest.raises(fanfuse.FusionError, match=rf"qrels:{line}: .*carriage return"):
        fanfuse.read_qrels(put(tmp_path / "qrels", qrels))


def test_comment_lines_are_skipped_as_trec_eval_skips_them(tmp_path: Path) -> None:
    run = put(tmp_path / "run.trec", "# produced by bm25\n" + RUN + "  #q3 Q0 d1 1 1.0 t\n")
    assert fanfuse.read_run(run).qids() == ["q1", "q2"]
    qrels = put(tmp_path / "qrels", "# judged in 2024\n" + QRELS + "#q3 0 d1 1\n")
    assert fanfuse.read_qrels(qrels).qids() == ["q1", "q2"]


@pytest.mark.parametrize(("odd", "name"), [("\r", "a carriage return"), ("\x00", "NUL")], ids=["cr", "nul"])
def test_a_comment_that_other_readers_would_not_skip_is_refused(tmp_path: Path, odd: str, name: str) -> None:
    # Python readers end the line at the carriage return and read "q9 ..." as a query; trec_eval stops at NUL.
    run = put(tmp_path / "run.trec", f"# note{odd}q9 Q0 d1 1 1.0 t\n" + RUN)
    with pytest.raises(fanfuse.FusionError, match=rf"run\.trec:1: the comment contains {name}"):
        fanfuse.read_run(run)
    qrels = put(tmp_path / "qrels", f"# note{odd}q9 0 d1 1\n" + QRELS)
    with pytest.raises(fanfuse.FusionError, match=rf"qrels:1: the comment contains {name}"):
        fanfuse.read_qrels(qrels)


def test_mtrag_scores_read_as_python_reads_them(tmp_path: Path) -> None:
    # A JSON parser that is not correctly rounded read this score one bit off (Python's json is exact).
    scores = ["-1.704240339106099e289", "0.1", "2.2250738585072014e-308"]
    contexts = ", ".join(f'{{"document_id": "d{i}", "score": {s}}}' for i, s in enumerate(scores))
    run = put(tmp_path / "run.jsonl", f'{{"task_id": "q", "contexts": [{contexts}]}}\n')
    read = fanfuse.read_run(run, rank_from="file").columns()[3]
    assert [x.hex() for x in read] == [json.loads(s).hex() for s in scores]


def test_a_utf16_file_is_named_as_such(tmp_path: Path) -> None:
    run = put(tmp_path / "run.trec", (BOM + RUN).encode("utf-16-le"))
    with pytest.raises(fanfuse.FusionError, match=r"run\.trec:1: .*UTF-16.*convert it to UTF-8"):
        fanfuse.read_run(run)


def test_a_beir_id_with_a_space_is_refused_not_split(tmp_path: Path) -> None:
    # Tab-separated, so a space is part of the id to BEIR's csv reader; split on whitespace it would
    # read as the 4-field TREC shape with another query and document.
    qrels = put(tmp_path / "qrels.tsv", "query-id\tcorpus-id\tscore\nq 1\td1\t1\n")
    with pytest.raises(fanfuse.FusionError, match=r"qrels\.tsv:2: .*3 tab-separated fields"):
        fanfuse.read_qrels(qrels)


def test_cli_eval_reads_marked_qrels_like_plain_ones(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = put(tmp_path / "run.trec", RUN)
    plain = put(tmp_path / "plain.qrels", QRELS)
    marked = put(tmp_path / "marked.qrels", BOM + QRELS)
    assert main(["eval", run, "--qrels", plain, "--json"]) == 0
    expected = json.loads(capsys.readouterr().out)
    assert main(["eval", run, "--qrels", marked, "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == expected


def test_corpus_lines_end_only_at_a_newline(tmp_path: Path) -> None:
    # JSON allows a carriage return between tokens; Python's universal newlines would cut the line there.
    corpus = put(tmp_path / "corpus.jsonl", '{"id": "a",\r "text": "x"}\r\n{"id": "b", "text": "y"}\n')
    assert [d.id for d in read_jsonl(corpus)] == ["a", "b"]


def test_a_corpus_line_of_unicode_space_is_not_taken_for_blank(tmp_path: Path) -> None:
    corpus = put(tmp_path / "corpus.jsonl", '{"id": "a", "text": "x"}\n \t\n\u00a0\n')
    with pytest.raises(fanfuse.InvalidCorpus, match=r"corpus\.jsonl:3: not valid JSON"):
        list(read_jsonl(corpus))


def test_a_gzip_corpus_is_recognised_by_its_bytes(tmp_path: Path) -> None:
    corpus = put(tmp_path / "corpus.jsonl", '{"id": "a", "text": "x"}\n', packed=True)
    assert [d.id for d in read_jsonl(corpus)] == ["a"]


def test_a_corpus_that_is_not_utf8_names_file_and_line(tmp_path: Path) -> None:
    corpus = put(tmp_path / "corpus.jsonl", b'{"id": "a", "text": "x"}\n{"id": "b", "text": "caf\xe9"}\n')
    with pytest.raises(fanfuse.InvalidCorpus, match=r"corpus\.jsonl:2: .*UTF-8"):
        list(read_jsonl(corpus))
