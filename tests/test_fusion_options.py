"""`FusionOptions`: the one value of the fusion options, and every fusion entry point of the core taking
it. The entry points are found by introspection (every function of `fanfuse._core` whose name says it
fuses), so one added without `options=` fails here; each must give the same result for `options=` and
for the same keywords, refuse both at once, refuse an unknown option, and name every option it does
not read (or the core says why it refuses it) rather than ignore it."""

from __future__ import annotations

import ast
import inspect
import pickle
from collections.abc import Callable
from pathlib import Path
from typing import Any

import fanfuse
import pytest
from fanfuse import FusionOptions, _core
from fanfuse._core import FUSION_OPTIONS, METHOD_PARAMETERS, METHODS, SCORE_METHODS, FusionError

LISTS = [["a", "b", "c"], ["b", "c", "d"]]
RUN = _core.Run.from_columns(["q1", "q1"], ["a", "b"], [2.0, 1.0], name="r")
SCORED = [[("a", 3.0), ("b", 2.0), ("c", 1.0)], [("b", 5.0), ("c", 4.0), ("d", 0.5)]]
# A value other than the default for each option, valid together with the defaults of the others.
CHANGED: dict[str, Any] = {
    "method": "rbc",
    "norm": "none",
    "k": 10.0,
    "weights": [1.0, 2.0],
    "top_k": 2,
    "tie_break": "id",
    "duplicates": "max",
    "explain": True,
    "phi": 0.5,
    "sigma": 0.5,
    "gamma": 2.0,
}


def fusion_entry_points() -> dict[str, Callable[..., Any]]:
    return {
        name: getattr(_core, name)
        for name in dir(_core)
        if ("fuse" in name.split("_") or "rrf" in name.split("_")) and callable(getattr(_core, name))
    }


def comparable(result: Any, output: Path | None) -> Any:
    """What a call produced, as plain data to compare."""
    if isinstance(result, list):
        return [comparable(r, None) for r in result]
    if isinstance(result, fanfuse.Fused):
        return list(result), result.explain is not None
    if isinstance(result, fanfuse.Run):
        return result.columns()
    if output is not None:  # fuse_files: what it wrote
        return result, output.read_bytes()
    pa = pytest.importorskip("pyarrow")
    return pa.record_batch(result).to_pydict()


class Calls:
    """One valid call per entry point, on small inputs; the options are passed through."""

    def __init__(self, small_runs: dict[str, str], directory: Path) -> None:
        self.paths = [small_runs["run0"], small_runs["run1"]]
        self.runs = [fanfuse.read_run(p) for p in self.paths]
        self.directory = directory

    def call(self, name: str, **options: Any) -> Any:
        output = self.directory / "out.trec"
        if name == "rrf":
            return comparable(_core.rrf(LISTS, **options), None)
        if name == "rrf_batch":
            return comparable(_core.rrf_batch([LISTS, LISTS], **options), None)
        if name == "fuse":
            return comparable(_core.fuse(SCORED, **options), None)
        if name == "fuse_batch":
            return comparable(_core.fuse_batch([SCORED, SCORED], **options), None)
        if name == "fuse_runs":
            return comparable(_core.fuse_runs(self.runs, **options), None)
        if name == "fuse_files":
            return comparable(_core.fuse_files(self.paths, str(output), **options), output)
        if name == "fuse_tables":
            pa = pytest.importorskip("pyarrow")
            tables = [
                pa.table(dict(zip(("qid", "docid", "rank", "score"), r.columns(), strict=True)))
                for r in self.runs
            ]
            return comparable(_core.fuse_tables(tables, names=["a", "b"], **options), None)
        if name == "fuse_rows":
            pytest.importorskip("pyarrow")
            read = (_core.read_run_block(p, run=i) for i, p in enumerate(self.paths))
            blocks, rows = zip(*read, strict=True)
            batches = [b for batch in rows for b in batch]
            return comparable(
                _core.fuse_rows(batches, blocks=list(blocks), names=["a", "b"], **options), None
            )
        raise AssertionError(f"{name}: a fusion entry point without a call in Calls.call")


@pytest.fixture(scope="module")
def calls(small_runs: dict[str, str], tmp_path_factory: pytest.TempPathFactory) -> Calls:
    return Calls(small_runs, tmp_path_factory.mktemp("fusion-options"))


