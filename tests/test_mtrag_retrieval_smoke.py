"""benches/mtrag_retrieval.py and benches/mtrag_variants.py: a few real MT-RAG queries (skipped
without the data), and the same runs on a generated folder of the same layout."""

from __future__ import annotations

import gzip
import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType

import pytest

BENCHES = Path(__file__).resolve().parents[1] / "benches"
STRATEGIES = ["single", "heuristic", "feedback", "heuristic+feedback"]
# Three topics; each question shares words with its topic's documents only.
TOPICS = {
    "volcano": [
        "volcano eruption magma lava ash",
        "magma chamber under a volcano",
        "lava flows from eruption",
    ],
    "tide": ["ocean tide moon gravity", "the moon pulls the ocean tide", "harbour tide tables for ships"],
    "bread": ["bread dough yeast oven", "yeast makes bread dough rise", "bake bread in a hot oven"],
}
QUESTIONS = {
    "volcano": ("what comes out of a volcano", "what comes out of a volcano during an eruption"),
    "tide": ("why does it rise", "why does the ocean tide rise with the moon"),
    "bread": ("and the yeast?", "what does yeast do to bread dough"),
}


def load(name: str) -> ModuleType:
    sys.path.insert(0, str(BENCHES))  # the scripts import their sibling, as when run from benches/
    try:
        spec = importlib.util.spec_from_file_location(name, BENCHES / f"{name}.py")
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module  # dataclasses look their module up there
        spec.loader.exec_module(module)
        return module
    finally:
        sys.path.remove(str(BENCHES))


def table(out: str) -> list[list[str]]:
    lines = [line for line in out.splitlines() if line.startswith("| ") and not line.startswith("| domain")]
    return [[cell.strip() for cell in line.split("|")[1:-1]] for line in lines]


@pytest.fixture()
def generated(tmp_path: Path) -> Path:
    """A folder in MT-RAG's layout: passages, last-turn and rewritten queries, qrels (domain "gen")."""
    (tmp_path / "passages").mkdir()
    (tmp_path / "queries" / "gen").mkdir(parents=True)
    (tmp_path / "qrels" / "gen").mkdir(parents=True)
    with gzip.open(tmp_path / "passages" / "gen_pool.jsonl.gz", "wt", encoding="utf-8") as pool:
        for topic, texts in TOPICS.items():
            for i, text in enumerate(texts):
                pool.write(json.dumps({"document_id": f"{topic}-{i}", "title": "", "text": text}) + "\n")
    for position, query_set in enumerate(("lastturn", "rewrite")):
        lines = [
            json.dumps({"_id": f"{topic}<::>1", "text": f"|user|: {pair[position]}"})
            for topic, pair in QUESTIONS.items()
        ]
        (tmp_path / "queries" / "gen" / f"gen_{query_set}.jsonl").write_text("\n".join(lines) + "\n")
    qrels = ["query-id\tcorpus-id\tscore"]
    qrels += [f"{topic}<::>1\t{topic}-{i}\t1" for topic, texts in TOPICS.items() for i in range(len(texts))]
    (tmp_path / "qrels" / "gen" / "dev.tsv").write_text("\n".join(qrels) + "\n")
    return tmp_path


def check_retrieval_table(rows: list[list[str]], domain: str, queries: int) -> None:
    assert [(r[0], r[1], r[2], r[3]) for r in rows] == [
        (domain, query_set, "BM25", strategy)
        for query_set in ("lastturn", "rewrite")
        for strategy in STRATEGIES
    ]
    for row in rows:
        ndcg, recall = float(row[5]), float(row[8])
        assert int(row[4]) == queries and 0.0 <= ndcg <= 1.0 and 0.0 <= recall <= 1.0
        assert row[7] == "" if row[3] == "single" else 0.0 <= float(row[7]) <= 1.0
        assert float(row[6]) == pytest.approx(
            ndcg - float(next(r for r in rows if r[1] == row[1])[5]), abs=2e-4
        )


def test_retrieval_table_on_generated_data(generated: Path, capsys: pytest.CaptureFixture[str]) -> None:
    script = load("mtrag_retrieval")
    assert script.main(["--data", str(generated), "--domains", "gen", "--iterations", "100"]) == 0
    rows = table(capsys.readouterr().out)
    check_retrieval_table(rows, "gen", 3)
    rewrite_single = next(r for r in rows if r[1] == "rewrite" and r[3] == "single")
    assert float(rewrite_single[5]) > 0.9  # each rewrite names its topic: BM25 finds it


def test_dense_rows_join_the_table(generated: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("sklearn")
    script = load("mtrag_retrieval")
    args = ["--data", str(generated), "--domains", "gen", "--query-sets", "rewrite", "--dense", "tfidf"]
    assert script.main([*args, "--dims", "4", "--iterations", "100"]) == 0
    rows = table(capsys.readouterr().out)
    assert [(r[2], r[3]) for r in rows][-3:] == [
        ("tfidf", "single"),
        ("BM25+tfidf", "single"),
        ("BM25+tfidf", "heuristic+feedback"),
    ]


def test_variant_kinds_on_generated_data(generated: Path, capsys: pytest.CaptureFixture[str]) -> None:
    script = load("mtrag_variants")
    assert script.main(["--data", str(generated), "--domains", "gen"]) == 0
    rows = {(r[1], r[2]): r for r in table(capsys.readouterr().out)}
    assert {kind for _, kind in rows} == {
        "original", "content words", "OR-joined", "full phrase", "bigram phrases", "title boost",
        "longest phrase", "feedback",
    }  # fmt: skip
    # "what comes out of a volcano" as one phrase is in no passage: an empty list.
    assert int(rows[("lastturn", "full phrase")][4]) >= 1


def test_feedback_grid_on_generated_data(generated: Path, capsys: pytest.CaptureFixture[str]) -> None:
    script = load("mtrag_feedback_grid")
    assert script.main(["--data", str(generated), "--domains", "gen"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("148 settings; ")
    rows = [line for line in out.splitlines() if line.startswith(("| 5 |", "| 10 |", "| 20 |"))]
    assert len(rows) == 18  # heuristic+feedback at the chosen list weight, every feedback setting


def test_missing_data_is_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert load("mtrag_retrieval").main(["--data", str(tmp_path / "nowhere")]) == 2
    assert "MT-RAG data not found" in capsys.readouterr().err


def test_retrieval_table_on_real_queries(mtrag_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    script = load("mtrag_retrieval")
    args = ["--data", str(mtrag_dir), "--domains", "clapnq", "--limit", "5", "--iterations", "100"]
    assert script.main(args) == 0
    check_retrieval_table(table(capsys.readouterr().out), "clapnq", 5)
