"""The sequence arguments of `fanfuse.tune`, `fanfuse.tables` and `fanfuse.report` (runs, metrics, names,
levels, tables, p-values):
each refuses a bare str (read as its characters, `metrics="map"` would be the metrics 'm', 'a', 'p'), a
value that is no sequence and a set (no order) with a TypeError naming the argument, and an item of
another type naming its position (`runs[1] must be a fanfuse.Run (got str)`). The arguments are
found by introspection: every parameter annotated `Sequence[...]` or `Iterable[...]` of every public
function and class of the modules, so a new one is covered or fails here."""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from types import ModuleType
from typing import Any

import fanfuse
import fanfuse.report
import fanfuse.tables
import fanfuse.tune
import fanfuse.tune.scores
import fanfuse.tune.search
import fanfuse.tune.space
import pytest
from fanfuse.report import adjust, compare, compare_scores
from fanfuse.run_scores import RunScores, score_run
from fanfuse.tune import tune
from fanfuse.tune.scores import FoldScores, check_every_fold_trains
from fanfuse.tune.space import check_numbers, weight_grid, weight_vectors

MODULES = (
    fanfuse.tables,
    fanfuse.tune,
    fanfuse.tune.space,
    fanfuse.tune.search,
    fanfuse.tune.scores,
    fanfuse.report,
)
SEQUENCE = re.compile(r"^(Sequence|Iterable)\[")

# Sequence arguments left unchecked, and why.
UNCHECKED = {
    "fanfuse.tune.space.weight_key:weights": "the key of one weight vector, which the grid and the "
    "coordinate search build from checked levels; computed once per vector of the grid",
}


@dataclass
class Inputs:
    runs: list[fanfuse.Run]
    qrels: fanfuse.Qrels


@pytest.fixture(scope="module")
def inputs(small_runs: dict[str, str]) -> Inputs:
    return Inputs(
        [fanfuse.read_run(small_runs["run0"]), fanfuse.read_run(small_runs["run1"])],
        fanfuse.read_qrels(small_runs["qrels"]),
    )


def tuned(argument: str, **keywords: Any) -> Callable[[Inputs, Any], Any]:
    """tune with `argument` given the value, on a method that has the parameter it searches."""

    def call(given: Inputs, value: Any) -> Any:
        options: dict[str, Any] = {"folds": 2, "ks": [60.0], "weight_levels": [1.0], **keywords}
        if argument == "runs":
            return tune(value, given.qrels, **options)
        return tune(given.runs, given.qrels, **{**options, argument: value})

    return call


def fold_scores(argument: str) -> Callable[[Inputs, Any], Any]:
    def call(given: Inputs, value: Any) -> Any:
        queries = ["q0", "q1", "q2", "q3"]
        arguments: dict[str, Any] = {"runs": given.runs, "queries": queries, argument: value}
        fold_of = {q: i % 2 for i, q in enumerate(queries)}
        return FoldScores(
            arguments["runs"],
            given.qrels,
            method="rrf",
            metric="ndcg@10",
            trained=False,
            queries=arguments["queries"],
            fold_of=fold_of,
            folds=2,
            top_k=10,
        )

    return call


def table_of(run: fanfuse.Run) -> Any:
    pytest.importorskip("pyarrow")
    return fanfuse.tables.to_arrow(run)


def fused_tables(given: Inputs, value: Any) -> Any:
    return fanfuse.tables.fuse_table(value)


def fused_labels(given: Inputs, value: Any) -> Any:
    one = table_of(given.runs[0])
    labelled = one.append_column("run", pytest.importorskip("pyarrow").array(["r"] * one.num_rows))
    return fanfuse.tables.fuse_table(labelled, run_column="run", runs=value)


def evaluated(given: Inputs, value: Any) -> Any:
    return fanfuse.tables.evaluate_table(table_of(given.runs[0]), given.qrels, value)


def scored(given: Inputs) -> list[RunScores]:
    return [score_run(run, given.qrels, ["ndcg@10"], f"run{i}") for i, run in enumerate(given.runs)]


@dataclass
class Case:
    """The call given the argument's value, a good value, a sequence with an item of the wrong type,
    the item's position and what its refusal says."""

    call: Callable[[Inputs, Any], Any]
    good: Callable[[Inputs], Any]
    wrong: Callable[[Inputs], list[Any]]
    position: int
    item: str


