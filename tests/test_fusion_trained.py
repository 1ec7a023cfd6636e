"""Trained fusion (probfuse, segfuse, slidefuse, bayesfuse, posfuse, mapfuse) equals ranx: the
trained tables and the fused scores, bit for bit, on generated runs with tied scores and on the
real MT-RAG runs; models round-trip through JSON; bad models and parameters are refused by name.

ranx orders each query's hits by score with numba's sort, whose order among equal scores is its
own: the tests give fanfuse each list in ranx's order (``rank_from="file"``), so both fuse the same
ranked lists. Lists stay under 15 hits where scores tie, where numba's sort is an insertion sort
(stable), so that ranx's re-sort of the normalised runs during training keeps that order too.
"""

from __future__ import annotations

import importlib
import json
import random
import warnings
from pathlib import Path
from typing import Any

import fanfuse
import pytest

ranx = pytest.importorskip("ranx")

RunDict = dict[str, dict[str, float]]
QrelsDict = dict[str, dict[str, int]]

# fanfuse's training sizes and ranx's trainer + fusion params for the same model.
SIZES: dict[str, dict[str, int]] = {"probfuse": {"segments": 3}, "slidefuse": {"window": 2}}


def ranx_model(method: str, qrels: Any, runs: list[Any]) -> dict[str, Any]:
    """ranx's trained parameters, trained on min-max-normalised runs as `optimize_fusion` does."""
    module = importlib.import_module(f"ranx.fusion.{method}")
    normalised = [ranx.normalization.norm_switch("min-max")(run) for run in runs]
    if method == "probfuse":
        return {"probs": module.probfuse_train(qrels, normalised, SIZES["probfuse"]["segments"])}
    if method == "slidefuse":
        return {"probs": module.slidefuse_train(qrels, normalised), "w": SIZES["slidefuse"]["window"]}
    if method == "bayesfuse":
        return {"log_odds": module.bayesfuse_train(qrels, normalised)}
    if method == "mapfuse":
        return {"map_scores": module.mapfuse_train(qrels, normalised)}
    return {"probs": getattr(module, f"{method}_train")(qrels, normalised)}


def ranx_fuse(method: str, runs: list[Any], params: dict[str, Any]) -> Any:
    """ranx.fuse; for probfuse, the same ranx functions called query by query: `ranx.fuse` compiles
    probfuse's nested parallel loop for about 25 s in every process, which the per-query calls skip."""
    if method != "probfuse":
        return ranx.fuse(runs, method=method, params=params)
    from numba.typed import List as TypedList

    module = importlib.import_module("ranx.fusion.probfuse")
    scored = []
    for run, probs in zip(runs, params["probs"], strict=True):
        normalised = ranx.normalization.norm_switch("min-max")(run)
        qids = TypedList(normalised.run.keys())
        per_query = TypedList([module._prob_score(normalised.run[q], probs) for q in qids])
        fused = ranx.Run()
        fused.run = module.convert_results_dict_list_to_run(qids, per_query)
        scored.append(fused)
    return module.comb_sum(scored, "probfuse")


def generated(seed: int, *, ties: bool, longest: int, n_runs: int = 3) -> tuple[list[RunDict], QrelsDict]:
    rng = random.Random(seed)
    pool = [f"d{i}" for i in range(max(40, longest + 5))]
    qids = [f"q{i}" for i in range(25)]
    runs = []
    for _ in range(n_runs):
        runs.append(
            {
                q: {
                    d: float(rng.randint(1, 4)) if ties else rng.uniform(0.0, 30.0)
                    for d in rng.sample(pool, rng.randint(1, longest))
                }
                for q in qids
            }
        )
    qrels = {q: {d: rng.choice([0, 1, 1, 2]) for d in rng.sample(pool, rng.randint(1, 15))} for q in qids}
    return runs, qrels


def fanfuse_run(ranx_run: Any) -> fanfuse.Run:
    """The run as ranx ranks it (its own order among equal scores)."""
    rows = [(q, d, s) for q, docs in ranx_run.run.items() for d, s in docs.items()]
    qids, docids, scores = (list(column) for column in zip(*rows, strict=True))
    return fanfuse.Run.from_columns(qids, docids, scores, rank_from="file")


