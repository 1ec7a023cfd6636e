"""Smoke run of the scale benchmark at a tiny size: the fanfuse and naive fusers agree on the output."""

from __future__ import annotations

import importlib.util
from pathlib import Path

_spec = importlib.util.spec_from_file_location("scale_fuse", Path(__file__).with_name("scale_fuse.py"))
assert _spec and _spec.loader
scale_fuse = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(scale_fuse)


def parse(path: Path) -> list[tuple[str, str, int, float]]:
    rows = []
    for line in path.read_text().splitlines():
        qid, _, docid, rank, score, _ = line.split()
        rows.append((qid, docid, int(rank), float(score)))
    return rows


def test_fanfuse_and_naive_fuser_agree_on_tiny_input(tmp_path: Path) -> None:
    inputs = scale_fuse.generate(tmp_path, 30)
    engines = (("fanfuse", scale_fuse.FANFUSE, scale_fuse.FANFUSE_SETUP), ("naive", scale_fuse.NAIVE, ""))
    for name, body, setup in engines:
        measured = scale_fuse.run_engine(body, inputs, str(tmp_path / f"{name}.out"), setup)
        assert measured["seconds"] > 0 and measured["process_cpu"] > 0 and measured["rss_mb"] > 0
    fused, naive = parse(tmp_path / "fanfuse.out"), parse(tmp_path / "naive.out")
    assert len(fused) == 30 * 100
    assert fused == naive
