"""benches/mtrag_routing.py on a generated folder in MT-RAG's layout (the conversations of
test_mtrag_conversation_smoke), with the default neural encoder (skipped without fanfuse[embed])."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_mtrag_conversation_smoke import conversations  # noqa: F401  (the fixture)
from test_mtrag_retrieval_smoke import bench_args, load, table
from test_open_index import needs_embed


def test_the_routing_table_on_generated_data(
    conversations: Path,  # noqa: F811
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    needs_embed()
    script = load("mtrag_routing")
    assert script.main(bench_args(conversations, tmp_path, "--domains", "gen")) == 0
    rows = table(capsys.readouterr().out)
    assert [(r[0], r[1]) for r in rows] == [("gen", "last turn"), ("gen", "+ history"), ("gen", "rewrite")]
    for row in rows:
        assert int(row[2]) == 3
        single, every, default = (float(v) for v in row[3:6])
        assert all(0 <= v <= 1 for v in (single, every, default))
        assert float(row[6]) == pytest.approx(default - every, abs=2e-4)  # each printed to 4 places
        assert 0 <= float(row[7]) <= 1
        assert all(float(v) > 0 for v in row[8:11]) and row[11].endswith("x")