ENTRY_POINTS = sorted(fusion_entry_points())


def test_the_fusion_entry_points_are_found() -> None:
    assert {"rrf", "rrf_batch", "fuse", "fuse_batch", "fuse_runs", "fuse_files", "fuse_tables"} <= set(
        ENTRY_POINTS
    )


@pytest.mark.parametrize("name", ENTRY_POINTS)
def test_every_entry_point_takes_the_value_or_its_keywords(name: str) -> None:
    parameters = inspect.signature(fusion_entry_points()[name]).parameters
    assert parameters["options"].kind is inspect.Parameter.KEYWORD_ONLY
    assert any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters.values())
    declared = {p for p in parameters if p in CHANGED}
    assert not declared, f"{name} declares fusion options of its own: {declared}"


@pytest.mark.parametrize("name", ENTRY_POINTS)
def test_options_and_keywords_give_the_same_result(calls: Calls, name: str) -> None:
    given = {"k": 10.0, "top_k": 2, "weights": [1.0, 3.0]}
    by_keywords = calls.call(name, **given)
    assert calls.call(name, options=FusionOptions(**given)) == by_keywords
    assert by_keywords != calls.call(name)  # the options are read


@pytest.mark.parametrize("name", ENTRY_POINTS)
def test_both_at_once_and_unknown_options_are_refused(calls: Calls, name: str) -> None:
    with pytest.raises(TypeError, match=r"options= or option keywords, not both"):
        calls.call(name, options=FusionOptions(k=1.0), k=1.0)
    with pytest.raises(TypeError, match=r"unexpected keyword argument 'kk'"):
        calls.call(name, kk=1.0)


@pytest.mark.parametrize("name", ENTRY_POINTS)
@pytest.mark.parametrize("option", sorted(CHANGED))
def test_an_option_is_read_or_refused_by_name(calls: Calls, name: str, option: str) -> None:
    for given in ({option: CHANGED[option]}, {"options": FusionOptions(**{option: CHANGED[option]})}):
        try:
            calls.call(name, **given)
        except TypeError as error:
            if "options" in given:  # no keyword was given: the message names the value that holds it
                assert f"does not read the fusion option '{option}' that options= holds" in str(error)
            else:
                assert f"unexpected keyword argument '{option}': it does not read" in str(error)
        except FusionError as error:  # refused by the core with its reason
            assert str(error).startswith(f"{option} "), error


def test_the_value_is_checked_once_when_built() -> None:
    with pytest.raises(FusionError, match=r"^k must be a finite number > 0"):
        FusionOptions(k=0)
    with pytest.raises(TypeError, match=r"^k must be a number \(got NoneType\)"):
        FusionOptions(k=None)
    with pytest.raises(FusionError, match=r"^weights\[1\] must be a finite number >= 0"):
        FusionOptions(weights=[1.0, -1.0])
    with pytest.raises(FusionError, match=r"method 'isr' has no per-list weights"):
        FusionOptions(method="isr", weights=[1.0, 2.0])
    with pytest.raises(FusionError, match=r"^tie_break must be 'rank' or 'id'"):
        FusionOptions(tie_break="score")
    with pytest.raises(TypeError, match=r"^explain must be a bool"):
        FusionOptions(explain=1)
    with pytest.raises(TypeError, match=r"FusionOptions\(\) got an unexpected keyword argument 'topk'"):
        FusionOptions(topk=1)
    with pytest.raises(FusionError, match=r"reads ranks only"):
        FusionOptions().replace(method="rrf", norm="max")


def test_the_value_says_what_the_method_reads() -> None:
    for method in METHODS:
        options = FusionOptions(method=method)
        assert options.method == method
        assert options.reads_scores == (method in SCORE_METHODS)
        assert options.takes_weights == ("weights" in METHOD_PARAMETERS[method])
    assert FusionOptions().method == "rrf"


