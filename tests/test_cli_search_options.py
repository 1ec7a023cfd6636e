"""`fanfuse search`'s fusion and LLM flags: each reaches the retriever (the output equals
`fanfuse.open_index(DIR, option=...)`'s), and a bad value exits 2 with one line naming the flag."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import fanfuse
import pytest
from fanfuse.cli import main
from fanfuse.cli.render import as_json
from fanfuse.multiquery.expand.llm import STRATEGIES
from fanfuse.retrievers.tantivy_index import TantivyRetriever
from llm_server import ScriptedChatServer, llm_server

__all__ = ["llm_server"]  # the fixture, imported for pytest

# "zeta" and "alpha" have the same text, so BM25 gives them equal scores, and a score method ties them.
DOCUMENTS = [
    {"id": "zeta", "text": "Owls hunt mice at night in the forest."},
    {"id": "alpha", "text": "Owls hunt mice at night in the forest."},
    {"id": "hawk", "text": "Hawks hunt mice by day over open fields."},
    {"id": "bat", "text": "Bats fly at night and hunt insects."},
    {"id": "mole", "text": "Moles dig tunnels and eat worms."},
]
QUERY = "what hunts mice at night"
TIMINGS = {"started_ms", "latency_ms", "elapsed_ms", "fusion_ms", "rerank_ms", "total_ms"}


def without_timings(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: without_timings(v) for k, v in value.items() if k not in TIMINGS}
    if isinstance(value, list):
        return [without_timings(v) for v in value]
    return value


@pytest.fixture()
def index_dir(tmp_path: Path) -> Path:
    TantivyRetriever.build(DOCUMENTS, tmp_path / "idx")
    return tmp_path / "idx"


def cli_json(index_dir: Path, capsys: pytest.CaptureFixture[str], *flags: str) -> Any:
    assert main(["search", "--index", str(index_dir), QUERY, "--json", *flags]) == 0
    return without_timings(json.loads(capsys.readouterr().out))


def library_json(index_dir: Path, **options: Any) -> Any:
    with fanfuse.open_index(index_dir, **options) as retriever:
        return without_timings(json.loads(as_json(retriever.search(QUERY))))


@pytest.mark.parametrize(
    ("flags", "options"),
    [
        (["--method", "combsum"], {"method": "combsum"}),
        (["--method", "combsum", "--norm", "zmuv"], {"method": "combsum", "norm": "zmuv"}),
        (["--method", "bordafuse"], {"method": "bordafuse"}),
        (["--rrf-k", "2"], {"rrf_k": 2.0}),
        (["--method", "combsum", "--tie-break", "id"], {"method": "combsum", "tie_break": "id"}),
    ],
)
def test_fusion_flags_reach_the_retriever(
    index_dir: Path, capsys: pytest.CaptureFixture[str], flags: list[str], options: dict[str, Any]
) -> None:
    searched = cli_json(index_dir, capsys, *flags)
    assert searched == library_json(index_dir, **options)
    assert searched != cli_json(index_dir, capsys, *flags[:-2])  # the last flag changes the result


def test_tie_break_orders_the_equal_scores_of_a_score_method(
    index_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    def owls(*flags: str) -> list[str]:
        hits = cli_json(index_dir, capsys, "--method", "combsum", "--expander", "none", *flags)["hits"]
        return [h["id"] for h in hits if h["id"] in ("zeta", "alpha")]

    assert owls("--tie-break", "id") == ["alpha", "zeta"]
    ranked = owls()  # by rank: the one BM25 listed first
    bm25 = [h.id for h in TantivyRetriever(index_dir).search(QUERY, 5) if h.id in ("zeta", "alpha")]
    assert ranked == bm25


def test_a_duplicate_policy_never_changed_a_search_of_the_index(
    index_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Each id is in the index once, so no branch lists one twice: every policy fuses alike (which is
    why `fanfuse search` has no `--duplicates`)."""
    results = {policy: library_json(index_dir, duplicates=policy) for policy in ("first", "max", "sum")}
    assert results["max"] == results["first"] == results["sum"]
    with pytest.raises(SystemExit) as stop:
        main(["search", "--index", str(index_dir), QUERY, "--duplicates", "sum"])
    assert stop.value.code == 2
    assert "--duplicates is removed: an index holds each id once" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--method", "nope"], "--method must be one of rrf, isr, log_isr,"),
        (["--method", "combsum", "--norm", "nope"], "--norm must be one of none, min-max,"),
        (["--norm", "zmuv"], "--norm goes with --method combsum"),
        (["--tie-break", "best"], "--tie-break must be 'rank' or 'id' (got 'best')"),
        (["--strategy", "entity"], "--strategy goes with --expander llm"),
        (["--instructions", "About owls."], "--instructions goes with --expander llm"),
        (["--llm-model", "m"], "--llm-model goes with --expander llm"),
        (
            ["--expander", "llm", "--llm-model", "m", "--temperature", "nan"],
            "--temperature: must be a number in",
        ),
        (["--expander", "llm", "--llm-base-url", "ftp://x/v1", "--llm-model", "m"], "--llm-base-url (or"),
    ],
)
def test_bad_values_exit_2_naming_the_flag(
    index_dir: Path, capsys: pytest.CaptureFixture[str], flags: list[str], message: str
) -> None:
    try:
        code = main(["search", "--index", str(index_dir), QUERY, *flags])
    except SystemExit as exit:  # refused by the flag's own type, as argparse refuses
        code = exit.code
    assert code == 2
    err = capsys.readouterr().err
    assert err.startswith("fanfuse search: error: ") and message in err
    assert len(err.strip().splitlines()) == 1


def test_strategy_and_instructions_reach_the_model(
    index_dir: Path, llm_server: ScriptedChatServer, capsys: pytest.CaptureFixture[str]
) -> None:
    llm_server.answer(json.dumps({"queries": ["owl hunting", "nocturnal predators"]}))
    flags = ["--expander", "llm", "--llm-base-url", llm_server.base_url, "--llm-model", "scripted"]
    flags += ["--strategy", "entity", "--instructions", "Queries are about animals.", "--max-variants", "3"]
    result = cli_json(index_dir, capsys, *flags)
    assert [v["source"] for v in result["diagnostics"]["variants"]] == ["original", "llm", "llm"]
    prompt = llm_server.requests[0].body["messages"][0]["content"]
    assert STRATEGIES["entity"].ask.format(n=2) in prompt
    assert "Queries are about animals." in prompt
