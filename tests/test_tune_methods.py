"""`tune --method M` for every fusion method, on generated runs: what it chooses is what a brute
force over fuse_runs + evaluate chooses, each query is held out once, and trained methods never
see the judgments of the queries they are scored on."""

from __future__ import annotations

import itertools
import json
import random
from dataclasses import asdict
from pathlib import Path
from typing import Any

import fanfuse
import fanfuse.tune.scores as tune_scores
import pytest
from fanfuse import METHODS, TRAINED_METHODS, FusionError, InvalidSetting, OutOfRange, Qrels, Run
from fanfuse.cli import main
from fanfuse.tune import tune
from fanfuse.tune.space import OPTIONS, method_parameters, weight_grid
from generated_runs import generated_qrels, generated_runs, write_beir_qrels
from run_reports import fold_weighted_means

FOLDS = 3


@pytest.fixture(scope="module")
def inputs(tmp_path_factory: pytest.TempPathFactory) -> tuple[list[Run], Qrels, dict[str, dict[str, int]]]:
    rng = random.Random(5)
    hits = generated_runs(rng, runs=3, queries=45, docs=30, depth=10)
    judgments = generated_qrels(rng, hits, judged_share=0.9)
    runs = [Run.from_columns(*_columns(run), name=f"run{r}", rank_from="score") for r, run in enumerate(hits)]
    path = write_beir_qrels(tmp_path_factory.mktemp("tune") / "qrels.tsv", judgments)
    return runs, fanfuse.read_qrels(path), judgments


def _columns(run: dict[str, list[tuple[str, float]]]) -> tuple[list[str], list[str], list[float]]:
    rows = [(q, d, s) for q, hits in run.items() for d, s in hits]
    return [r[0] for r in rows], [r[1] for r in rows], [r[2] for r in rows]


def small_levels(method: str, runs: list[Run], qrels: Qrels) -> dict[str, Any]:
    """Two default levels of every parameter the method has (norm: two norms), to keep tests fast."""
    has = method_parameters(method)
    levels: dict[str, Any] = {}
    for option in OPTIONS:
        if option.parameter in has:
            default = option.default or ("min-max", "zmuv")
            levels[option.keyword] = list(default[2:4]) if option.parameter != "norm" else list(default)
    return levels


def fold_split(runs: list[Run], qrels: Qrels, folds: int, seed: int = 0) -> list[list[str]]:
    """The documented split: judged queries that some run holds, sorted, shuffled with the seed;
    query i of the shuffled list is in fold i % folds."""
    judged = set(qrels.qids())
    queries = sorted({q for run in runs for q in run.qids() if q in judged})
    random.Random(seed).shuffle(queries)
    return [queries[f::folds] for f in range(folds)]


def mean_on(run: Run, qrels: Qrels, queries: list[str]) -> float:
    qids, values = fanfuse.evaluate(run, qrels, metrics=["ndcg@10"])
    by_query = dict(zip(qids, values["ndcg@10"], strict=True))
    return sum(by_query.get(q, 0.0) for q in queries) / len(queries)


# Two lists that overlap in part, with scores: every parameter in a method's formula changes a score here.
PROBE = [[("a", 3.0), ("b", 2.0), ("c", 1.0)], [("b", 5.0), ("c", 4.0), ("d", 0.5)]]
PROBE_VALUES = {"k": (1.0, 30.0), "phi": (0.3, 0.9), "sigma": (0.0, 0.9), "gamma": (0.5, 2.0)}


def core_accepts(call: Any, **options: Any) -> bool:
    try:
        call(**options)
    except (FusionError, InvalidSetting):  # a fusion option's refusal, or a training setting's
        return False
    return True


@pytest.mark.parametrize("method", METHODS)
def test_the_core_lists_exactly_the_parameters_a_method_reads(method: str) -> None:
    """A method has k, phi, sigma or gamma iff two values of it give different fused scores, and
    weights or norm iff the core accepts them for it."""
    reads = {
        name
        for name, (low, high) in PROBE_VALUES.items()
        if fanfuse.fuse(PROBE, method=method, **{name: low}).scores
        != fanfuse.fuse(PROBE, method=method, **{name: high}).scores
    }
    for name, value in (("weights", [1.0, 2.0]), ("norm", "max")):
        if core_accepts(lambda **o: fanfuse.fuse(PROBE, method=method, **o), **{name: value}):
            reads.add(name)
    assert set(fanfuse.METHOD_PARAMETERS[method]) == reads