RUNS_ITEM = r"must be a fanfuse\.Run \(got str\)"
# Per "module.callable:argument", its case.
CASES: dict[str, Case] = {
    "fanfuse.tune.tune:runs": Case(
        tuned("runs"), lambda f: f.runs, lambda f: [f.runs[0], "run1.trec"], 1, RUNS_ITEM
    ),
    "fanfuse.tune.tune:ks": Case(tuned("ks"), lambda f: [60.0], lambda f: [60.0, "1"], 1, "must be a finite"),
    "fanfuse.tune.tune:weight_levels": Case(
        tuned("weight_levels"), lambda f: [1.0], lambda f: [1.0, "0"], 1, "must be a finite"
    ),
    "fanfuse.tune.tune:phis": Case(
        tuned("phis", method="rbc", ks=None),
        lambda f: [0.8],
        lambda f: ["0.8"],
        0,
        r"must be a number .*\(got str\)",
    ),
    "fanfuse.tune.tune:sigmas": Case(
        tuned("sigmas", method="logn_isr", ks=None, weight_levels=None),
        lambda f: [0.1],
        lambda f: [b"0.1"],
        0,
        r"must be a number .*\(got bytes\)",
    ),
    "fanfuse.tune.tune:gammas": Case(
        tuned("gammas", method="combgmnz", ks=None, weight_levels=None),
        lambda f: [1.0],
        lambda f: [None],
        0,
        "must be a finite",
    ),
    "fanfuse.tune.tune:norms": Case(
        tuned("norms", method="combsum", ks=None),
        lambda f: ["min-max"],
        lambda f: ["min-max", 1],
        1,
        r"must be one of .*\(got int\)",
    ),
    "fanfuse.tune.tune:segment_counts": Case(
        tuned("segment_counts", method="probfuse", ks=None, weight_levels=None),
        lambda f: [2],
        lambda f: [2, "5"],
        1,
        r"must be an int .*\(got str\)",
    ),
    "fanfuse.tune.tune:windows": Case(
        tuned("windows", method="slidefuse", ks=None, weight_levels=None),
        lambda f: [2],
        lambda f: [2.5],
        0,
        r"must be an int .*\(got float\)",
    ),
    "fanfuse.tune.scores.FoldScores:runs": Case(
        fold_scores("runs"), lambda f: f.runs, lambda f: [f.runs[0], "run1.trec"], 1, RUNS_ITEM
    ),
    "fanfuse.tune.scores.FoldScores:queries": Case(
        fold_scores("queries"), lambda f: ["q0", "q1", "q2", "q3"], lambda f: ["q0", 1], 1, r"must be a str"
    ),
    "fanfuse.tune.scores.check_every_fold_trains:runs": Case(
        lambda f, value: check_every_fold_trains(value, {"q0": 0, "q1": 1}),
        lambda f: f.runs,
        lambda f: [f.runs[0], "run1.trec"],
        1,
        RUNS_ITEM,
    ),
    "fanfuse.tune.space.check_numbers:values": Case(
        lambda f, value: check_numbers(value, "values", "k"),
        lambda f: [60.0],
        lambda f: ["60"],
        0,
        "must be a finite",
    ),
    "fanfuse.tune.space.weight_grid:levels": Case(
        lambda f, value: weight_grid(2, value), lambda f: [1.0], lambda f: [1.0, "1"], 1, "must be a finite"
    ),
    "fanfuse.tune.space.weight_vectors:levels": Case(
        lambda f, value: weight_vectors(2, value), lambda f: [1.0], lambda f: ["1"], 0, "must be a finite"
    ),
    # Annotated Any (one table with run_column=, else a sequence of tables).
    "fanfuse.tables.fuse_table:tables": Case(
        fused_tables,
        lambda f: [table_of(r) for r in f.runs],
        lambda f: [table_of(f.runs[0]), "run1.parquet"],
        1,
        r"must be an Arrow table .* or a pandas DataFrame \(got str\)",
    ),
    "fanfuse.tables.fuse_table:runs": Case(
        fused_labels, lambda f: ["r"], lambda f: ["r", 1], 1, "must be a str"
    ),
    "fanfuse.tables.evaluate_table:metrics": Case(
        evaluated, lambda f: ["map"], lambda f: ["map", 10], 1, "must be a str"
    ),
    "fanfuse.report.adjust:p_values": Case(
        lambda f, value: adjust(value, "holm"),
        lambda f: [0.01, 0.2],
        lambda f: [0.01, "0.2"],
        1,
        r"must be a number in \[0, 1\] \(got str\)",
    ),
    "fanfuse.report.compare:runs": Case(
        lambda f, value: compare(value, f.qrels, ["ndcg@10"]),
        lambda f: f.runs,
        lambda f: [f.runs[0], 5],
        1,
        r"must be a path .*, not int",
    ),
    "fanfuse.report.compare:metrics": Case(
        lambda f, value: compare(f.runs, f.qrels, value),
        lambda f: ["ndcg@10"],
        lambda f: ["ndcg@10", 5],
        1,
        r"must be a str, a metric name \(got int\)",
    ),
    "fanfuse.report.compare:names": Case(
        lambda f, value: compare(f.runs, f.qrels, ["ndcg@10"], names=value),
        lambda f: ["a", "b"],
        lambda f: ["a", 5],
        1,
        r"must be a str, a run name \(got int\)",
    ),
    "fanfuse.report.compare_scores:scores": Case(
        lambda f, value: compare_scores(value, ["ndcg@10"]),
        lambda f: scored(f),
        lambda f: [scored(f)[0], 5],
        1,
        r"must be a RunScores, an evaluated run \(got int\)",
    ),
    "fanfuse.report.compare_scores:metrics": Case(
        lambda f, value: compare_scores(scored(f), value),
        lambda f: ["ndcg@10"],
        lambda f: ["ndcg@10", 5],
        1,
        r"must be a str, a metric name \(got int\)",
    ),
}