def test_the_value_is_frozen_compared_pickled_and_replaced() -> None:
    options = FusionOptions(method="combsum", norm="max", top_k=None, weights=[1.0, 2.0])
    assert pickle.loads(pickle.dumps(options)) == options
    assert eval(repr(options), {"FusionOptions": FusionOptions}) == options
    assert FusionOptions() == FusionOptions(k=60.0)  # equal values, however given
    assert FusionOptions() != FusionOptions(top_k=None)  # unset top_k is the entry point's default
    changed = options.replace(k=5)
    assert (changed.k, changed.method, options.k) == (5.0, "combsum", FusionOptions().k)
    assert options.given() == {"method": "combsum", "norm": "max", "weights": [1.0, 2.0], "top_k": None}
    with pytest.raises(AttributeError):
        options.k = 1.0  # type: ignore[misc]


def test_every_option_is_a_property_reading_the_core() -> None:
    """The face's properties are the core's options (`FUSION_OPTIONS`) and what the method reads,
    each the value the core holds."""
    properties = {name for name, value in vars(FusionOptions).items() if isinstance(value, property)}
    assert properties == {*FUSION_OPTIONS, "reads_scores", "takes_weights"}
    for name in FUSION_OPTIONS:
        options = FusionOptions(**{name: CHANGED[name]})
        assert getattr(options, name) == CHANGED[name] == options.given()[name]
        assert getattr(FusionOptions(), name) == FusionOptions()._value(name)


def test_the_face_is_frozen_and_keeps_its_class() -> None:
    options = FusionOptions(method="combsum", top_k=3)
    assert isinstance(options, _core._FusionOptions) and not hasattr(options, "__dict__")
    with pytest.raises(AttributeError):
        options.other = 1  # type: ignore[attr-defined]
    with pytest.raises(TypeError, match="unhashable"):
        hash(options)
    assert type(options.replace(k=5)) is type(pickle.loads(pickle.dumps(options))) is FusionOptions
    # Written by protocol 4 from `fanfuse.FusionOptions(k=3)`: the public path, whatever module defines it.
    written = (
        b"\x80\x04\x950\x00\x00\x00\x00\x00\x00\x00\x8c\x07fanfuse\x94\x8c\rFusionOptions\x94\x93\x94)}"
        b"\x94\x8c\x01k\x94G@\x08\x00\x00\x00\x00\x00\x00s\x92\x94."
    )
    assert pickle.loads(written) == FusionOptions(k=3)
    assert pickle.dumps(FusionOptions(k=3), protocol=4) == written


def test_top_k_unset_keeps_every_hit_in_memory_and_the_run_file_depth_in_runs(calls: Calls) -> None:
    long = [[f"d{i}" for i in range(1500)]]
    assert len(_core.fuse(long)) == 1500
    deep = fanfuse.Run.from_columns(
        ["q"] * 1500, [f"d{i}" for i in range(1500)], [float(-i) for i in range(1500)]
    )
    assert len(_core.fuse_runs([deep]).columns()[0]) == 1000
    assert len(_core.fuse_runs([deep], top_k=None).columns()[0]) == 1500


PYTHON = Path(fanfuse.__file__).parent
FUSING = {"fuse", "fuse_batch", "rrf", "rrf_batch", "fuse_runs", "fuse_files", "fuse_tables"}


@pytest.mark.parametrize(
    ("module", "allowed"),
    [("multiquery/fusion.py", {"fuse_outcomes"}), ("tune/space.py", set()), ("service/app.py", set())],
)
def test_the_python_layers_never_fuse_to_check_options(module: str, allowed: set[str]) -> None:
    """Options are checked by building a FusionOptions, never by fusing sample lists."""
    tree = ast.parse((PYTHON / module).read_text(encoding="utf-8"))
    for function in ast.walk(tree):
        if not isinstance(function, ast.FunctionDef | ast.AsyncFunctionDef) or function.name in allowed:
            continue
        for node in ast.walk(function):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
                assert node.func.id not in FUSING, f"{module}: {function.name} calls {node.func.id}"


def _sample_values(node: ast.Call) -> list[str]:
    """The keywords of `node` given a literal list or tuple of numbers: sample values, not a caller's."""
    return [
        keyword.arg or "**"
        for keyword in node.keywords
        if isinstance(keyword.value, ast.List | ast.Tuple)
        and keyword.value.elts
        and all(isinstance(e, ast.Constant) and isinstance(e.value, int | float) for e in keyword.value.elts)
    ]


