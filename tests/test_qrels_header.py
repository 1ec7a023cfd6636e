"""A BEIR qrels header is a line of column names: a first line whose relevance is a number (2.5,
1.0, 1e3, an integer beyond 64 bits) is a judgment, refused at file:1 naming the value, never
dropped as a header; a line of names before the first judgment is still the header, and every line
after it keeps its shape (a TREC judgment that lost its relevance is no header). Every reader of
qrels goes through the one reader (`read_qrels`, `read_any_qrels`, `fanfuse eval --qrels`)."""

from __future__ import annotations

from pathlib import Path

import fanfuse
import pytest
from fanfuse.cli import main
from fanfuse.tables import read_any_qrels

NUMBERS = ["2.5", "1.0", "-0.5", "1e3", "nan", "inf", "99999999999999999999", "-99999999999999999999"]
READERS = {"read_qrels": fanfuse.read_qrels, "read_any_qrels": read_any_qrels}


@pytest.mark.parametrize("reader", sorted(READERS))
@pytest.mark.parametrize("value", NUMBERS)
def test_a_numeric_first_line_is_a_judgment_refused_where_it_is(
    tmp_path: Path, reader: str, value: str
) -> None:
    path = tmp_path / "qrels.tsv"
    path.write_text(f"q1\td3\t{value}\nq1\td1\t1\nq2\td2\t1\n")
    beyond = value.lstrip("-").isdigit()
    said = "is out of range" if beyond else "is not an integer"
    with pytest.raises(fanfuse.FusionError, match=rf"qrels.tsv:1: relevance '{value}' {said}") as refused:
        READERS[reader](str(path))
    assert "only accepted before the first judgment" not in str(refused.value)


@pytest.mark.parametrize("header", ["query-id\tcorpus-id\tscore", "qid\tdocid\trelevance", "q\td\tlabel"])
def test_a_line_of_names_first_is_the_header(tmp_path: Path, header: str) -> None:
    path = tmp_path / "qrels.tsv"
    path.write_text(f"# judged by hand\n{header}\nq1\td3\t2\nq1\td1\t1\n")
    qrels = fanfuse.read_qrels(str(path))
    assert qrels.qids() == ["q1"] and len(qrels) == 1


def test_a_line_of_names_after_a_judgment_is_refused_saying_where_headers_go(tmp_path: Path) -> None:
    path = tmp_path / "qrels.tsv"
    path.write_text("q1\td3\t2\nquery-id\tcorpus-id\tscore\n")
    with pytest.raises(fanfuse.FusionError, match=r"qrels.tsv:2: .*only accepted before the first judgment"):
        fanfuse.read_qrels(str(path))


# (file, the line refused and what it says): a file keeps the shape of its first line.
TWO_SHAPES = [
    ("q1 0 a\nq1 0 b 1\nq2 0 x 1\n", "2: found 4 fields where line 1, the BEIR header, has 3"),
    ("q1 0 a 1\nq2 x 1\n", "2: found 3 fields where line 1, a judgment, has 4"),
    ("q1\ta\t1\nq2 0 x 1\n", "2: found 4 fields where line 1, a judgment, has 3"),
]


@pytest.mark.parametrize("reader", sorted(READERS))
@pytest.mark.parametrize(("text", "said"), TWO_SHAPES)
def test_a_line_of_the_other_shape_is_refused_where_it_is(
    tmp_path: Path, reader: str, text: str, said: str
) -> None:
    path = tmp_path / "qrels.txt"
    path.write_text(text)
    with pytest.raises(fanfuse.FusionError, match=rf"qrels.txt:{said}; a file keeps one shape"):
        READERS[reader](str(path))


def test_eval_refuses_the_numeric_first_line_instead_of_scoring_without_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = tmp_path / "a.run"
    run.write_text("q1 Q0 d1 1 3.0 a\nq1 Q0 d3 2 2.0 a\nq2 Q0 d2 1 1.0 a\n")
    qrels = tmp_path / "qrels.tsv"
    qrels.write_text("q1\td3\t2.5\nq1\td1\t1\nq2\td2\t1\n")
    assert main(["eval", str(run), "--qrels", str(qrels)]) == 2
    assert "qrels.tsv:1: relevance '2.5' is not an integer" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("rank", "said"), [("9223372036854775808", "is out of range"), ("2.5", "is not an integer")]
)
def test_a_run_rank_beyond_64_bits_is_out_of_range_not_a_non_integer(
    tmp_path: Path, rank: str, said: str
) -> None:
    path = tmp_path / "a.run"
    path.write_text(f"q1 Q0 d1 {rank} 3.0 a\n")
    with pytest.raises(fanfuse.FusionError, match=rf"a.run:1: rank '{rank}' {said}"):
        fanfuse.read_run(str(path))
