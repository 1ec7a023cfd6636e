"""Smoke run of benches/mtrag_retrieval.py on a few real MT-RAG queries (skips without the data)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

pytest.importorskip("pytrec_eval")
pytest.importorskip("sklearn")

SCRIPT = Path(__file__).resolve().parents[1] / "benches" / "mtrag_retrieval.py"


def test_script_evaluates_every_strategy(mtrag_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    spec = importlib.util.spec_from_file_location("mtrag_retrieval", SCRIPT)
    assert spec is not None and spec.loader is not None
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    code = script.main(["--data", str(mtrag_dir), "--domains", "clapnq", "--limit", "5", "--dims", "16"])
    assert code == 0
    rows = [line.split("|")[1:-1] for line in capsys.readouterr().out.splitlines()[2:]]
    assert [(r[1].strip(), r[2].strip()) for r in rows] == [
        (retrievers, strategy)
        for retrievers in ("BM25", "BM25+dense")
        for strategy in ("single", "heuristic", "+rewrite", "+rewrite x2", "rewrite")
    ]
    for row in rows:
        recall, ndcg = float(row[4]), float(row[5])
        assert int(row[3]) == 5 and 0.0 <= recall <= 1.0 and 0.0 <= ndcg <= 1.0
