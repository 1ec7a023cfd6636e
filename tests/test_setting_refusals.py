"""Every parameter of the core's entry points that names a choice (typed in the stubs by a Literal of
names, or a metric or a tag), given a value it does not accept, is refused naming it: a fusion
option (a keyword of the fusion options) as ``FusionError``, any other setting (where ranks come
from, a run file's format and tag, the method to train, a metric) as ``InvalidSetting``, the class
the library's own checks of a setting raise. Found from both stubs of the core (``_core.pyi`` and
``_core/_internal.pyi``), so a parameter added to them without a call below fails the first test."""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import fanfuse
import pytest
from fanfuse import FusionError, InvalidSetting, _core
from fanfuse._core import _internal

CORE_STUB = Path(fanfuse.__file__).parent / "_core.pyi"
INTERNAL_STUB = Path(fanfuse.__file__).parent / "_core" / "_internal.pyi"
# A parameter names a choice when its type is a Literal of names (the aliases of fanfuse.choices are).
CHOICE = re.compile(r"\b(Literal|RankFrom|RunFormat|TrainedMethod|AnyMethod|Norm|TieBreak|DuplicatePolicy)\b")
# Settings typed as plain str that accept only some strs, and a value each refuses.
RULED_STRINGS: dict[str, Any] = {"tag": "two words", "metric": "ndgc@10", "metrics": ["ndgc@10"]}
# The name a refusal starts with, where it is not the parameter's own (each metric is named).
NAMED = {"metrics": "metric"}
EXEMPT = {"_FusionOptions._value": "the options face's reader of the core's properties, named by the face"}


def parameters(stub: Path, keywords: dict[str, list[str]]) -> Iterator[tuple[str, str, bool]]:
    """(entry, parameter, whether it is a fusion option) for each choice-naming parameter of `stub`:
    a fusion option is a field of the TypedDict the entry's ``**kwargs`` unpacks (`keywords`)."""

    def walk(nodes: list[ast.stmt], prefix: str) -> Iterator[tuple[str, str, bool]]:
        for node in nodes:
            if isinstance(node, ast.ClassDef) and not node.name.startswith("_Rrf"):
                yield from walk(node.body, f"{node.name}.")
            if not isinstance(node, ast.FunctionDef):
                continue
            for arg in [*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs]:
                annotation = ast.unparse(arg.annotation) if arg.annotation else ""
                if CHOICE.search(annotation) or arg.arg in RULED_STRINGS:
                    yield prefix + node.name, arg.arg, False
            kwarg = node.args.kwarg
            if kwarg is not None and kwarg.annotation is not None:
                unpacked = ast.unparse(kwarg.annotation).removeprefix("Unpack[").removesuffix("]")
                yield from ((prefix + node.name, name, True) for name in keywords.get(unpacked, []))

    yield from walk(ast.parse(stub.read_text(encoding="utf-8")).body, "")


def option_keywords() -> dict[str, list[str]]:
    """The fields that name a choice of each TypedDict of option keywords in the core's stub, its
    bases' included."""
    classes = {
        n.name: n
        for n in ast.parse(CORE_STUB.read_text(encoding="utf-8")).body
        if isinstance(n, ast.ClassDef)
    }

    def fields(name: str) -> list[str]:
        node = classes[name]
        inherited = [
            f
            for base in node.bases
            if isinstance(base, ast.Name) and base.id in classes
            for f in fields(base.id)
        ]
        own = [
            f.target.id
            for f in node.body
            if isinstance(f, ast.AnnAssign)
            and isinstance(f.target, ast.Name)
            and CHOICE.search(ast.unparse(f.annotation))
        ]
        return inherited + own

    return {name: fields(name) for name, node in classes.items() if name.endswith("Keywords")}


def choice_parameters() -> list[tuple[str, str, bool]]:
    keywords = option_keywords()
    found = [*parameters(CORE_STUB, keywords), *parameters(INTERNAL_STUB, keywords)]
    return sorted({(entry, name, option) for entry, name, option in found if entry not in EXEMPT})


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    folder = tmp_path_factory.mktemp("setting-refusals")
    (folder / "run.trec").write_text("q 0 d 1 1.0 r\n", encoding="utf-8")
    (folder / "qrels.txt").write_text("q 0 d 1\n", encoding="utf-8")
    return {
        "run": str(folder / "run.trec"),
        "qrels": str(folder / "qrels.txt"),
        "out": str(folder / "out.trec"),
    }


