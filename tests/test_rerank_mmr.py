"""The maximal-marginal-relevance rerank over the index's stored vectors: the order it chooses (on
vectors set by hand), its setting checked by name, and every entry point that takes it (`open_index`,
`fanfuse search --rerank mmr`, the service's `rerank` field) giving the same search over a real index
with neural vectors; without it nothing changes."""

from __future__ import annotations

import inspect
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest
from fanfuse import OutOfRange
from fanfuse.cli import build_parser, main
from fanfuse.cli.render import as_json
from fanfuse.errors import InvalidSetting
from fanfuse.index_retriever import open_index
from fanfuse.multiquery.diagnostics import FusedHit
from fanfuse.multiquery.mmr import RERANKS, MaximalMarginalRelevance
from fanfuse.retrievers.dense import DenseRetriever
from test_cli_search_options import QUERY, without_timings


def no_queries(texts: Sequence[str]) -> npt.NDArray[np.float32]:
    raise AssertionError("the rerank embeds no query")


# "a" and "b" are the same passage, "c" another; "d" has no stored vector.
VECTORS = DenseRetriever(no_queries, ["a", "b", "c"], [[1.0, 0.0], [1.0, 0.0], [0.0, 1.0]])
HITS = [FusedHit("a", 1.0), FusedHit("b", 0.9), FusedHit("c", 0.8), FusedHit("d", 0.1)]


def order(reranker: MaximalMarginalRelevance, hits: list[FusedHit] = HITS) -> list[str]:
    scores = reranker(QUERY, hits)
    return [hit.id for _, hit in sorted(zip(scores, hits, strict=True), key=lambda pair: -pair[0])]


def test_each_hit_is_chosen_for_its_relevance_less_its_likeness_to_those_before_it() -> None:
    # Relevance is the fused score scaled over the window: a 1, b 0.889, c 0.778, d 0. At 0.5, after
    # "a": b is worth 0.5 * 0.889 - 0.5 * 1 < 0, c 0.5 * 0.778, d 0; then d (0) before b (< 0).
    assert order(MaximalMarginalRelevance(VECTORS, 0.5)) == ["a", "c", "d", "b"]
    assert order(MaximalMarginalRelevance(VECTORS, 1.0)) == ["a", "b", "c", "d"]  # the fused order
    assert order(MaximalMarginalRelevance(VECTORS, 0.9)) == ["a", "b", "c", "d"]  # the copy costs 0.1
    # Scores are the positions counted down; equal fused scores keep the fused order.
    assert MaximalMarginalRelevance(VECTORS, 0.5)(QUERY, HITS) == [4.0, 1.0, 3.0, 2.0]
    ties = [FusedHit(i, 1.0) for i in "cab"]
    assert order(MaximalMarginalRelevance(VECTORS, 0.5), ties) == ["c", "a", "b"]


def test_bad_settings_are_refused_by_name() -> None:
    for bad in (1.5, -0.1, float("nan")):
        with pytest.raises(OutOfRange, match="mmr_lambda must be"):
            MaximalMarginalRelevance(VECTORS, bad)
    with pytest.raises(TypeError, match="mmr_lambda must be"):
        MaximalMarginalRelevance(VECTORS, "0.5")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="vectors must be a DenseRetriever"):
        MaximalMarginalRelevance(object())  # type: ignore[arg-type]


def library(index: Path, **options: Any) -> Any:
    with open_index(index, **options) as retriever:
        return without_timings(json.loads(as_json(retriever.search(QUERY))))


def cli(index: Path, capsys: pytest.CaptureFixture[str], *flags: str) -> Any:
    assert main(["search", "--index", str(index), QUERY, "--json", *flags]) == 0
    return without_timings(json.loads(capsys.readouterr().out))


def cli_error(index: Path, capsys: pytest.CaptureFixture[str], *flags: str) -> str:
    try:
        code = main(["search", "--index", str(index), QUERY, *flags])
    except SystemExit as exit:  # refused by the parser
        code = exit.code  # type: ignore[assignment]
    assert code == 2
    captured = capsys.readouterr()
    lines = captured.err.strip().splitlines()
    assert captured.out == "" and len(lines) == 1, captured.err
    return lines[0]


