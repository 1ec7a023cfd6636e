"""Malformed inputs: each gets `file:line: what is wrong`, exit code 2 from the CLI, and no output file."""

from __future__ import annotations

import gzip
import re
from pathlib import Path

import fanfuse
import pytest
from fanfuse.cli import main

GOOD = "q1 Q0 d1 1 2.0 t\nq1 Q0 d2 2 1.0 t\n"

# (file name, content, expected message fragment, line)
CASES = [
    ("short.trec", GOOD + "q1 Q0 d3 3\n", "expected 6 whitespace-separated fields", 3),
    ("rank.trec", GOOD + "q1 Q0 d3 three 0.5 t\n", "rank 'three' is not an integer", 3),
    ("score.trec", "q1 Q0 d1 1 high t\n", "score 'high' is not a finite number", 1),
    (
        "dup.trec",
        GOOD + "q1 Q0 d1 3 0.5 t\n",
        "document 'd1' appears twice for query 'q1' (first at {path}:1)",
        3,
    ),
    ("notobject.jsonl", '{"task_id": "q", "contexts": []}\n[1, 2]\n', "not a JSON object", 2),
    (
        "badjson.jsonl",
        '{"task_id": "q", "contexts": [{"document_id": "d"}]}\n',
        "'d' (query 'q') has no score",
        1,
    ),
    # A field given twice is refused inside a context as in the record, never read as its last value.
    (
        "twiceid.jsonl",
        '{"task_id": "q", "contexts": []}\n{"task_id": "q2", "contexts": [{"document_id": "d1", '
        '"document_id": "d9", "score": 1}]}\n',
        "duplicate field `document_id` in a context",
        2,
    ),
    (
        "twicescore.jsonl",
        '{"task_id": "q", "contexts": [{"document_id": "d2", "score": 0.5, "score": 7}]}\n',
        "duplicate field `score` in a context",
        1,
    ),
    (
        "twicetask.jsonl",
        '{"task_id": "q", "task_id": "q2", "contexts": []}\n',
        "duplicate field `task_id`",
        1,
    ),
]


def write(path: Path, content: str | bytes) -> str:
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content)
    return str(path)


@pytest.mark.parametrize(("name", "content", "message", "line"), CASES)
def test_malformed_run_names_file_and_line(
    tmp_path: Path, name: str, content: str, message: str, line: int
) -> None:
    bad = write(tmp_path / name, content)
    good = write(tmp_path / "good.trec", GOOD)
    out = tmp_path / "fused.trec"
    with pytest.raises(fanfuse.FusionError) as caught:
        fanfuse.fuse_files([good, bad], str(out))
    assert f"{bad}:{line}: " in str(caught.value)
    assert message.format(path=bad) in str(caught.value)
    assert not out.exists()
    assert {p.name for p in tmp_path.iterdir()} == {name, "good.trec"}, "a temporary file was left behind"


def test_cli_exits_2_with_the_message_and_keeps_a_good_output(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = write(tmp_path / "bad.trec", GOOD + "q1 Q0 d3 3\n")
    out = tmp_path / "fused.trec"
    out.write_text("previous good result\n")
    assert main(["fuse", bad, "-o", str(out)]) == 2
    assert f"{bad}:3: expected 6 whitespace-separated fields" in capsys.readouterr().err
    assert out.read_text() == "previous good result\n"


def test_empty_file(tmp_path: Path) -> None:
    empty = write(tmp_path / "empty.trec", "\n\n")
    with pytest.raises(fanfuse.FusionError, match=r"empty\.trec: the file is empty; expected TREC run lines"):
        fanfuse.read_run(empty)


def test_truncated_gzip(tmp_path: Path) -> None:
    data = gzip.compress(("".join(f"q{i} Q0 d{i} 1 1.0 t\n" for i in range(5000))).encode())
    cut = write(tmp_path / "cut.trec.gz", data[: len(data) // 2])
    out = tmp_path / "out.trec"
    with pytest.raises(
        fanfuse.FusionError, match=r"cut\.trec\.gz:\d+: the gzip stream is corrupt or truncated"
    ):
        fanfuse.fuse_files([cut], str(out))
    assert not out.exists()


def test_gzip_reads_like_plain(tmp_path: Path) -> None:
    plain = write(tmp_path / "a.trec", GOOD)
    packed = write(tmp_path / "a.trec.gz", gzip.compress(GOOD.encode()))
    assert fanfuse.read_run(plain).columns() == fanfuse.read_run(packed).columns()


def test_invalid_utf8(tmp_path: Path) -> None:
    bad = write(tmp_path / "latin1.trec", GOOD.encode() + b"q1 Q0 caf\xe9 3 0.5 t\n")
    with pytest.raises(fanfuse.FusionError, match=r"latin1\.trec:3: invalid UTF-8 at byte 10"):
        fanfuse.read_run(bad)


def test_qrels_header_in_the_wrong_place(tmp_path: Path) -> None:
    qrels = write(tmp_path / "qrels.tsv", "q1\td1\t1\nquery-id\tcorpus-id\tscore\n")
    with pytest.raises(
        fanfuse.FusionError, match=r"qrels\.tsv:2: relevance 'score' is not an integer \(a header"
    ):
        fanfuse.read_qrels(qrels)


def test_qrels_header_on_line_one_is_accepted(tmp_path: Path) -> None:
    qrels = fanfuse.read_qrels(write(tmp_path / "qrels.tsv", "query-id\tcorpus-id\tscore\nq1\td1\t1\n"))
    assert qrels.qids() == ["q1"]


def test_output_in_a_missing_directory(tmp_path: Path) -> None:
    good = write(tmp_path / "good.trec", GOOD)
    with pytest.raises(fanfuse.InvalidOutput, match=r"the output directory '.*nowhere' does not exist"):
        fanfuse.fuse_files([good], str(tmp_path / "nowhere" / "out.trec"))
    assert main(["fuse", good, "-o", str(tmp_path / "nowhere" / "out.trec")]) == 2


def test_a_duplicate_in_a_table_names_its_rows_as_rows_are_named(tmp_path: Path) -> None:
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    from fanfuse.tables import read_any_run

    table = pa.table({"qid": ["q1", "q1", "q1"], "docid": ["d1", "d2", "d1"], "score": [3.0, 2.0, 1.0]})
    pq.write_table(table, tmp_path / "dup.parquet")
    path = str(tmp_path / "dup.parquet")
    with pytest.raises(
        fanfuse.FusionError, match=rf"^{re.escape(path)}:3: .* \(first at {re.escape(path)}:1\)"
    ):
        read_any_run(path)
