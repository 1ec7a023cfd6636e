"""Smoke runs of benches/mtrag_retrieval.py: on a generated folder laid out like MT-RAG's, where the
right answers are known, and on a few real MT-RAG queries (skips without the data)."""

from __future__ import annotations

import importlib.util
import math
from pathlib import Path
from types import ModuleType

import pytest
from generated_runs import write_mtrag_folder

pytest.importorskip("pytrec_eval")
pytest.importorskip("sklearn")

SCRIPT = Path(__file__).resolve().parents[1] / "benches" / "mtrag_retrieval.py"
STRATEGIES = ("single", "heuristic", "+rewrite", "+rewrite x2", "rewrite")
# Made-up words: each pair names one topic and appears in its two relevant passages only.
TOPICS = [
    ("quorvex", "blanthor"),
    ("zendrik", "plovast"),
    ("marquith", "dellorn"),
    ("tavrenko", "scuplid"),
    ("fenwarth", "glimzor"),
    ("yostrel", "pakkarin"),
    ("wumblet", "droskal"),
    ("ixtharo", "vemmick"),
]
FILLER = [f"{a}{b}" for a in ("bal", "cor", "dun", "fel", "gar") for b in ("ith", "oon", "ask", "emb")]


def load_script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("mtrag_retrieval", SCRIPT)
    assert spec is not None and spec.loader is not None
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    return script


def table_rows(out: str) -> list[list[str]]:
    return [[cell.strip() for cell in line.split("|")[1:-1]] for line in out.splitlines()[2:]]


def test_script_on_a_generated_folder_finds_what_is_known_to_be_there(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = write_mtrag_folder(tmp_path / "mtrag", "toy", TOPICS, FILLER)
    code = load_script().main(["--data", str(data), "--domains", "toy", "--limit", "5", "--dims", "8"])
    assert code == 0
    rows = table_rows(capsys.readouterr().out)
    assert [(r[0], r[1], r[2], r[3]) for r in rows] == [
        ("toy", retrievers, strategy, "5") for retrievers in ("BM25", "BM25+dense") for strategy in STRATEGIES
    ]
    # Only the two relevant passages hold a query's words, so each BM25 list is exactly those two. With
    # the dense side, a passage BM25 did not find gets at most w / (60 + 1) per variant, and beats a
    # relevant one (at least w / (60 + 2) per variant) only by being first in some dense list: at most
    # one such passage per variant (4 variants at most) can rank above both relevant ones.
    worst_dense_ndcg = (1 / math.log2(4 + 2) + 1 / math.log2(4 + 3)) / (1 + 1 / math.log2(3))
    for row in rows:
        assert float(row[4]) == 1.0, row  # recall@10: both found, by every strategy
        assert float(row[5]) == 1.0 if row[1] == "BM25" else worst_dense_ndcg <= float(row[5]) <= 1.0, row


def test_script_evaluates_every_strategy(mtrag_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = load_script().main(
        ["--data", str(mtrag_dir), "--domains", "clapnq", "--limit", "5", "--dims", "16"]
    )
    assert code == 0
    rows = table_rows(capsys.readouterr().out)
    assert [(r[1], r[2]) for r in rows] == [
        (retrievers, strategy) for retrievers in ("BM25", "BM25+dense") for strategy in STRATEGIES
    ]
    for row in rows:
        recall, ndcg = float(row[4]), float(row[5])
        assert int(row[3]) == 5 and 0.0 <= recall <= 1.0 and 0.0 <= ndcg <= 1.0