def fanfuse_qrels(qrels: QrelsDict, tmp_path: Path) -> fanfuse.Qrels:
    path = tmp_path / "qrels.txt"
    path.write_text("".join(f"{q} 0 {d} {rel}\n" for q, docs in qrels.items() for d, rel in docs.items()))
    return fanfuse.read_qrels(str(path))


def scores_of(run: fanfuse.Run) -> dict[tuple[str, str], float]:
    qids, docids, _, scores = run.columns()
    return dict(zip(zip(qids, docids, strict=True), scores, strict=True))


def assert_equals_ranx(runs: list[RunDict], qrels: QrelsDict, tmp_path: Path, method: str) -> None:
    ranx_runs = [ranx.Run(run) for run in runs]
    ranx_qrels = ranx.Qrels(qrels)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # numba's cast warnings
        params = ranx_model(method, ranx_qrels, ranx_runs)
        expected = ranx_fuse(method, ranx_runs, params)
    ours = [fanfuse_run(run) for run in ranx_runs]
    model = fanfuse.train_fusion(ours, fanfuse_qrels(qrels, tmp_path), method=method, **SIZES.get(method, {}))
    trained = next(v for k, v in params.items() if k != "w")
    for r, table in enumerate(model.tables):
        theirs = [float(trained[r])] if method == "mapfuse" else [float(v) for v in trained[r]]
        if method == "bayesfuse":  # ranx spreads each segment's log odds over its positions
            theirs = [theirs[cut] for cut in (0, 5, 10, 15, 20, 30, 100, 200, 500)]
        assert table == theirs, (method, r)
    fused = scores_of(fanfuse.fuse_runs(ours, model=model, top_k=None))
    expected_scores = {(q, d): s for q, docs in expected.run.items() for d, s in docs.items()}
    assert fused == expected_scores, method  # exact: every sum is ranx's, term for term


@pytest.mark.parametrize("method", fanfuse.TRAINED_METHODS)
def test_generated_runs_with_ties_fuse_as_ranx(method: str, tmp_path: Path) -> None:
    runs, qrels = generated(len(method), ties=True, longest=12)
    assert_equals_ranx(runs, qrels, tmp_path, method)


@pytest.mark.parametrize("method", fanfuse.TRAINED_METHODS)
def test_long_generated_runs_fuse_as_ranx(method: str, tmp_path: Path) -> None:
    # Long enough to reach segfuse's third and bayesfuse's sixth segment.
    runs, qrels = generated(7 * len(method), ties=False, longest=45)
    assert_equals_ranx(runs, qrels, tmp_path, method)


def mtrag_runs(mtrag_dir: Path, domain: str) -> tuple[list[RunDict], QrelsDict]:
    """elser / bge rewrite runs and the qrels, on the queries all of them hold (ranx needs equal keys)."""
    runs = []
    for name in (f"elser_{domain}_rewrite", f"bge_{domain}_rewrite", f"elser_{domain}_lastturn"):
        qids, docids, _, scores = fanfuse.read_run(str(mtrag_dir / "runs" / f"{name}.jsonl")).columns()
        run: RunDict = {}
        for q, d, s in zip(qids, docids, scores, strict=True):
            run.setdefault(q, {})[d] = s
        runs.append(run)
    qrels: QrelsDict = {}
    with open(mtrag_dir / "qrels" / domain / "dev.tsv") as f:
        next(f)
        for line in f:
            q, d, rel = line.split("\t")
            qrels.setdefault(q, {})[d] = int(rel)
    shared = set(qrels).intersection(*runs)
    return [{q: r[q] for q in shared if r[q]} for r in runs], {q: qrels[q] for q in shared}


@pytest.mark.parametrize("method", fanfuse.TRAINED_METHODS)
def test_mtrag_runs_fuse_as_ranx(method: str, mtrag_dir: Path, tmp_path: Path) -> None:
    runs, qrels = mtrag_runs(mtrag_dir, "clapnq")
    assert len(qrels) > 100
    assert_equals_ranx(runs, qrels, tmp_path, method)


