"""benches/mtrag_composed.py on a generated folder in MT-RAG's layout (the conversations of
test_mtrag_conversation_smoke), with the default neural encoder (skipped without fanfuse[embed])."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from test_mtrag_conversation_smoke import conversations  # noqa: F401  (the fixture)
from test_mtrag_retrieval_smoke import bench_args, load, table
from test_open_index import needs_embed


def test_the_composed_tables_on_generated_data(
    conversations: Path,  # noqa: F811
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    needs_embed()
    script = load("mtrag_composed")
    assert script.main(bench_args(conversations, tmp_path, "--domains", "gen")) == 0
    rows = table(capsys.readouterr().out)
    quality = [r for r in rows if len(r) == 8]
    assert [(r[2], float(r[3])) for r in quality] == [
        (routing, alpha) for routing in script.ROUTINGS for alpha in script.ALPHAS
    ]
    for row in quality:
        default, composed, delta = (float(v) for v in row[4:7])
        assert all(0 <= v <= 1 for v in (default, composed))
        assert delta == pytest.approx(composed - default, abs=2e-4)  # each printed to 4 places
        assert 0 <= float(row[7]) <= 1
    (cost,) = [r for r in rows if len(r) == 9]
    assert cost[0] == "gen" and all(float(v) > 0 for v in cost[2:])


def test_the_composed_vector_is_the_question_moved_toward_the_earlier_turns() -> None:
    script = load("mtrag_composed")
    table = {"q": [1.0, 0.0, 0.0], "t1": [0.0, 2.0, 0.0], "t2": [0.0, 0.0, 3.0], "t1 q": [5.0, 5.0, 0.0]}
    asked: list[list[str]] = []

    def embed(texts: list[str]) -> np.ndarray:
        asked.append(list(texts))
        return np.array([table[t] for t in texts], dtype=np.float32)

    both = script.ComposedQueries(embed, 1.0, "both")
    both.ask("q", ["t1", "t2"])
    rows = both(["q", "q topic", "t1 q"])
    topic = np.array([0.0, 1.0, 1.0]) / np.sqrt(2)
    expected = (np.array([1.0, 0.0, 0.0]) + topic) / np.linalg.norm(np.array([1.0, 0.0, 0.0]) + topic)
    np.testing.assert_allclose(rows, [[1, 0, 0], expected, expected], atol=1e-6)
    assert asked == [["q", "t1", "t2"]]  # one encoder call, no history text in it

    kept = script.ComposedQueries(embed, 1.0, "keep-joined")
    kept.ask("q", ["t1"])
    rows = kept(["q", "q topic", "t1 q"])
    np.testing.assert_allclose(rows[2], np.array([1.0, 1.0, 0.0]) / np.sqrt(2), atol=1e-6)
    assert asked[-1] == ["q", "t1 q", "t1"] and kept.embedded_as_text == 1
