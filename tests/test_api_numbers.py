"""Every numeric argument of every public entry point, found from the public modules themselves
(`public_modules`: the package's `__all__`, each subpackage's, and every module the docs import
from): each function and each public method of each class, with the types of `fanfuse/_core.pyi`
for the core and the signatures (and `SearchOptions`) for Python. Each numeric argument has a row in
`fanfuse.limits.LIMITS`, and every value the row refuses (out of range, NaN, infinite, huge, of the
wrong type) raises TypeError, or the class the row names (``FusionError`` for a fusion option or a
sample of the core's tests, else ``OutOfRange``) whoever checks it, naming the argument; a
huge count the row leaves unbounded is taken and the call completes. An entry point added with a
numeric argument and no call in `api_calls.py` fails the first test."""

from __future__ import annotations

import ast
import importlib
import inspect
import math
import pkgutil
import re
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import fanfuse
import numpy as np
import pytest
from api_calls import CALLS, A, Context
from fanfuse import FusionError, OutOfRange
from fanfuse.errors import TooFewQueries
from fanfuse.limits import LIMITS, Limit
from fanfuse.multiquery.planning import SearchOptions

NUMERIC = re.compile(r"\b(int|float|SupportsIndex)\b")
# Results and records, built by fanfuse from checked values, not entry points for a caller's numbers.
RECORDS = {"Hit", "FusedHit", "Provenance", "Report", "Contribution", "Fused"}
RECORDS |= {"Variant", "VariantReport", "BranchReport", "ExpansionReport", "Diagnostics"}
RECORDS |= {"FoldResult", "TuneReport"}
EXEMPT = {
    "VariantCache.key": "builds a cache key from the options a search has already checked",
    "open_index": "passes its keyword arguments to MultiQueryRetriever, enumerated here",
    "integrations.conversion.framework_hits": "the adapters' shared conversion, given the k each checked",
}
# A per-query score or a sample value: data, any finite number.
VALUE = Limit("value", float, "a score")
# The row of each numeric argument where it is not the argument's name.
ROWS = {
    "top_k": {
        f: "fused_top_k"
        for f in (
            *("rrf", "rrf_batch", "fuse", "fuse_batch", "fuse_runs", "fuse_files"),
            *("FusionOptions.__init__", "FusionOptions.replace", "fuse_table", "tune.tune"),
        )
    },
    "threads": {
        "TantivyRetriever.build": "index_threads",
        "retrievers.OnnxEncoder.__init__": "encoder_threads",
    },
    "seed": {"TfidfSvdEmbedder.__init__": "svd_seed"},
    "weight": {
        f"multiquery.HistoryExpander.{method}": "history_weight"
        for method in ("__init__", "joined_variant", "topic_variant")
    },
    "dimensions": {"retrievers.postgres.create_table": "vector_dimensions"},
    # A search's RRF constant is the core's k.
    "rrf_k": {f"MultiQueryRetriever.{method}": "k" for method in ("__init__", "search", "asearch")},
}
# A retriever's `k` (`search(query, k)`) is the hits asked of it; elsewhere `k` is the RRF constant.
RETRIEVER_METHODS = ("search", "search_batch", "statement")
# A list argument, by the row of each of its entries.
LIST_ROWS = {"weights": "weight", "variant_weights": "weight", "retriever_weights": "weight"}
LIST_ROWS |= {"p_values": "p_value", "ks": "k", "weight_levels": "weight", "phis": "phi", "sigmas": "sigma"}
LIST_ROWS |= {"gammas": "gamma", "segment_counts": "segments", "windows": "window"}
DATA = {"a", "b", "groups", "scores"}


def stub_signatures() -> dict[str, dict[str, str]]:
    """The core's parameters and their annotations, from its stub."""
    tree = ast.parse((Path(fanfuse.__file__).parent / "_core.pyi").read_text())
    out: dict[str, dict[str, str]] = {}
    # Keyword arguments typed `**kwargs: Unpack[SomeTypedDict]` are that TypedDict's fields.
    classes = {node.name: node for node in tree.body if isinstance(node, ast.ClassDef)}

    def fields(name: str) -> dict[str, str]:  # a class's annotated fields, its bases' included
        node = classes.get(name)
        if node is None:
            return {}
        inherited = [fields(base.id) for base in node.bases if isinstance(base, ast.Name)]
        own = {
            f.target.id: ast.unparse(f.annotation)
            for f in node.body
            if isinstance(f, ast.AnnAssign) and isinstance(f.target, ast.Name)
        }
        return {k: v for part in [*inherited, own] for k, v in part.items()}

    typed_dicts = {name: fields(name) for name in classes}

    def walk(nodes: list[ast.stmt], prefix: str) -> None:
        for node in nodes:
            if isinstance(node, ast.FunctionDef):
                arguments = [*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs]
                out[prefix + node.name] = {
                    a.arg: ast.unparse(a.annotation) for a in arguments if a.annotation
                }
                kwarg = node.args.kwarg
                if kwarg is not None and kwarg.annotation is not None:
                    unpacked = ast.unparse(kwarg.annotation).removeprefix("Unpack[").removesuffix("]")
                    out[prefix + node.name] |= typed_dicts.get(unpacked, {})
            elif isinstance(node, ast.ClassDef):
                walk(node.body, f"{node.name}.")

    walk(tree.body, "")
    out |= {f"{name}.": fields for name, fields in typed_dicts.items() if fields}
    return out