def small_model(tmp_path: Path, method: str = "slidefuse", **sizes: int) -> tuple[list[fanfuse.Run], Any]:
    runs, qrels = generated(3, ties=True, longest=8, n_runs=2)
    ours = [fanfuse_run(ranx.Run(run)) for run in runs]
    return ours, fanfuse.train_fusion(ours, fanfuse_qrels(qrels, tmp_path), method=method, **sizes)


@pytest.mark.parametrize("method", fanfuse.TRAINED_METHODS)
def test_a_model_round_trips_through_json_and_files(method: str, tmp_path: Path) -> None:
    runs, model = small_model(tmp_path, method)
    again = fanfuse.FusionModel.from_json(model.to_json())
    assert again == model and again.tables == model.tables
    path = tmp_path / "model.json"
    model.save(str(path))
    assert fanfuse.FusionModel.load(str(path)) == model
    assert json.loads(path.read_text())["version"] == 1
    assert scores_of(fanfuse.fuse_runs(runs, model=again)) == scores_of(fanfuse.fuse_runs(runs, model=model))


def test_fuse_files_takes_the_model(tmp_path: Path) -> None:
    runs, model = small_model(tmp_path, "probfuse", segments=2)
    paths = []
    for i, run in enumerate(runs):
        paths.append(str(tmp_path / f"run{i}.trec"))
        run.write(paths[-1])
    out = tmp_path / "fused.trec"
    fanfuse.fuse_files(paths, str(out), model=model, top_k=None, rank_from="rank")
    fused = scores_of(fanfuse.read_run(str(out)))
    expected = scores_of(fanfuse.fuse_runs(runs, model=model, top_k=None))
    assert fused.keys() == expected.keys()
    assert all(abs(fused[k] - expected[k]) <= 1e-15 * abs(expected[k]) for k in fused)  # written as text


def test_bad_models_are_refused_naming_the_field(tmp_path: Path) -> None:
    _, model = small_model(tmp_path)
    good = json.loads(model.to_json())
    cases = {
        "version": (2, "field 'version' must be 1"),
        "method": ("rrf", "field method must be 'probfuse'"),
        "window": (-1, "field 'window' must be an int >= 0"),
        "tables": ([[0.1, "x"]], "field 'tables[0][1]' must be a number"),
        "extra": (1, "unknown field 'extra'"),
    }
    for field, (value, message) in cases.items():
        text = json.dumps({**good, field: value})
        with pytest.raises(fanfuse.FusionError, match=message.replace("[", r"\[").replace("]", r"\]")):
            fanfuse.FusionModel.from_json(text)
    missing = {k: v for k, v in good.items() if k != "tables"}
    with pytest.raises(fanfuse.FusionError, match="field 'tables' is missing"):
        fanfuse.FusionModel.from_json(json.dumps(missing))
    with pytest.raises(fanfuse.FusionError, match="window applies to slidefuse only"):
        fanfuse.FusionModel.from_json(json.dumps({**good, "method": "posfuse"}))
    (tmp_path / "bad.json").write_text("{")
    with pytest.raises(fanfuse.FusionError, match=r"bad\.json: fusion model: not JSON"):
        fanfuse.FusionModel.load(str(tmp_path / "bad.json"))


