"""Every peer of docs/benchmarks.md gives fanfuse's ranking where its contract is fanfuse's (small
inputs; `make bench-peers` checks the same on every input it times). A peer that is not installed
is skipped (the bench extra installs them all)."""

from __future__ import annotations

import random
import warnings
from pathlib import Path

import peer_fusion
import peer_runs
import pytest
from bench_eval import generate as eval_inputs
from workloads import int64_query, str_query

PEER_MODULES = {
    "rankops": "rankops",
    "ranx fuse": "ranx",
    "LangChain EnsembleRetriever": "langchain_classic",
    "LlamaIndex QueryFusionRetriever": "llama_index.core",
    "Haystack DocumentJoiner": "haystack",
}


@pytest.mark.parametrize("contender", peer_fusion.contenders(), ids=lambda c: f"{c.form}: {c.name}")
def test_each_contender_ranks_as_fanfuse(contender: peer_fusion.Contender) -> None:
    if contender.name in PEER_MODULES:
        pytest.importorskip(PEER_MODULES[contender.name])
    rng = random.Random(3)
    queries = [int64_query(rng) if contender.form == "int64 arrays" else str_query(rng) for _ in range(8)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # numba's, from ranx
        for lists in queries:
            ids = contender.fuse(contender.prepare(lists))
            assert peer_fusion.rankings_agree(lists, ids, contender.k), contender.name


def test_the_agreement_check_sees_a_different_ranking() -> None:
    lists = str_query(random.Random(4))
    ids = peer_fusion.plain_python(lists)
    assert peer_fusion.rankings_agree(lists, ids)
    assert not peer_fusion.rankings_agree(lists, [ids[1], ids[0], *ids[2:]])
    assert not peer_fusion.rankings_agree(lists, ids[:-1])
    assert not peer_fusion.rankings_agree(lists, ids, k=1.0) or ids == peer_fusion.plain_python(lists, k=1.0)


def test_run_files_fuse_alike_in_every_engine(tmp_path: Path) -> None:
    pytest.importorskip("ranx")
    pytest.importorskip("trectools")
    peer_runs.warm_ranx()
    paths = peer_runs.write_runs(tmp_path, 30)
    fused = {name: fuse() for name, fuse in peer_runs.fusers(paths).items()}
    assert len(fused["fanfuse"]) == 30
    assert all(len(ids) == peer_runs.KEEP for ids in fused["fanfuse"].values())
    for name, ids in fused.items():
        assert peer_runs.runs_agree(paths, ids), name
    first = next(iter(fused["ranx"]))
    fused["ranx"][first][:2] = fused["ranx"][first][1::-1]
    assert not peer_runs.runs_agree(paths, fused["ranx"])  # the check sees a swap


def test_every_evaluator_gives_the_same_means(tmp_path: Path) -> None:
    pytest.importorskip("ranx")
    pytest.importorskip("pytrec_eval")
    run, qrels = eval_inputs(40)
    evaluators = peer_runs.evaluators(run, qrels, tmp_path)
    # ranx's metrics compile with numba for minutes on 2 shared cores: `make bench-peers` checks
    # ranx's means on every run; here pytrec_eval's.
    means = {name: evaluators[name]() for name in ("fanfuse", "pytrec_eval")}
    for name, values in means.items():
        assert values == pytest.approx(means["fanfuse"], abs=1e-9), name