def _table() -> Any:
    return pytest.importorskip("pyarrow").table({"qid": ["q"], "docid": ["d"], "score": [1.0]})


RUN = _core.Run.from_columns(["q"], ["d"], [1.0])
LISTS = [["a", "b"], ["b"]]
# A call of each entry point with one keyword's value given, the rest valid.
Call = Callable[[dict[str, str], dict[str, Any]], object]
CALLS: dict[str, Call] = {
    "rrf": lambda f, kw: _core.rrf(LISTS, **kw),
    "rrf_batch": lambda f, kw: _core.rrf_batch([LISTS], **kw),
    "fuse": lambda f, kw: _core.fuse(LISTS, **kw),
    "fuse_batch": lambda f, kw: _core.fuse_batch([LISTS], **kw),
    "_FusionOptions.__new__": lambda f, kw: fanfuse.FusionOptions(**kw),
    "fuse_runs": lambda f, kw: _core.fuse_runs([RUN, RUN], **kw),
    "fuse_files": lambda f, kw: _core.fuse_files([f["run"], f["run"]], f["out"], **kw),
    "Run.from_columns": lambda f, kw: _core.Run.from_columns(["q"], ["d"], [1.0], **kw),
    "Run.write": lambda f, kw: RUN.write(f["out"], **kw),
    "read_run": lambda f, kw: _core.read_run(f["run"], **kw),
    "runs_from_table": lambda f, kw: _core.runs_from_table(_table(), **kw),
    "fuse_tables": lambda f, kw: _core.fuse_tables([_table(), _table()], names=["a", "b"], **kw),
    "train_fusion": lambda f, kw: _core.train_fusion([RUN, RUN], _core.read_qrels(f["qrels"]), **kw),
    "evaluate": lambda f, kw: _core.evaluate(RUN, _core.read_qrels(f["qrels"]), **kw),
    "metric_depth": lambda f, kw: _core.metric_depth(kw["metric"]),
    "read_table_block": lambda f, kw: _internal.read_table_block(_table(), **kw),
    "fuse_rows": lambda f, kw: _internal.fuse_rows([], blocks=[], names=["run"], **{"format": "trec", **kw}),
    "run_from_rows": lambda f, kw: _internal.run_from_rows([], blocks=[], name="run", **kw),
    "_kernel_seconds": lambda f, kw: _internal._kernel_seconds([LISTS], **kw),
}


def test_every_choice_naming_parameter_has_a_call() -> None:
    found = choice_parameters()
    assert len(found) >= 40, "the stubs' choice parameters were found"
    assert {"rank_from", "format", "tag", "metrics", "tie_break", "norm"} <= {name for _, name, _ in found}
    assert sorted({entry for entry, _, _ in found}) == sorted(CALLS)


@pytest.mark.parametrize(("entry", "name", "option"), choice_parameters())
def test_a_value_not_accepted_is_refused_by_what_it_is(
    files: dict[str, str], entry: str, name: str, option: bool
) -> None:
    value = RULED_STRINGS.get(name, "nope")
    with pytest.raises(Exception) as raised:  # the type is asserted exactly below
        CALLS[entry](files, {name: value})
    expected = FusionError if option else InvalidSetting
    assert type(raised.value) is expected, f"{type(raised.value).__name__}: {raised.value}"
    assert re.match(rf"{NAMED.get(name, name)}\b", str(raised.value)), str(raised.value)


def test_a_comparison_refuses_a_metric_as_it_refuses_a_test(files: dict[str, str]) -> None:
    """A comparison's settings are refused alike, whichever layer checks them."""
    runs, qrels = [RUN, RUN], _core.read_qrels(files["qrels"])
    with pytest.raises(InvalidSetting, match=r"^metric 'ndgc@10'"):
        fanfuse.compare(runs, qrels, ["ndgc@10"])
    with pytest.raises(InvalidSetting, match=r"^test must be one of"):
        fanfuse.compare(runs, qrels, ["ndcg@10"], test="nope")  # type: ignore[arg-type]
