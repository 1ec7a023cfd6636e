"""A written run always reads back: values a TREC line cannot hold are refused before anything is
written, naming the value and where it came from, and MT-RAG JSONL (which holds any string) is offered."""

from __future__ import annotations

import json
import re
from pathlib import Path

import fanfuse
import pytest
from fanfuse.cli import main

TREC = "q1 Q0 d1 1 2.0 t\nq1 Q0 d2 2 1.0 t\n"


def mtrag_line(task_id: str, docids: list[str]) -> str:
    contexts = [{"document_id": d, "score": float(len(docids) - i)} for i, d in enumerate(docids)]
    return json.dumps({"task_id": task_id, "Collection": "c", "contexts": contexts}) + "\n"


@pytest.mark.parametrize(
    ("tag", "shown"),
    [("my tag", "'my tag'"), ("", "''"), ("a\tb", r"'a\tb'"), ("r\u00a0x", r"'r\u{a0}x'")],
    ids=["space", "empty", "tab", "nbsp"],
)
def test_a_tag_a_trec_line_cannot_hold_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], tag: str, shown: str
) -> None:
    # "my tag" wrote 7-field lines and "" 5-field ones, both rejected by `fanfuse eval` (exit 0 all the same).
    run = tmp_path / "run.trec"
    run.write_text(TREC)
    out = tmp_path / "fused.trec"
    assert main(["fuse", str(run), "-o", str(out), "--tag", tag]) == 2
    err = capsys.readouterr().err
    assert f"tag {shown}" in err and "Traceback" not in err
    assert not out.exists()
    with pytest.raises(fanfuse.InvalidSetting, match="tag"):
        fanfuse.read_run(str(run)).write(str(out), tag=tag)
    assert not out.exists()
    # MT-RAG output has no tag field: the same tag is no reason to refuse it.
    fanfuse.fuse_files([str(run)], str(out), format="mtrag", tag=tag)
    assert fanfuse.read_run(str(out)).qids() == ["q1"]


