"""pytest-benchmark: evaluating every metric of a run of 10k queries, fanfuse against pytrec_eval and ranx
in one process, each on the metrics the other computes. Inputs are built outside the timing (fanfuse's
Run and Qrels, pytrec_eval's evaluator, ranx's Run and Qrels); the timed call is the evaluation alone.

`make bench` times them (10k queries x 100 hits, 20 judgments each); the normal test run smoke-runs
fanfuse and pytrec_eval once on 50 queries and checks that they agree. ranx runs only when timing:
numba compiles its metrics on first use in every process (about 2 minutes on a 2-core machine), and
its agreement with fanfuse is the subject of tests/test_metrics_oracles.py.

    .venv/bin/pytest benches/bench_eval.py --benchmark-enable --benchmark-only --benchmark-min-rounds=3 \
        --benchmark-columns=min,median,rounds
"""

from __future__ import annotations

import random
import warnings
from pathlib import Path
from typing import Any

import fanfuse
import pytest

DEPTH, JUDGED, POOL = 100, 20, 1000
CUT = 10
# The trec_eval measures, named as pytrec_eval and as fanfuse's ranx spelling.
TREC_EVAL = {
    f"P_{CUT}": f"precision@{CUT}",
    f"recall_{CUT}": f"recall@{CUT}",
    f"success_{CUT}": f"hit_rate@{CUT}",
    "map": "map",
    f"map_cut_{CUT}": f"map@{CUT}",
    "recip_rank": "mrr",
    "Rprec": "r-precision",
    "bpref": "bpref",
    "ndcg": "ndcg",
    f"ndcg_cut_{CUT}": f"ndcg@{CUT}",
    "set_P": "precision",
    "set_recall": "recall",
    "set_F": "f1",
}
# Every ranx metric, uncut and at the cut-off where it takes one.
RANX = [
    *(n for n in fanfuse._core.METRICS if n != "rbp"),
    *(f"{n}@{CUT}" for n in fanfuse._core.METRICS if n not in ("rbp", "r-precision", "bpref")),
    "rbp.8",
]


def generate(n_queries: int, seed: int = 1) -> tuple[dict[str, dict[str, float]], dict[str, dict[str, int]]]:
    """Runs of DEPTH hits and JUDGED graded judgments per query, at least one of them relevant (ranx's
    bpref fails on a query without one)."""
    rng = random.Random(seed)
    run, qrels = {}, {}
    for q in range(n_queries):
        docs = [f"doc{i}" for i in rng.sample(range(POOL), DEPTH)]
        # Scores on a grid of 1/64 (exact in single precision, as trec_eval reads them): ties occur.
        run[f"q{q}"] = {d: rng.randrange(10_000) / 64 for d in docs}
        judged = rng.sample(docs[:50], JUDGED // 2) + [
            f"doc{i}" for i in rng.sample(range(POOL), JUDGED // 2)
        ]
        grades = {d: rng.choice((0, 0, 1, 2, 3)) for d in judged}
        grades[judged[0]] = 1
        qrels[f"q{q}"] = grades
    return run, qrels


def tie_free(run: dict[str, dict[str, float]]) -> dict[str, dict[str, float]]:
    """The run rescored in trec_eval's order (ties by docid descending), so ranx reads it the same way."""
    out = {}
    for qid, docs in run.items():
        order = sorted(sorted(docs, reverse=True), key=lambda d: -docs[d])
        out[qid] = {d: float(len(order) - i) for i, d in enumerate(order)}
    return out


def timing_disabled(config: pytest.Config) -> bool:
    """pyproject's addopts disable timing; `--benchmark-enable` (make bench) turns it back on."""
    options = config.getoption
    return bool(
        options("benchmark_disable", default=False) and not options("benchmark_enable", default=False)
    )


@pytest.fixture(scope="module")
def inputs(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    disabled = timing_disabled(request.config)
    run, qrels = generate(50 if disabled else 10_000)
    path: Path = tmp_path_factory.mktemp("eval") / "qrels.txt"
    path.write_text("".join(f"{q} 0 {d} {g}\n" for q, docs in qrels.items() for d, g in docs.items()))
    rows = [(q, d, s) for q, docs in run.items() for d, s in docs.items()]
    columns = [list(c) for c in zip(*rows, strict=True)]
    return {
        "run": run,
        "qrels": qrels,
        "fanfuse_run": fanfuse.Run.from_columns(*columns),
        "fanfuse_qrels": fanfuse.read_qrels(str(path)),
    }


def fanfuse_means(inputs: dict[str, Any], metrics: list[str]) -> dict[str, float]:
    qids, values = fanfuse.evaluate(inputs["fanfuse_run"], inputs["fanfuse_qrels"], metrics=metrics)
    return {m: sum(v) / len(qids) for m, v in values.items()}


@pytest.mark.benchmark(group="eval: trec_eval's 13 measures, 10k queries")
def test_fanfuse_trec_eval_measures(benchmark: Any, inputs: dict[str, Any]) -> None:
    means = benchmark(fanfuse_means, inputs, list(TREC_EVAL.values()))
    assert len(means) == len(TREC_EVAL)


@pytest.mark.benchmark(group="eval: trec_eval's 13 measures, 10k queries")
def test_pytrec_eval(benchmark: Any, inputs: dict[str, Any]) -> None:
    pytrec_eval = pytest.importorskip("pytrec_eval")
    evaluator = pytrec_eval.RelevanceEvaluator(inputs["qrels"], set(TREC_EVAL))
    result = benchmark(evaluator.evaluate, inputs["run"])
    ours = fanfuse_means(inputs, list(TREC_EVAL.values()))
    for trec, name in TREC_EVAL.items():
        mean = sum(r[trec] for r in result.values()) / len(result)
        assert ours[name] == pytest.approx(mean, abs=1e-12), trec


@pytest.mark.benchmark(group="eval: ranx's metrics, 10k queries")
def test_fanfuse_ranx_metrics(benchmark: Any, inputs: dict[str, Any]) -> None:
    means = benchmark(fanfuse_means, inputs, RANX)
    assert len(means) == len(RANX)


@pytest.mark.benchmark(group="eval: ranx's metrics, 10k queries")
def test_ranx(benchmark: Any, inputs: dict[str, Any], request: pytest.FixtureRequest) -> None:
    if timing_disabled(request.config):
        pytest.skip("ranx's numba compilation takes minutes; it runs when timing (make bench)")
    ranx = pytest.importorskip("ranx")
    qrels, run = ranx.Qrels(inputs["qrels"]), ranx.Run(tie_free(inputs["run"]))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # numba's warnings about its parallel loops
        ranx.evaluate(qrels, run, RANX)  # compiles ranx's numba code outside the timing
        means = benchmark(ranx.evaluate, qrels, run, RANX)
    ours = fanfuse_means(inputs, RANX)
    for name in RANX:
        assert ours[name] == pytest.approx(means[name], abs=1e-12), name
