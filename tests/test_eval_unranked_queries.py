"""A run that ranks nothing for some judged queries is told of on every engine of `fanfuse eval`: its
means leave those queries out (trec_eval's rule), where ranx and `trec_eval -c` count each as 0, so
the same run scores differently from a TREC file (which cannot hold an empty ranking) and from
MT-RAG's JSONL (which can). On generated runs and on the MT-RAG cloud BM25 run in both formats."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fanfuse.cli import build_parser, command_parsers, main

QRELS = "".join(f"q{q} 0 d{q} 1\n" for q in range(4))
TREC = "".join(f"q{q} Q0 d{q} 1 1.0 t\n" for q in range(3))  # q3 ranked nothing: no line can say so
JSONL = "".join(
    json.dumps({"task_id": f"q{q}", "contexts": [{"document_id": f"d{q}", "score": 1.0}] if q < 3 else []})
    + "\n"
    for q in range(4)
)
ENGINES = command_parsers(build_parser("eval"))["eval"]._option_string_actions["--engine"].choices
assert ENGINES is not None


@pytest.mark.parametrize("engine", sorted(ENGINES))
def test_a_run_without_some_judged_queries_is_told_of(
    engine: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "qrels.txt").write_text(QRELS)
    (tmp_path / "run.trec").write_text(TREC)
    (tmp_path / "run.jsonl").write_text(JSONL)
    argv = [
        "eval",
        str(tmp_path / "run.trec"),
        str(tmp_path / "run.jsonl"),
        "--qrels",
        str(tmp_path / "qrels.txt"),
    ]
    assert main([*argv, "--metrics", "recall@10", "--format", "csv", "--engine", engine]) == 0
    out, err = capsys.readouterr()
    assert err.splitlines() == [
        f"fanfuse eval: warning: {tmp_path / 'run.trec'} ranks nothing for 1 of the 4 judged queries: its "
        "means are over the 3 it ranks (as trec_eval's); ranx and trec_eval -c count each missing query as 0"
    ]
    means = [line.split(",")[2] for line in out.splitlines()[1:]]
    assert means == ["1.0", "0.75"]  # the TREC run's mean over its 3 queries, the JSONL run's over 4


def test_the_mtrag_run_in_both_formats(mtrag_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    trec = mtrag_dir / "runs_trec" / "bm25_cloud_lastturn.trec"
    jsonl = mtrag_dir / "runs" / "bm25_cloud_lastturn.jsonl"
    qrels = mtrag_dir / "qrels" / "cloud" / "dev.tsv"
    assert main(["eval", str(trec), str(jsonl), "--qrels", str(qrels), "--metrics", "ndcg@10"]) == 0
    err = capsys.readouterr().err
    assert err.startswith(f"fanfuse eval: warning: {trec} ranks nothing for ") and str(jsonl) not in err, err
