"""Fusing, evaluating and tuning run files, on generated runs (tests/generated_runs.py): what the
tests on the real MT-RAG runs check, in a clean clone too, and with inputs the real files never
show (interleaved queries, contexts out of order, a query split over two records)."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import fanfuse
import pytest
from fanfuse.cli import main
from generated_runs import (
    Contexts,
    Hits,
    generated_qrels,
    generated_runs,
    ranked,
    write_beir_qrels,
    write_mtrag,
    write_trec,
)
from run_reports import FISHER, eval_row, expected_eval_row, fold_weighted_means, per_query

Fused = dict[str, list[tuple[str, float]]]


def by_query(run: fanfuse.Run) -> Fused:
    qids, docids, _, scores = run.columns()
    out: Fused = {}
    for q, d, s in zip(qids, docids, scores, strict=True):
        out.setdefault(q, []).append((d, s))
    return out


def kernel_fusion(runs: list[Hits], top_k: int | None = None, **options: Any) -> Fused:
    """Every query of the union fused by `fanfuse.rrf` from the generated lists (a run that lacks the
    query gives an empty list, so that weights stay aligned), as a fused run is written: in trec_eval's
    order (score descending, equal scores by docid descending), then cut to `top_k`."""
    union = sorted({q for run in runs for q in run})
    fused = {}
    for q in union:
        hits = sorted(fanfuse.rrf([ranked(run.get(q, [])) for run in runs], **options), reverse=True)
        hits.sort(key=lambda hit: hit[1], reverse=True)  # stable: equal scores stay by docid descending
        fused[q] = hits[:top_k]
    return fused


@pytest.mark.parametrize("interleaved", [True, False], ids=["interleaved", "grouped"])
def test_fuse_files_equals_fuse_runs_and_the_kernel(tmp_path: Path, interleaved: bool) -> None:
    rng = random.Random(11)
    runs = generated_runs(rng, runs=3, queries=60)
    paths = [
        write_trec(tmp_path / f"r{r}.trec", run, rng, interleaved=interleaved) for r, run in enumerate(runs)
    ]
    options: dict[str, Any] = {"k": 20.0, "weights": [1.0, 0.5, 2.0], "top_k": 10}
    expected = kernel_fusion(runs, **options)
    assert any(q not in run for run in runs for q in expected)  # the union is fused, not the intersection
    out = tmp_path / "fused.trec"
    summary = fanfuse.fuse_files(paths, str(out), **options)
    lines = sum(len(hits) for run in runs for hits in run.values())
    # Grouped inputs stream, although some runs lack some queries; interleaved ones are held.
    assert summary == {"queries": len(expected), "input_lines": lines, "buffered": interleaved}
    in_memory = fanfuse.fuse_runs([fanfuse.read_run(p) for p in paths], **options)
    assert by_query(in_memory) == expected
    assert by_query(fanfuse.read_run(str(out), rank_from="file")) == expected


def test_mtrag_contexts_pass_through_unchanged(tmp_path: Path) -> None:
    rng = random.Random(5)
    runs = generated_runs(rng, runs=2, queries=30)
    contexts = Contexts()
    paths = [
        write_mtrag(
            tmp_path / f"{name}.jsonl", run, rng, contexts, collection=f"index-{name}", interleaved=True
        )
        for name, run in zip(("lastturn", "rewrite"), runs, strict=True)
    ]
    assert sum(line.count('"task_id"') for p in paths for line in Path(p).read_text().splitlines()) > sum(
        len(run) for run in runs
    )  # some query is split over two records
    out = tmp_path / "fused.jsonl"
    fanfuse.fuse_files(paths, str(out), format="mtrag", top_k=None)
    expected = kernel_fusion(runs, top_k=None)
    lines = out.read_text(encoding="utf-8").splitlines()
    records = [json.loads(line) for line in lines]
    assert len(records) == len(expected)
    assert {
        r["task_id"]: [(c["document_id"], c["score"]) for c in r["contexts"]] for r in records
    } == expected
    assert {r["Collection"] for r in records} == {"index-lastturn"}  # the first input's
    for line, record in zip(lines, records, strict=True):
        for context in record["contexts"]:
            doc = context["document_id"]
            kept = [(key, value) for key, value in context.items() if key not in ("document_id", "score")]
            assert kept == contexts.parsed(doc)  # every other field, in its order
            assert all(raw in line for _, raw in contexts.raw[doc])  # and as written: escapes, exponents


def test_cli_fuse_then_eval_reports_the_paired_tests_of_the_fused_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rng = random.Random(3)
    runs = generated_runs(rng, runs=2, queries=50)
    paths = [
        write_trec(tmp_path / f"{n}.trec", run, rng, interleaved=True)
        for n, run in zip("ab", runs, strict=True)
    ]
    judgments = generated_qrels(rng, runs)
    qrels = write_beir_qrels(tmp_path / "dev.tsv", judgments)
    out = tmp_path / "fused.trec"
    assert main(["fuse", *paths, "-o", str(out), "--rrf-k", "60", "--weights", "1,1"]) == 0
    fused = kernel_fusion(runs, k=60.0, weights=[1.0, 1.0], top_k=1000)
    assert by_query(fanfuse.read_run(str(out), rank_from="file")) == fused
    capsys.readouterr()
    assert main(["eval", paths[1], str(out), "--qrels", qrels, "--json", *FISHER]) == 0
    report = json.loads(capsys.readouterr().out)
    assert [r["run"] for r in report["runs"]] == [paths[1], str(out)]
    assert report["baseline"] == paths[1] and {c["run"] for c in report["comparisons"]} == {str(out)}
    evaluated = per_query(str(out), qrels, "ndcg@10")
    assert set(evaluated) == set(fused) & set(judgments)
    assert len(set(evaluated) & set(per_query(paths[1], qrels, "ndcg@10"))) > 8  # 2^n > 200 flips: drawn
    assert eval_row(report, 1, "ndcg@10") == expected_eval_row(
        paths[1], str(out), qrels, "ndcg@10", iterations=200
    )


def test_tune_picks_the_better_run_and_the_fusion_that_keeps_its_order(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # The good run ranks 2-3 relevant documents (one below rank 1) in its top 6; the other run
    # retrieves none and lacks some queries. Weights (1, 0.5) keep the good run's top 11 above every
    # document of the other run, so that fusion scores exactly what the good run does; equal weights
    # interleave the two and push a relevant document down.
    rng = random.Random(9)
    good: Hits = {}
    bad: Hits = {}
    judgments: dict[str, dict[str, int]] = {}
    for n in range(30):
        q = f"conv{n:02d}<::>{n % 4 + 1}"
        good[q] = [(f"good-{n}-{i}", 20.0 - i) for i in range(15)]
        relevant = (
            [0, *rng.sample(range(1, 6), rng.randint(1, 2))]
            if rng.random() < 0.5
            else rng.sample(range(1, 6), 2)
        )
        judgments[q] = {f"good-{n}-{i}": rng.randint(1, 3) for i in relevant}
        if n % 5:
            bad[q] = [(f"bad-{n}-{i}", 20.0 - i) for i in range(15)]
    paths = [
        write_trec(tmp_path / f"{name}.trec", run, rng, interleaved=True)
        for name, run in (("good", good), ("bad", bad))
    ]
    qrels = write_beir_qrels(tmp_path / "dev.tsv", judgments)
    grid = ["--ks", "10,60", "--weight-levels", "0.5,1", "--folds", "3"]
    assert main(["tune", *paths, "--qrels", qrels, *grid, "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    _, values = fanfuse.evaluate(fanfuse.read_run(paths[0]), fanfuse.read_qrels(qrels), metrics=["ndcg@10"])
    good_mean = sum(values["ndcg@10"]) / len(values["ndcg@10"])
    assert report["queries"] == 30 and report["metric"] == "ndcg@10"
    assert [(f["fold"], f["fused"], f["single_run"]) for f in report["folds"]] == [
        (fold, {"method": "rrf", "params": {"k": 10.0, "weights": [1.0, 0.5]}}, 0) for fold in range(3)
    ]
    assert all(f["fused_heldout"] == f["single_heldout"] for f in report["folds"])
    assert fold_weighted_means(report) == pytest.approx((good_mean, good_mean), rel=1e-12)
    assert report["single_heldout"] == pytest.approx(good_mean, rel=1e-12)
    assert report["fused_heldout"] == report["single_heldout"]
    assert report["p_value"] == 1.0  # every held-out difference is zero
    assert 0.3 < good_mean < 1.0


def test_fuse_files_reports_progress_as_counters_and_stops_when_the_callback_raises(tmp_path: Path) -> None:
    lines = "".join(f"q{q} Q0 d{d} {d + 1} {100 - d} r\n" for q in range(3000) for d in range(20))
    inputs = []
    for r in range(2):
        path = tmp_path / f"run{r}.trec"
        path.write_text(lines)
        inputs.append(str(path))
    total = sum(Path(p).stat().st_size for p in inputs)
    seen: list[tuple[int, int, int]] = []
    summary = fanfuse.fuse_files(
        inputs, str(tmp_path / "out.trec"), progress=lambda *counts: seen.append(counts)
    )
    # The last report comes after the run: every byte read, every query fused.
    assert seen[-1] == (total, total, summary["queries"]) == (total, total, 3000)
    assert all(t == total and 0 <= r <= total for r, t, _ in seen)
    assert [q for _, _, q in seen] == sorted(q for _, _, q in seen)

    class Stop(Exception):
        pass

    def stop(*counts: int) -> None:
        raise Stop

    (tmp_path / "kept.trec").write_text("old\n")
    with pytest.raises(Stop):
        fanfuse.fuse_files(inputs, str(tmp_path / "kept.trec"), progress=stop)
    assert (tmp_path / "kept.trec").read_text() == "old\n"
    with pytest.raises(TypeError, match="progress must be None or a callable"):
        fanfuse.fuse_files(inputs, str(tmp_path / "out.trec"), progress=True)
