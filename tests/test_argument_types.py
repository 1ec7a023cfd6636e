"""Every argument of every public function and method of the core, given a value of a type it does not
take, is refused with an error whose message names the argument (a table: by its `name`, "table" by
default) and says what it takes: never pyo3's
own message, which names only the types (`'int' object is not an instance of 'str'`; the argument is
in a note on Python 3.11 and later, and nowhere on 3.10). The entry points and their parameters are
the stub's (`test_api_numbers.stub_signatures`), so a new one without a call here fails."""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import fanfuse
import pytest
from test_api_numbers import stub_signatures

RUN = "q1 Q0 a 1 2.0 t\nq1 Q0 b 2 1.0 t\nq2 Q0 a 1 1.0 t\n"
QRELS = "q1 0 a 1\nq2 0 b 1\n"
# What no parameter takes.
WRONG = object()
# A type named with the article of a consonant: "not a object", "is a int".
MISSPELT_ARTICLE = re.compile(r"\ba (?:[aeiou]\w*)\b")
# Parameters refused otherwise, or not at all: the Arrow protocol's schema request, which a batch
# ignores (it has one schema); a subscript, refused in the words of a list's (`Fused indices must be
# integers, not object`, tests/test_bad_arguments.py).
NOT_NAMED = {
    "ArrowBatch.__arrow_c_array__ requested_schema": "any object: ignored",
    "Run.__arrow_c_array__ requested_schema": "any object: ignored",
    "Fused.__getitem__ index": "a subscript, refused as a list refuses one",
}


class Inputs:
    """Valid inputs for every call: a run and qrels in files and in memory, a trained model, a table."""

    def __init__(self, directory: Path) -> None:
        (directory / "run.trec").write_text(RUN)
        (directory / "qrels.txt").write_text(QRELS)
        self.directory = directory
        self.paths = [str(directory / "run.trec")] * 2
        self.run = fanfuse.read_run(self.paths[0])
        self.runs = [self.run, self.run]
        self.qrels = fanfuse.read_qrels(str(directory / "qrels.txt"))
        self.model = fanfuse.train_fusion([self.run, self.run], self.qrels, method="probfuse")
        self.table = self.run  # a Run is an Arrow array (its PyCapsule protocol)


def calls(i: Inputs) -> dict[str, tuple[Callable[..., Any], dict[str, Any]]]:
    """Each entry point of the stub with a callable and a valid value of each of its parameters."""
    out = str(i.directory / "out.trec")
    lists = [["a", "b"], ["b", "c"]]
    return {
        "FusionModel.from_json": (fanfuse.FusionModel.from_json, {"text": i.model.to_json()}),
        "FusionModel.load": (fanfuse.FusionModel.load, {"path": str(i.directory / "m.json")}),
        "FusionModel.save": (i.model.save, {"path": str(i.directory / "m.json")}),
        "Qrels.subset": (i.qrels.subset, {"qids": ["q1"]}),
        "Run.from_columns": (
            fanfuse.Run.from_columns,
            {"qids": ["q"], "docids": ["d"], "scores": [1.0], "name": "r", "rank_from": "score"},
        ),
        "Run.subset": (i.run.subset, {"qids": ["q1"]}),
        "Run.write": (i.run.write, {"path": out, "format": "trec", "tag": "t", "collection": None}),
        "evaluate": (fanfuse.evaluate, {"run": i.run, "qrels": i.qrels, "metrics": ["ndcg@10"]}),
        "fuse": (fanfuse.fuse, {"runs": lists, "options": None, "content_keys": None}),
        "fuse_batch": (fanfuse.fuse_batch, {"queries": [lists], "options": None, "threads": 1}),
        "fuse_files": (
            fanfuse.fuse_files,
            {
                "inputs": i.paths,
                "output": out,
                "options": None,
                "rank_from": "score",
                "format": "trec",
                "collection": None,
                "tag": "t",
                "threads": 1,
                "progress": None,
                "model": None,
            },
        ),
        "fuse_runs": (
            fanfuse.fuse_runs,
            {"runs": [i.run, i.run], "options": None, "threads": 1, "model": None},
        ),
        "fuse_tables": (
            fanfuse._core.fuse_tables,
            {
                "tables": [i.table, i.table],
                "names": ["a", "b"],
                "run_column": None,
                "runs": None,
                "rank_from": "score",
                "options": None,
                "threads": 1,
            },
        ),
        "metric_depth": (fanfuse.metric_depth, {"metric": "ndcg@10"}),
        "paired_t": (fanfuse.paired_t, {"a": [0.1, 0.2], "b": [0.2, 0.4]}),
        "qrels_from_table": (fanfuse._core.qrels_from_table, {"table": i.table, "name": "table"}),
        "randomization_test": (
            fanfuse.randomization_test,
            {"a": [0.1, 0.2], "b": [0.2, 0.4], "iterations": 10, "seed": 0},
        ),
        "read_qrels": (fanfuse.read_qrels, {"path": str(i.directory / "qrels.txt")}),
        "read_run": (fanfuse.read_run, {"path": i.paths[0], "rank_from": "score"}),
        "rrf": (fanfuse.rrf, {"lists": lists, "options": None}),
        "rrf_batch": (fanfuse.rrf_batch, {"queries": [lists], "options": None, "threads": 1}),
        "runs_from_table": (
            fanfuse._core.runs_from_table,
            {"table": i.table, "name": "table", "run_column": None, "runs": None, "rank_from": "score"},
        ),
        "train_fusion": (
            fanfuse.train_fusion,
            {
                "runs": [i.run, i.run],
                "qrels": i.qrels,
                "method": "probfuse",
                "segments": None,
                "window": None,
            },
        ),
        "tukey_hsd": (fanfuse.tukey_hsd, {"groups": [[0.1, 0.2], [0.2, 0.4]]}),
        "wilcoxon_test": (fanfuse.wilcoxon_test, {"a": [0.1, 0.2], "b": [0.2, 0.4]}),
    }