def test_the_package_never_checks_options_with_sample_values() -> None:
    """An option is checked with the value a caller gave, never by building options from made-up
    numbers to get the core's refusal (every module of the package is read)."""
    for path in sorted(PYTHON.rglob("*.py")):
        if path.name == "reference.py":  # the spec, in plain Python: it calls nothing
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call):
                assert not _sample_values(node), f"{path.relative_to(PYTHON)}:{node.lineno}"


def test_a_search_checks_the_weights_it_was_given() -> None:
    from fanfuse.multiquery import fusion

    assert fusion.checked({"method": "isr"}, weights=[1.0, 0.0, 1.0]).method == "isr"
    with pytest.raises(FusionError, match=r"method 'isr' has no per-list weights.*variant_weights x retr"):
        fusion.checked({"method": "isr"}, weights=[1.0, 0.5])
    assert fusion.checked({"method": "wsum"}, weights=[0.5, 3.0]).takes_weights
    with pytest.raises(TypeError, match="keyword weighted is renamed: use weights"):
        fusion.checked({"method": "isr"}, weighted=True)  # type: ignore[call-arg]


def test_checking_search_options_runs_no_fusion(monkeypatch: pytest.MonkeyPatch) -> None:
    from fanfuse.multiquery import fusion

    fused: list[object] = []
    real = fusion.fuse
    monkeypatch.setattr(fusion, "fuse", lambda *a, **kw: fused.append(a) or real(*a, **kw))
    settings = fusion.checked({"method": "combsum", "norm": "max", "rrf_k": 10.0})
    assert (settings.reads_scores, settings.takes_weights) == (True, True)
    assert fusion.takes_weights("isr") is False
    with pytest.raises(FusionError, match="reads ranks only"):
        fusion.checked({"method": "isr", "norm": "max"})
    assert fused == []


@pytest.mark.parametrize(
    ("call", "option"),
    [
        (lambda: FusionOptions(sigma=2.0), "sigma"),
        (lambda: FusionOptions(method="rrf", norm="max"), "norm"),
        (lambda: FusionOptions(method="isr", weights=[1.0, 2.0]), "weights"),
        (lambda: FusionOptions(tie_break="score"), "tie_break"),
        (lambda: _core.fuse(LISTS, norm="max"), "norm"),  # the method left unset is rrf
        (lambda: _core.fuse_runs([], method="probfuse"), "method"),  # a trained method needs a model
        # Refused where the fusion meets its lists: weights that do not fit them, a run fusion's tie break.
        (lambda: _core.fuse([["a", "b"]], weights=[1.0, 2.0]), "weights"),
        (lambda: _core.rrf([["a"], ["b"]], weights=[1.0]), "weights"),
        (lambda: _core.fuse_batch([[["a"]], [["a"], ["b"]]], weights=[1.0]), "weights"),
        (lambda: _core.fuse_runs([RUN], tie_break="id"), "tie_break"),
        (lambda: _core.fuse_runs([RUN], weights=[0.0]), "weights"),
    ],
)
def test_a_refused_option_is_named_by_the_error(call: Callable[[], object], option: str) -> None:
    with pytest.raises(FusionError) as refused:
        call()
    assert refused.value.option == option


# For every fusion option: a value of the wrong type, and one of the right type that is refused.
BAD_VALUES: dict[str, tuple[object, object]] = {
    "method": (1, "nope"),
    "norm": (1, "nope"),
    "k": ("60", 0.0),
    "weights": ("1,2", [-1.0]),
    "top_k": (1.5, -1),
    "tie_break": (1, "nope"),
    "duplicates": (1, "nope"),
    "explain": (1, None),
    "phi": ("0.5", 2.0),
    "sigma": ("0.5", -1.0),
    "gamma": ("1", float("nan")),
}


def test_every_fusion_option_has_bad_values() -> None:
    assert sorted(BAD_VALUES) == sorted(_core.FUSION_OPTIONS)


@pytest.mark.parametrize("option", sorted(BAD_VALUES))
@pytest.mark.parametrize("kind", ["wrong type", "refused value"])
def test_every_refused_option_value_is_named_by_the_error(option: str, kind: str) -> None:
    value = BAD_VALUES[option][kind == "refused value"]
    with pytest.raises((TypeError, ValueError)) as refused:
        FusionOptions(**{option: value})
    assert getattr(refused.value, "option", None) == option, refused.value