def test_every_entry_point_reranks_alike(hybrid_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    plain = library(hybrid_dir)
    reranked = library(hybrid_dir, rerank="mmr", mmr_lambda=0.5)
    # The documents hold two copies of one passage ("zeta", "alpha"): fused, they come first
    # together; reranked, the second copy gives its place to another passage.
    assert {hit["id"] for hit in plain["hits"][:2]} == {"alpha", "zeta"}
    assert len({hit["id"] for hit in reranked["hits"][:2]} & {"alpha", "zeta"}) == 1
    assert sorted(h["id"] for h in reranked["hits"]) == sorted(h["id"] for h in plain["hits"])
    assert all(hit["rerank_score"] is not None for hit in reranked["hits"])
    assert all(hit["rerank_score"] is None for hit in plain["hits"])
    assert cli(hybrid_dir, capsys, "--rerank", "mmr", "--mmr-lambda", "0.5") == reranked
    assert cli(hybrid_dir, capsys) == plain
    assert library(hybrid_dir, rerank="mmr") == cli(hybrid_dir, capsys, "--rerank", "mmr")
    pytest.importorskip("fastapi")
    from fanfuse.service import app_for_index
    from fastapi.testclient import TestClient

    with TestClient(app_for_index(hybrid_dir)) as client:
        asked = client.post("/search", json={"query": QUERY, "rerank": "mmr", "mmr_lambda": 0.5})
        alone = client.post("/search", json={"query": QUERY})
    for response, expected in ((asked, reranked), (alone, plain)):
        assert response.status_code == 200, response.text
        assert without_timings(response.json()) == expected


def test_a_rerank_without_vectors_or_a_setting_without_the_rerank_is_refused_by_name(
    hybrid_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(InvalidSetting, match="rerank mmr reads the document vectors"):
        open_index(hybrid_dir, dense=False, rerank="mmr")
    with pytest.raises(InvalidSetting, match="mmr_lambda is a setting of the mmr reranker"):
        open_index(hybrid_dir, mmr_lambda=0.5)
    with pytest.raises(InvalidSetting, match="rerank must be one of mmr"):
        open_index(hybrid_dir, rerank="diverse")
    with pytest.raises(InvalidSetting, match="give one of them"):
        open_index(hybrid_dir, rerank="mmr", reranker=lambda query, hits: [0.0] * len(hits))
    assert cli_error(hybrid_dir, capsys, "--rerank", "mmr", "--no-dense").startswith(
        "fanfuse search: error: --rerank mmr reads the document vectors"
    )
    assert "--mmr-lambda goes with --rerank mmr" in cli_error(hybrid_dir, capsys, "--mmr-lambda", "0.5")
    assert "--mmr-lambda" in cli_error(hybrid_dir, capsys, "--rerank", "mmr", "--mmr-lambda", "2")
    assert "--rerank" in cli_error(hybrid_dir, capsys, "--rerank", "diverse")
    pytest.importorskip("fastapi")
    from fanfuse.service import app_for_index
    from fastapi.testclient import TestClient

    with TestClient(app_for_index(hybrid_dir)) as client:
        for body, field in (
            ({"rerank": "mmr", "dense": False}, "rerank"),
            ({"mmr_lambda": 0.5}, "mmr_lambda"),
            ({"rerank": "diverse"}, "rerank"),
            ({"rerank": "mmr", "mmr_lambda": 2}, "mmr_lambda"),
        ):
            response = client.post("/search", json={"query": QUERY, **body})
            assert response.status_code == 422, (body, response.text)
            assert [e["loc"][:2] for e in response.json()["detail"]] == [["body", field]], body


def test_every_entry_point_takes_the_rerank() -> None:
    """A guard: `open_index`, `fanfuse search` and the service's request all take the rerank and its
    setting, and name the same rerankers."""
    assert {"rerank", "mmr_lambda"} <= set(inspect.signature(open_index).parameters)
    commands = next(a for a in build_parser()._actions if a.dest == "command").choices
    flags = {a.dest: a for a in commands["search"]._actions}
    assert {"rerank", "mmr_lambda"} <= set(flags) and tuple(flags["rerank"].choices) == RERANKS
    pytest.importorskip("fastapi")
    from fanfuse.service.schema import SearchRequest

    fields = SearchRequest.model_json_schema()["properties"]
    assert fields["rerank"]["enum"] == [*RERANKS, None] and "mmr_lambda" in fields