def invoke(function: Callable[..., Any], arguments: dict[str, Any]) -> Any:
    """`function` called with `arguments`, the positional-only ones by position."""
    parameters = inspect.signature(function).parameters
    by_position = {n for n, p in parameters.items() if p.kind is inspect.Parameter.POSITIONAL_ONLY}
    positional = [arguments[n] for n in parameters if n in by_position]
    return function(*positional, **{n: v for n, v in arguments.items() if n not in by_position})


def cases() -> list[tuple[str, str]]:
    """(entry, parameter) for every parameter of the stub's public entry points, but the fusion options
    (`test_fusion_options.py`) and the dunder methods' other operand."""
    options = set(fanfuse._core.FUSION_OPTIONS)
    out = []
    for entry, params in sorted(stub_signatures().items()):
        if entry.startswith("_") or entry.endswith(".") or entry.split(".")[-1] in {"__eq__"}:
            continue
        out += [(entry, p) for p in params if p not in options and f"{entry} {p}" not in NOT_NAMED]
    return out


@pytest.fixture(scope="module")
def inputs(tmp_path_factory: pytest.TempPathFactory) -> Inputs:
    made = Inputs(tmp_path_factory.mktemp("argument-types"))
    made.model.save(str(made.directory / "m.json"))
    return made


def test_every_entry_point_has_a_call(inputs: Inputs) -> None:
    table = calls(inputs)
    missing = sorted({entry for entry, _ in cases()} - set(table))
    assert not missing, f"add a call to calls(): {missing}"
    for entry, param in cases():
        assert param in table[entry][1], f"{entry}: give {param} a valid value in calls()"


def test_every_call_is_valid(inputs: Inputs) -> None:
    for entry, (function, arguments) in calls(inputs).items():
        assert invoke(function, arguments) is not None or entry.endswith(("save", "write")), entry


@pytest.mark.parametrize(("entry", "param"), cases(), ids=lambda c: str(c))
def test_a_wrong_type_is_refused_naming_the_argument(inputs: Inputs, entry: str, param: str) -> None:
    function, arguments = calls(inputs)[entry]
    with pytest.raises((TypeError, ValueError)) as raised:
        invoke(function, {**arguments, param: WRONG})
    message = str(raised.value)
    assert param in message and "object" in message, f"{type(raised.value).__name__}: {message}"
    assert "is not an instance of" not in message, message
    assert not MISSPELT_ARTICLE.search(message), message