@pytest.mark.parametrize("method", METHODS)
def test_the_core_says_which_methods_read_scores(method: str) -> None:
    """A method is in SCORE_METHODS iff it refuses lists without scores, and iff a change of the
    scores that keeps every rank changes its fused scores."""
    ids_only = [[doc for doc, _ in hits] for hits in PROBE]
    cubed = [[(doc, score**3) for doc, score in hits] for hits in PROBE]
    reads = fanfuse.fuse(PROBE, method=method).scores != fanfuse.fuse(cubed, method=method).scores
    assert (method in fanfuse.SCORE_METHODS) == (
        not core_accepts(lambda: fanfuse.fuse(ids_only, method=method))
    )
    assert (method in fanfuse.SCORE_METHODS) == reads


@pytest.mark.parametrize("method", TRAINED_METHODS)
def test_the_core_says_which_trained_methods_read_scores(method: str, inputs: Any) -> None:
    runs, qrels, _ = inputs

    def cubed(run: Run) -> Run:
        qids, docids, _, scores = run.columns()
        return Run.from_columns(qids, docids, [s**3 for s in scores], name=run.name, rank_from="score")

    model = fanfuse.train_fusion(runs, qrels, method=method)
    as_given = fanfuse.fuse_runs(runs, model=model).columns()
    reads = as_given != fanfuse.fuse_runs([cubed(r) for r in runs], model=model).columns()
    assert (method in fanfuse.SCORE_METHODS) == reads


def test_multiquery_fusion_passes_scores_to_the_score_methods_only() -> None:
    from fanfuse.multiquery.fusion import checked

    for method in METHODS:
        assert checked({"method": method}).reads_scores == (method in fanfuse.SCORE_METHODS)


@pytest.mark.parametrize("method", TRAINED_METHODS)
def test_the_core_lists_exactly_what_training_and_the_model_take(method: str, inputs: Any) -> None:
    """A trained method's parameters: what training takes, and the fusion options a fusion with its
    model takes (segfuse's norm, which changes its scores), so that the command line and tune offer
    exactly those (`tests/test_cli_idle_flags.py`)."""
    runs, qrels, _ = inputs
    one = qrels.subset(qrels.qids()[:1])
    takes = {
        name
        for name, value in (("segments", 2), ("window", 1))
        if core_accepts(lambda **o: fanfuse.train_fusion(runs, one, method=method, **o), **{name: value})
    }
    model = fanfuse.train_fusion(runs, qrels, method=method)
    # As for a plain method: weights or norm iff the core accepts them, the others iff they change scores.
    for name, value in (("norm", "zmuv"), ("weights", [1.0] * len(runs))):
        if core_accepts(lambda **o: fanfuse.fuse_runs(runs, model=model, **o), **{name: value}):
            takes.add(name)
    for name, (low, high) in PROBE_VALUES.items():
        fused = [fanfuse.fuse_runs(runs, model=model, **{name: v}).columns() for v in (low, high)]
        if fused[0] != fused[1]:
            takes.add(name)
    assert set(fanfuse.METHOD_PARAMETERS[method]) == takes


@pytest.mark.parametrize("method", METHODS + TRAINED_METHODS)
def test_every_method_tunes_its_own_parameters(method: str, inputs: Any) -> None:
    runs, qrels, _ = inputs
    levels = small_levels(method, runs, qrels)
    report = tune(runs, qrels, method=method, folds=FOLDS, **levels)
    keywords = {o.parameter: o.keyword for o in OPTIONS}
    assert {keywords[p] for p in report.levels} == set(levels)
    split = fold_split(runs, qrels, FOLDS)
    assert report.queries == sum(len(fold) for fold in split)
    for fold in report.folds:
        assert fold.fused.method == method
        assert set(fold.fused.params) == set(report.levels)
        for name, value in fold.fused.params.items():
            allowed = weight_grid(3, report.levels[name]) if name == "weights" else report.levels[name]
            assert value in allowed
    assert fold_weighted_means(asdict(report)) == pytest.approx((report.fused_heldout, report.single_heldout))
    assert 0.0 <= report.p_value <= 1.0


@pytest.mark.parametrize(
    ("method", "levels"),
    [
        ("rrf", {"ks": [5.0, 60.0], "weight_levels": [0.5, 1.0]}),
        ("rbc", {"phis": [0.5, 0.9], "weight_levels": [1.0]}),
    ],
)
def test_the_chosen_configuration_has_the_best_training_mean(
    method: str, levels: dict[str, list[float]], inputs: Any
) -> None:
    runs, qrels, _ = inputs
    report = tune(runs, qrels, method=method, folds=FOLDS, search="grid", **levels)
    split = fold_split(runs, qrels, FOLDS)
    names = list(report.levels)
    axes = [weight_grid(3, report.levels[n]) if n == "weights" else report.levels[n] for n in names]
    configs = [dict(zip(names, values, strict=True)) for values in itertools.product(*axes)]
    fused = [fanfuse.fuse_runs(runs, method=method, **c) for c in configs]
    for fold, result in zip(range(FOLDS), report.folds, strict=True):
        training = [q for f, queries in enumerate(split) if f != fold for q in queries]
        means = [mean_on(run, qrels, training) for run in fused]
        best = means.index(max(means))  # the first of equal means, as tune
        assert result.fused.params == configs[best]
        assert result.fused_heldout == pytest.approx(mean_on(fused[best], qrels, split[fold]), abs=1e-12)
        singles = [mean_on(run, qrels, training) for run in runs]
        assert result.single_run == singles.index(max(singles))