@pytest.mark.parametrize(
    ("task_id", "docid", "shown"),
    [
        ("a b", "d1", "query id 'a b'"),
        ("a\nb", "d1", r"query id 'a\nb'"),
        ("#x", "d1", "query id '#x'"),
        ("q", "d 1", "document id 'd 1'"),
        ("q", "d\u2028", r"document id 'd\u{2028}'"),
    ],
    ids=["space", "newline", "comment", "docid-space", "docid-line-separator"],
)
def test_mtrag_ids_a_trec_line_cannot_hold_are_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], task_id: str, docid: str, shown: str
) -> None:
    run = tmp_path / "run.jsonl"
    run.write_text(mtrag_line("ok", ["d0"]) + mtrag_line(task_id, [docid, "d9"]))
    out = tmp_path / "fused.trec"
    assert main(["fuse", str(run), "-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert shown in err and "format 'mtrag'" in err and "Traceback" not in err
    assert not out.exists()
    with pytest.raises(fanfuse.FusionError, match=r"run\.jsonl:2: "):
        fanfuse.read_run(str(run)).write(str(out))
    assert not out.exists()
    # MT-RAG JSONL holds the same ids and reads them back unchanged.
    assert main(["fuse", str(run), "-o", str(out), "--run-format", "mtrag"]) == 0
    back = fanfuse.read_run(str(out)).columns()
    assert (back[0][-2:], back[1][-2:]) == ([task_id, task_id], [docid, "d9"])


def test_an_empty_mtrag_task_id_is_refused_on_reading(tmp_path: Path) -> None:
    run = tmp_path / "run.jsonl"
    run.write_text(mtrag_line("ok", ["d0"]) + mtrag_line("", ["d1"]))
    with pytest.raises(fanfuse.FusionError, match=r"run\.jsonl:2: task_id is empty"):
        fanfuse.read_run(str(run))
    run.write_text(mtrag_line("ok", [""]))
    with pytest.raises(fanfuse.FusionError, match=r"run\.jsonl:1: contexts\[0\]\.document_id is empty"):
        fanfuse.read_run(str(run))


def test_columns_with_ids_a_trec_line_cannot_hold_name_the_row(tmp_path: Path) -> None:
    run = fanfuse.Run.from_columns(["q1", "q1", "a b"], ["d1", "d2", "d1"], [2.0, 1.0, 1.0])
    out = tmp_path / "run.trec"
    with pytest.raises(fanfuse.FusionError, match=r"<columns>:3: query id 'a b' contains whitespace"):
        run.write(str(out))
    assert not out.exists()
    run.write(str(out), format="mtrag")
    assert fanfuse.read_run(str(out)).qids() == ["q1", "a b"]


def test_empty_ids_are_refused_when_columns_become_a_run() -> None:
    with pytest.raises(fanfuse.FusionError, match=r"<columns>:2: query id is empty"):
        fanfuse.Run.from_columns(["q1", ""], ["d1", "d2"], [1.0, 1.0])
    with pytest.raises(fanfuse.FusionError, match=r"<columns>:1: document id is empty"):
        fanfuse.Run.from_columns(["q1"], [""], [1.0])


def test_a_run_without_a_line_to_write_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # An empty file is what the readers refuse ("the file is empty"): writing one would not read back.
    out = tmp_path / "out.trec"
    with pytest.raises(fanfuse.FusionError, match="nothing to write: the run has no queries"):
        fanfuse.Run.from_columns([], [], []).write(str(out), format="mtrag")
    run = tmp_path / "run.jsonl"
    run.write_text(mtrag_line("q1", []) + mtrag_line("q2", []))
    assert main(["fuse", str(run), "-o", str(out)]) == 2
    assert "nothing to write: none of its 2 queries has a hit" in capsys.readouterr().err
    with pytest.raises(fanfuse.FusionError, match="none of its 2 queries has a hit"):
        fanfuse.read_run(str(run)).write(str(out))
    assert not out.exists()
    assert main(["fuse", str(run), "-o", str(out), "--run-format", "mtrag"]) == 0
    assert fanfuse.read_run(str(out)).qids() == ["q1", "q2"]


def test_a_score_no_run_file_can_hold_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # Summed without normalisation, two scores of 1e308 overflow; written, inf came out as
    # 1.797693134862316e308, a number no reader accepts (and not the sum).
    runs = [tmp_path / "a.trec", tmp_path / "b.trec"]
    for run in runs:
        run.write_text("q Q0 d 1 1e308 t\n")
    out = tmp_path / "fused.trec"
    args = ["fuse", *map(str, runs), "-o", str(out), "--method", "combsum", "--norm", "none"]
    for fmt in ("trec", "mtrag"):
        assert main([*args, "--run-format", fmt]) == 2
        assert re.search("inf|finite|overflow", capsys.readouterr().err)
        assert not out.exists()


def test_trec_output_cannot_start_with_a_brace(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # A first line "{x Q0 ..." makes the readers take the file for MT-RAG JSONL.
    out = tmp_path / "out.trec"
    with pytest.raises(fanfuse.FusionError, match=r"<columns>:1: query id '\{x' would start the output"):
        fanfuse.Run.from_columns(["{x", "q"], ["d", "d"], [1.0, 1.0]).write(str(out))
    run = tmp_path / "run.jsonl"
    run.write_text(mtrag_line("{x", ["d"]) + mtrag_line("q", ["d"]))
    assert main(["fuse", str(run), "-o", str(out)]) == 2
    assert "would start the output with '{'" in capsys.readouterr().err
    assert not out.exists()
    # Anywhere but first, such an id is an ordinary TREC id.
    fanfuse.Run.from_columns(["q", "{x"], ["d", "d"], [1.0, 1.0]).write(str(out))
    assert fanfuse.read_run(str(out)).qids() == ["q", "{x"]