def public_callables(module: ModuleType) -> Iterator[tuple[str, Any]]:
    for name, value in vars(module).items():
        defined_here = getattr(value, "__module__", None) == module.__name__
        if (
            defined_here
            and not name.startswith("_")
            and (inspect.isfunction(value) or inspect.isclass(value))
        ):
            yield f"{module.__name__}.{name}", value


def sequence_arguments() -> dict[str, str]:
    """The arguments annotated as sequences (``module.callable:argument``), each with its annotation."""
    found = {}
    for module in MODULES:
        for name, value in public_callables(module):
            for parameter in inspect.signature(value).parameters.values():
                if isinstance(parameter.annotation, str) and SEQUENCE.match(parameter.annotation):
                    found[f"{name}:{parameter.name}"] = parameter.annotation
    return found


def test_every_sequence_argument_is_checked_here() -> None:
    found = set(sequence_arguments())
    assert "fanfuse.tune.tune:runs" in found  # the introspection reads the annotations
    assert found - set(UNCHECKED) == set(CASES) - {"fanfuse.tables.fuse_table:tables"}


def argument_of(key: str) -> str:
    return key.rpartition(":")[2]


@pytest.mark.parametrize("key", list(CASES))
def test_the_good_value_is_taken(key: str, inputs: Inputs) -> None:
    case = CASES[key]
    case.call(inputs, case.good(inputs))


@pytest.mark.parametrize("bare", ["ab", b"ab", 5, None], ids=["str", "bytes", "int", "None"])
@pytest.mark.parametrize("key", list(CASES))
def test_a_value_that_is_no_sequence_is_refused_naming_the_argument(
    key: str, bare: Any, inputs: Inputs
) -> None:
    case, argument = CASES[key], argument_of(key)
    if bare is None and sequence_arguments().get(key, "").endswith("| None"):
        return  # None is the argument's default (the method's levels; no labels)
    with pytest.raises(
        TypeError, match=rf"^{argument} must be a sequence of .*\(got {type(bare).__name__}\)"
    ):
        case.call(inputs, bare)


@pytest.mark.parametrize("key", list(CASES))
def test_a_set_is_refused_as_having_no_order(key: str, inputs: Inputs) -> None:
    case, argument = CASES[key], argument_of(key)
    with pytest.raises(TypeError, match=rf"^{argument} has no order \(got set\)"):
        case.call(inputs, {"a", "b"})


@pytest.mark.parametrize("key", list(CASES))
def test_an_item_of_another_type_is_refused_naming_its_position(key: str, inputs: Inputs) -> None:
    case, argument = CASES[key], argument_of(key)
    with pytest.raises(TypeError, match=rf"^{argument}\[{case.position}\] {case.item}"):
        case.call(inputs, case.wrong(inputs))


def test_runs_read_once_from_an_iterator_tune_as_a_list(inputs: Inputs) -> None:
    options: dict[str, Any] = {"folds": 2, "ks": [10.0, 60.0], "weight_levels": [1.0]}
    assert tune(iter(inputs.runs), inputs.qrels, **options) == tune(inputs.runs, inputs.qrels, **options)