# The public modules whose optional extra is not installed here, as the walk met them.
UNAVAILABLE: set[str] = set()


def public_modules() -> Iterator[ModuleType]:
    """The modules whose names are API: the package, each subpackage that lists its names in
    `__all__` (a subpackage that does not, like `integrations`, by its modules), and every module the
    README and docs/ import from. One whose optional extra is not installed is left out."""
    names = ["fanfuse"]
    for info in pkgutil.iter_modules(fanfuse.__path__, "fanfuse."):
        if info.ispkg and not info.name.rpartition(".")[2].startswith("_") and info.name != "fanfuse.cli":
            names.append(info.name)
    docs = Path(__file__).resolve().parents[1] / "docs"
    texts = "".join(p.read_text() for p in [docs.parent / "README.md", *sorted(docs.glob("*.md"))])
    names += re.findall(r"(?:from|import) (fanfuse(?:\.\w+)+)", texts)
    done: set[str] = set()
    UNAVAILABLE.clear()
    while names:
        name = names.pop(0)
        if name in done:
            continue
        done.add(name)
        try:
            module = importlib.import_module(name)
        except ImportError:
            UNAVAILABLE.add(name.removeprefix("fanfuse."))
            continue
        if name != "fanfuse" and not hasattr(module, "__all__") and hasattr(module, "__path__"):
            for info in pkgutil.iter_modules(module.__path__, f"{name}."):
                if not info.name.rpartition(".")[2].startswith("_"):
                    names.append(info.name)
        yield module


def module_names(module: ModuleType) -> list[str]:
    """`__all__`, else the public names the module defines itself."""
    if hasattr(module, "__all__"):
        return list(module.__all__)
    return [
        n
        for n, o in vars(module).items()
        if not n.startswith("_") and getattr(o, "__module__", "") == module.__name__
    ]


def entry_points() -> Iterator[tuple[str, dict[str, str]]]:
    stub = stub_signatures()
    seen: set[int] = set()
    for module in public_modules():
        prefix = module.__name__.removeprefix("fanfuse").removeprefix(".")
        # The core's types are the stub's, for the package's own names only.
        yield from module_entries(module, f"{prefix}." if prefix else "", stub if not prefix else {}, seen)


def module_entries(
    module: ModuleType, prefix: str, stub: dict[str, dict[str, str]], seen: set[int]
) -> Iterator[tuple[str, dict[str, str]]]:
    for name in module_names(module):
        obj = getattr(module, name)
        # A protocol is implemented by the caller's own class; a name re-exported is walked once.
        if name in RECORDS or not callable(obj) or getattr(obj, "_is_protocol", False) or id(obj) in seen:
            continue
        seen.add(id(obj))
        members = [(name, obj)]
        if inspect.isclass(obj):
            members = [(f"{name}.__init__", obj)]
            members += [(f"{name}.{m}", getattr(obj, m)) for m in dir(obj) if not m.startswith("_")]
        for qualified, member in members:
            if qualified in stub or qualified.replace("__init__", "__new__") in stub:
                yield (
                    prefix + qualified,
                    stub.get(qualified) or stub[qualified.replace("__init__", "__new__")],
                )
                continue
            inherited = not getattr(member, "__module__", "fanfuse").startswith("fanfuse")
            if inherited and not qualified.endswith("__init__"):
                continue  # a framework's own method of a class that derives from it (pydantic's)
            if getattr(member, "__isabstractmethod__", False):
                continue
            if callable(member) and (qualified.endswith("__init__") or not inspect.isclass(member)):
                try:
                    signature = inspect.signature(member)
                except (TypeError, ValueError):
                    continue
                params = {p.name: str(p.annotation) for p in signature.parameters.values()}
                for p in signature.parameters.values():  # `**kwargs: Unpack[...]` of the stub's types
                    if p.kind is inspect.Parameter.VAR_KEYWORD:
                        unpacked = str(p.annotation).removeprefix("Unpack[").removesuffix("]")
                        params |= stub.get(f"{unpacked}.", {})
                if qualified.endswith(("MultiQueryRetriever.search", "MultiQueryRetriever.asearch")):
                    params |= {k: str(v) for k, v in SearchOptions.__annotations__.items()}
                yield prefix + qualified, params


def numeric_arguments() -> list[tuple[str, str]]:
    return [
        (entry, param)
        for entry, params in entry_points()
        for param, annotation in params.items()
        if NUMERIC.search(annotation)
        and not annotation.startswith("Callable")
        and param not in ("self", "cls")
    ]


def row(entry: str, param: str) -> Limit:
    if param in DATA:
        return VALUE
    if param == "k" and entry.rpartition(".")[2] in RETRIEVER_METHODS:
        return LIMITS["retriever_k"]
    key = ROWS.get(param, {}).get(entry) or LIST_ROWS.get(param) or param
    return LIMITS[key]