def test_a_trained_method_is_trained_on_the_training_folds_only(
    inputs: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    runs, qrels, _ = inputs
    calls: list[tuple[set[str], set[str]]] = []
    real_train, real_fuse = tune_scores.train_fusion, tune_scores.fuse_runs
    trained_on: dict[int, set[str]] = {}

    def spy_train(runs: Any, fold_qrels: Qrels, **options: Any) -> Any:
        model = real_train(runs, fold_qrels, **options)
        trained_on[id(model)] = set(fold_qrels.qids())
        return model

    def spy_fuse(runs: Any, **options: Any) -> Any:
        if options.get("model") is not None:
            calls.append((trained_on[id(options["model"])], {q for r in runs for q in r.qids()}))
        return real_fuse(runs, **options)

    monkeypatch.setattr(tune_scores, "train_fusion", spy_train)
    monkeypatch.setattr(tune_scores, "fuse_runs", spy_fuse)
    report = tune(runs, qrels, method="probfuse", segment_counts=[2, 5], folds=FOLDS)
    assert calls and all(not (training & scored) for training, scored in calls)
    # The held-out number is that of a model trained on the other folds' judgments, found anew here.
    split = fold_split(runs, qrels, FOLDS)
    for fold, result in enumerate(report.folds):
        training = [q for f, queries in enumerate(split) if f != fold for q in queries]
        model = fanfuse.train_fusion(runs, qrels.subset(training), method="probfuse", **result.fused.params)
        run = fanfuse.fuse_runs(runs, model=model)
        assert result.fused_heldout == pytest.approx(mean_on(run, qrels, split[fold]), abs=1e-12)


def test_judgments_of_a_held_out_fold_do_not_change_what_is_chosen_for_it(
    inputs: Any, tmp_path: Path
) -> None:
    runs, qrels, judgments = inputs
    held_out = set(fold_split(runs, qrels, FOLDS)[0])
    # Fold 0's queries judge other documents: a model or a choice that read them would differ.
    changed = {
        q: ({d: 3 for d in _retrieved(runs, q)[-3:]} if q in held_out else judged)
        for q, judged in judgments.items()
    }
    other = fanfuse.read_qrels(write_beir_qrels(tmp_path / "changed.tsv", changed))
    for method, levels in (("slidefuse", {"windows": [1, 5]}), ("rrf", {"ks": [1.0, 60.0]})):
        before = tune(runs, qrels, method=method, folds=FOLDS, **levels)
        after = tune(runs, other, method=method, folds=FOLDS, **levels)
        assert before.folds[0].fused == after.folds[0].fused
        assert before.folds[0].single_run == after.folds[0].single_run
        assert before.folds[0].fused_heldout != after.folds[0].fused_heldout


def _retrieved(runs: list[Run], qid: str) -> list[str]:
    docs = {d for run in runs for q, d, _, _ in zip(*run.columns(), strict=True) if q == qid}
    return sorted(docs) or ["none"]


def test_coordinate_ascent_climbs_from_its_start_and_auto_switches_at_the_grid_limit(inputs: Any) -> None:
    runs, qrels, _ = inputs
    grid = tune(runs, qrels, method="wsum", folds=FOLDS, search="grid")
    coordinate = tune(runs, qrels, method="wsum", folds=FOLDS, search="coordinate")
    assert grid.search == "grid" and coordinate.search == "coordinate"
    assert coordinate.fusions < grid.fusions
    assert tune(runs, qrels, method="wsum", folds=FOLDS).search == "grid"
    assert tune([*runs, runs[0]], qrels, method="rrf", folds=FOLDS).search == "coordinate"


@pytest.mark.parametrize(
    ("options", "error", "named"),
    [
        ({"method": "nope"}, FusionError, "method must be one of rrf"),
        (
            {"method": "isr", "ks": [1.0]},
            FusionError,
            "ks: method 'isr' has no k (its search options: nothing)",
        ),
        ({"method": "rbc", "ks": [1.0]}, FusionError, "its search options: weight_levels, phis"),
        ({"method": "rbc", "phis": []}, FusionError, "phis is empty"),
        ({"method": "rbc", "phis": [0.5, 1.5]}, FusionError, "phis[1] must be a number in (0, 1)"),
        ({"method": "logn_isr", "sigmas": [2.0]}, FusionError, "sigmas[0] must be a number in [0, 1]"),
        ({"method": "combgmnz", "gammas": ["1"]}, TypeError, "gammas[0] must be a finite number"),
        ({"method": "combsum", "norms": ["l2"]}, FusionError, "norms[0] must be one of none"),
        (
            {"method": "probfuse", "segment_counts": [0]},
            OutOfRange,
            "segment_counts[0] must be an int from 1 to 1000000 (got 0)",
        ),
        ({"method": "slidefuse", "windows": [1.5]}, TypeError, "windows[0] must be an int"),
        ({"method": "probfuse", "folds": 2}, OutOfRange, "needs folds >= 3"),
        ({"search": "random"}, InvalidSetting, "search must be one of auto, grid, coordinate"),
    ],
)
def test_bad_options_name_the_argument_and_what_is_accepted(
    options: dict[str, Any], error: type[Exception], named: str, inputs: Any
) -> None:
    runs, qrels, _ = inputs
    with pytest.raises(error) as raised:
        tune(runs, qrels, **{"folds": FOLDS, **options})
    assert named in str(raised.value)


def test_the_command_reports_what_the_library_gives(
    inputs: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    runs, _, judgments = inputs
    paths = []
    for r, run in enumerate(runs):
        run.write(str(tmp_path / f"run{r}.trec"))
        paths.append(str(tmp_path / f"run{r}.trec"))
    qrels = write_beir_qrels(tmp_path / "qrels.tsv", judgments)
    grid = ["--phis", "0.5,0.9", "--weight-levels", "0.5,1", "--folds", "3"]
    assert main(["tune", *paths, "--qrels", qrels, "--method", "rbc", *grid, "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    direct = tune(
        [fanfuse.read_run(p) for p in paths],
        fanfuse.read_qrels(qrels),
        method="rbc",
        phis=[0.5, 0.9],
        weight_levels=[0.5, 1],
        folds=3,
    )
    assert report == json.loads(json.dumps(asdict(direct)))
    assert main(["tune", *paths, "--qrels", qrels, "--method", "isr"]) == 0
    out = capsys.readouterr().out
    assert "isr: grid search over nothing (one configuration)" in out and "paired randomization" in out
    assert main(["tune", *paths, "--qrels", qrels, "--method", "isr", "--ks", "5"]) == 2
    # The command names its flag (the library, above, names its keyword).
    assert "error: --ks goes with --method rrf and would do nothing here" in capsys.readouterr().err


@pytest.mark.parametrize(
    "options", [["--method", "probfuse", "--segment-counts", "5,10"], ["--method", "combgmnz"]]
)
def test_the_command_tunes_mtrag_runs(
    options: list[str], mtrag_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    runs = [
        str(mtrag_dir / "runs" / f"{name}.jsonl") for name in ("elser_cloud_rewrite", "bm25_cloud_rewrite")
    ]
    qrels = str(mtrag_dir / "qrels" / "cloud" / "dev.tsv")
    assert main(["tune", *runs, "--qrels", qrels, *options, "--folds", "3", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["queries"] == 188 and len(report["folds"]) == 3
    ((name, levels),) = report["levels"].items()
    assert all(fold["fused"]["params"][name] in levels for fold in report["folds"])
    assert fold_weighted_means(report) == pytest.approx((report["fused_heldout"], report["single_heldout"]))


@pytest.mark.parametrize(
    ("method", "option", "value"),
    [("rbc", "phi", 0.5), ("logn_isr", "sigma", 0.7), ("combgmnz", "gamma", 2.0)],
)
def test_fanfuse_fuse_passes_every_tunable_parameter_to_the_core(
    method: str, option: str, value: float, inputs: Any, tmp_path: Path
) -> None:
    runs, _, _ = inputs
    paths = []
    for r, run in enumerate(runs[:2]):
        run.write(str(tmp_path / f"run{r}.trec"))
        paths.append(str(tmp_path / f"run{r}.trec"))
    out = str(tmp_path / "fused.trec")
    assert main(["fuse", *paths, "-o", out, "--method", method, f"--{option}", str(value)]) == 0
    read = [fanfuse.read_run(p) for p in paths]
    expected = fanfuse.fuse_runs(read, method=method, **{option: value})
    assert sorted(zip(*fanfuse.read_run(out).columns(), strict=True)) == sorted(
        zip(*expected.columns(), strict=True)
    )
    assert expected.columns() != fanfuse.fuse_runs(read, method=method).columns()