def test_bad_training_and_fusion_options_are_refused(tmp_path: Path) -> None:
    runs, model = small_model(tmp_path)
    qrels = fanfuse_qrels({"q0": {"d1": 1}}, tmp_path)
    # What to train is a setting; a model, and the options it fuses with, are fusion input.
    with pytest.raises(fanfuse.InvalidSetting, match="method must be 'probfuse', 'segfuse'"):
        fanfuse.train_fusion(runs, qrels, method="rrf")
    with pytest.raises(fanfuse.InvalidSetting, match="segments applies to probfuse only, not posfuse"):
        fanfuse.train_fusion(runs, qrels, method="posfuse", segments=3)
    with pytest.raises(fanfuse.OutOfRange, match="segments must be an int from 1"):
        fanfuse.train_fusion(runs, qrels, method="probfuse", segments=0)
    with pytest.raises(TypeError, match="unexpected keyword argument 'w'"):
        fanfuse.train_fusion(runs, qrels, method="slidefuse", w=3)  # type: ignore[call-arg]
    with pytest.raises(fanfuse.FusionError, match="trained on 2 runs but 1 are given"):
        fanfuse.fuse_runs(runs[:1], model=model)
    with pytest.raises(fanfuse.FusionError, match="method 'rrf' given with a slidefuse model"):
        fanfuse.fuse_runs(runs, model=model, method="rrf")
    with pytest.raises(fanfuse.FusionError, match="has no per-list weights"):
        fanfuse.fuse_runs(runs, model=model, weights=[1.0, 2.0])
    with pytest.raises(fanfuse.FusionError, match="reads positions only, so norm='zmuv'"):
        fanfuse.fuse_runs(runs, model=model, norm="zmuv")
    with pytest.raises(
        fanfuse.FusionError, match=r"pass model=fanfuse.train_fusion\(runs, qrels, method='posfuse'\)"
    ):
        fanfuse.fuse_runs(runs, method="posfuse")


def test_the_fuse_command_trains_saves_and_reuses_a_model(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from fanfuse.cli import main

    runs, qrels = generated(5, ties=False, longest=10, n_runs=2)
    ours = [fanfuse_run(ranx.Run(run)) for run in runs]
    paths = [str(tmp_path / f"run{i}.trec") for i in range(2)]
    for run, path in zip(ours, paths, strict=True):
        run.write(path)
    qrels_path = tmp_path / "qrels.txt"
    fanfuse_qrels(qrels, tmp_path)  # writes qrels.txt
    model_path, out, again = tmp_path / "model.json", tmp_path / "fused.trec", tmp_path / "again.trec"
    common = ["fuse", *paths, "--method", "slidefuse", "--top-k", "0"]
    train = ["--train-runs", *paths, "--train-qrels", str(qrels_path), "--window", "1"]
    assert main([*common, "-o", str(out), *train, "--save-model", str(model_path)]) == 0
    assert main([*common, "-o", str(again), "--model", str(model_path)]) == 0
    assert out.read_text() == again.read_text()
    model = fanfuse.train_fusion(ours, fanfuse.read_qrels(str(qrels_path)), method="slidefuse", window=1)
    assert fanfuse.FusionModel.load(str(model_path)) == model
    expected = scores_of(fanfuse.fuse_runs(ours, model=model, top_k=None))
    written = scores_of(fanfuse.read_run(str(out)))
    assert written.keys() == expected.keys()
    assert main([*common, "-o", str(tmp_path / "x.trec"), "--train-qrels", str(qrels_path)]) == 2
    err = capsys.readouterr().err
    assert err.strip().splitlines()[-1] == (
        "fanfuse fuse: error: --method slidefuse is trained: give --train-runs and --train-qrels (or --model)"
    )
    assert not (tmp_path / "x.trec").exists()


@pytest.mark.parametrize(
    ("flags", "refusal", "said"),
    [
        (
            ["--method", "slidefuse", "--model", "m.json", "--train-qrels", "q"],
            fanfuse.InvalidSetting,
            "not both",
        ),
        (["--method", "slidefuse", "--train-qrels", "q"], fanfuse.InvalidSetting, "is trained: give"),
        (
            ["--method", "slidefuse", "--train-runs", "a", "--train-qrels", "q"],
            fanfuse.FusionError,
            "one per input",
        ),
    ],
)
def test_the_fuse_command_refuses_flags_that_do_not_go_together_as_settings(
    flags: list[str], refusal: type[Exception], said: str
) -> None:
    """Flags that do not go with the method or with each other are a setting's refusal; runs that
    do not match the inputs are fusion input's."""
    from fanfuse.cli import build_parser
    from fanfuse.cli.fuse import trained_model
    from fanfuse.cli.paths import HeldOutputs

    args = build_parser("fuse").parse_args(["fuse", "in0.trec", "in1.trec", "-o", "out.trec", *flags])
    with pytest.raises(refusal, match=said), HeldOutputs() as held:
        trained_model(args, held)