def test_every_numeric_argument_has_a_row_and_a_call() -> None:
    arguments = numeric_arguments()
    assert len(arguments) >= 80
    for entry, param in arguments:
        if entry in EXEMPT:
            continue
        assert entry in CALLS, f"{entry}({param}=...): add a call to CALLS"
        row(entry, param)  # KeyError: a numeric argument without a row in fanfuse.limits.LIMITS


def test_every_call_is_of_an_entry_point_the_walk_finds() -> None:
    """A class whose constructor has no typed signature at run time would drop out of the walk, and
    its numbers out of every check here, without a failure."""
    found = {entry for entry, _ in numeric_arguments()}
    extra = [e for e in set(CALLS) - found if not any(e.startswith(f"{m}.") for m in UNAVAILABLE)]
    assert sorted(extra) == []


def outside(limit: Limit) -> list[float]:
    """The nearest values the row refuses at each bound."""
    out: list[float] = []
    for bound, is_open, direction in ((limit.low, limit.low_open, -1), (limit.high, limit.high_open, 1)):
        if bound is not None:
            if limit.kind is int:
                out.append(int(bound) + direction)
            else:
                out.append(float(bound) if is_open else math.nextafter(bound, direction * math.inf))
    return out


def bad_values(limit: Limit, entry: str) -> list[tuple[Any, type[Exception] | None]]:
    """(value, the exception it raises; None: a huge count the row takes). A fusion option (a row
    marked ``fusion_option``) and a value of the core's input (a sample of a test) are refused as
    FusionError, by the core or the library; every other row as OutOfRange."""
    in_core = hasattr(fanfuse._core, entry.partition(".")[0])
    refused = FusionError if limit.fusion_option or (in_core and limit is VALUE) else OutOfRange
    values: list[tuple[Any, type[Exception] | None]] = [(v, refused) for v in outside(limit)]
    values += [("3", TypeError), (True, TypeError), (np.True_, TypeError), ([3], TypeError)]
    if limit.kind is int:
        values += [(1.5, TypeError), (math.nan, TypeError), (-(2**70), refused)]
        values.append((2**70, None if limit.high is None else refused))
    else:
        values += [(math.nan, refused), (math.inf, refused), (-math.inf, refused)]
        values += [(2**2000, refused), (-(2**2000), refused)]
    return values


def cases() -> Iterator[Any]:
    for entry, param in numeric_arguments():
        if entry in EXEMPT:
            continue
        limit = row(entry, param)
        for value, error in bad_values(limit, entry):
            if isinstance(value, list | str | bool) and param in DATA:
                continue  # a sample's type is checked as a whole (test_bad_arguments.py)
            named = param
            if param in LIST_ROWS or param in DATA:
                if error is None:
                    continue
                value, named = _inside(entry, param, value)
            yield pytest.param(entry, param, value, error, named, id=f"{entry}-{param}={value!r}"[:100])


def _inside(entry: str, param: str, value: Any) -> tuple[Any, str]:
    """A list argument with `value` as its second entry (`retriever_weights`: a retriever's weight)."""
    if param == "retriever_weights":
        return {"bm25": value} if entry.endswith("__init__") else {"TantivyRetriever": value}, param
    if param == "groups":
        return [A, [0.5, value]], "groups[1][1]"
    if param in ("a", "b"):
        return [A[0], value, *A[2:]], f"{param}[1]"
    if param == "scores":
        return [value], "score"  # named as a file's line is: "<columns>:1: score NaN is not finite"
    return [taken(LIMITS[LIST_ROWS[param]]), value], f"{param}[1]"


def taken(limit: Limit) -> int | float:
    """A value the row takes: its lower bound, or a number inside an open or missing one."""
    if limit.kind is int:
        return int(limit.low or 0)
    if limit.low is not None and limit.high is not None:
        return (limit.low + limit.high) / 2
    if limit.low is not None:
        return limit.low + 1.0
    return 1.0 if limit.high is None else limit.high - 1.0


@pytest.fixture(scope="module")
def context(
    small_runs: dict[str, str], tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest
) -> Iterator[Context]:
    with Context(small_runs, tmp_path_factory.mktemp("api-numbers"), request.getfixturevalue) as context:
        yield context


@pytest.mark.parametrize(("entry", "param", "value", "error", "named"), list(cases()))
def test_a_bad_number_is_refused_naming_the_argument(
    context: Context, entry: str, param: str, value: Any, error: type[Exception] | None, named: str
) -> None:
    if error is None:
        # Taken (the count means "all"), or refused by the bound of what is there (the runs given).
        try:
            assert CALLS[entry](context, **{param: value}) is not None
        except (FusionError, OutOfRange, TooFewQueries) as refused:
            assert str(refused).startswith(f"{param} must be"), str(refused)
        return
    with pytest.raises(Exception) as raised:  # the type is asserted exactly below
        CALLS[entry](context, **{param: value})
    assert type(raised.value) is error, f"{type(raised.value).__name__}: {raised.value}"
    assert named in str(raised.value), str(raised.value)
