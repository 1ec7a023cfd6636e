"""Every numeric argument of every public entry point, found from `fanfuse.__all__` itself: each
function and each public method of each class, with the types of `fanfuse/_core.pyi` for the core
and the signatures (and `SearchOptions`) for Python. Each numeric argument has a row in
`fanfuse.limits.LIMITS`, and every value the row refuses (out of range, NaN, infinite, huge, of the
wrong type) raises TypeError, or the refusal of whoever checks the row (``OutOfRange`` from
``fanfuse.limits``; the core's ``FusionError`` for a row marked ``core``), naming the argument; a
huge count the row leaves
unbounded is taken and the call completes. An entry point added with a numeric argument and no
call below fails the first test."""

from __future__ import annotations

import ast
import asyncio
import inspect
import math
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import fanfuse
import numpy as np
import pytest
from fanfuse import FusionError, OutOfRange
from fanfuse.limits import LIMITS, Limit
from fanfuse.multiquery.planning import SearchOptions
from test_cli_search_options import DOCUMENTS

NUMERIC = re.compile(r"\b(int|float|SupportsIndex)\b")
# Results and records, built by fanfuse from checked values, not entry points for a caller's numbers.
RECORDS = {"Hit", "FusedHit", "Provenance", "Report", "Contribution", "Fused"}
EXEMPT = {
    "VariantCache.key": "builds a cache key from the options a search has already checked",
    "open_index": "passes its keyword arguments to MultiQueryRetriever, enumerated here",
}
# A per-query score or a sample value: data, any finite number.
VALUE = Limit("value", float, "a score")
# The row of each numeric argument where it is not the argument's name.
ROWS = {
    "top_k": {
        f: "fused_top_k"
        for f in (
            *("rrf", "rrf_batch", "fuse", "fuse_batch", "fuse_runs", "fuse_files"),
            *("FusionOptions.__init__", "FusionOptions.replace"),
        )
    }
    | {"fuse_table": "fused_top_k"},
    "k": {
        f"{retriever}.{method}": "retriever_k"
        for retriever in ("TantivyRetriever", "DenseRetriever")
        for method in ("search", "search_batch")
    },
    "threads": {"TantivyRetriever.build": "index_threads"},
    "seed": {"TfidfSvdEmbedder.__init__": "svd_seed"},
}
LIST_ROWS = {"weights": "weight", "variant_weights": "weight", "retriever_weights": "weight"}
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


def entry_points() -> Iterator[tuple[str, dict[str, str]]]:
    stub = stub_signatures()
    for name in fanfuse.__all__:
        obj = getattr(fanfuse, name)
        if name in RECORDS or not callable(obj):
            continue
        members = [(name, obj)]
        if inspect.isclass(obj):
            members = [(f"{name}.__init__", obj)]
            members += [(f"{name}.{m}", getattr(obj, m)) for m in dir(obj) if not m.startswith("_")]
        for qualified, member in members:
            if qualified in stub or qualified.replace("__init__", "__new__") in stub:
                yield qualified, stub.get(qualified) or stub[qualified.replace("__init__", "__new__")]
            elif callable(member) and (qualified.endswith("__init__") or not inspect.isclass(member)):
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
                yield qualified, params


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
    assert sorted(set(CALLS) - found) == []


LISTS = [["a", "b"], ["b", "c"]]
SCORED = [[("a", 0.5), ("b", 0.25)], [("b", 1.0), ("c", 0.5)]]
A, B = [0.5, 0.25, 0.75, 0.1], [0.25, 0.5, 0.25, 0.2]


def embed(texts: list[str]) -> np.ndarray:
    return np.array([[len(t) + 1.0, t.count("o") + 1.0] for t in texts], dtype=np.float32)


class Context:
    def __init__(self, small_runs: dict[str, str], directory: Path) -> None:
        self.paths = [small_runs["run0"], small_runs["run1"]]
        self.runs = [fanfuse.read_run(p) for p in self.paths]
        self.qrels = fanfuse.read_qrels(small_runs["qrels"])
        self.output = str(directory / "out.trec")
        self.directory = directory
        self.index = fanfuse.TantivyRetriever.build(DOCUMENTS, directory / "idx")


def search(ctx: Context, **kw: Any) -> Any:
    return fanfuse.MultiQueryRetriever(ctx.index).search("owls at night", **kw)


def asearch(ctx: Context, **kw: Any) -> Any:
    return asyncio.run(fanfuse.MultiQueryRetriever(ctx.index).asearch("owls at night", **kw))


def mqr(ctx: Context, **kw: Any) -> Any:
    retrievers = {"bm25": ctx.index}
    return fanfuse.MultiQueryRetriever(retrievers, **kw).search("owls at night")


def llm(**kw: Any) -> Any:
    return fanfuse.LLMExpander(base_url="http://127.0.0.1:9", model="m", **kw)


def fuse_table(ctx: Context, **kw: Any) -> Any:
    pa = pytest.importorskip("pyarrow")
    table = pa.table({"qid": ["q1", "q1"], "docid": ["a", "b"], "score": [2.0, 1.0], "run": ["x", "y"]})
    return fanfuse.fuse_table(table, run_column="run", runs=["x", "y"], **kw)


def tfidf(**kw: Any) -> Any:
    pytest.importorskip("sklearn")
    return fanfuse.TfidfSvdEmbedder(**kw).fit(["owls hunt at night", "hawks hunt by day", "moles dig"])


CALLS: dict[str, Callable[..., Any]] = {
    "rrf": lambda ctx, **kw: fanfuse.rrf(LISTS, **kw),
    "rrf_batch": lambda ctx, **kw: fanfuse.rrf_batch([LISTS], **kw),
    "fuse": lambda ctx, **kw: fanfuse.fuse(SCORED, **kw),
    "fuse_batch": lambda ctx, **kw: fanfuse.fuse_batch([SCORED], **kw),
    "fuse_runs": lambda ctx, **kw: fanfuse.fuse_runs(ctx.runs, **kw),
    "fuse_files": lambda ctx, **kw: fanfuse.fuse_files(ctx.paths, ctx.output, **kw),
    "fuse_table": fuse_table,
    "FusionOptions.__init__": lambda ctx, **kw: fanfuse.FusionOptions(**kw),
    "FusionOptions.replace": lambda ctx, **kw: fanfuse.FusionOptions(k=1).replace(**kw),
    "randomization_test": lambda ctx, a=A, b=B, **kw: fanfuse.randomization_test(a, b, **kw),
    "paired_t_test": lambda ctx, a=A, b=B: fanfuse.paired_t_test(a, b),
    "paired_t": lambda ctx, a=A, b=B: fanfuse.paired_t(a, b),
    "wilcoxon_test": lambda ctx, a=A, b=B: fanfuse.wilcoxon_test(a, b),
    "tukey_hsd": lambda ctx, **kw: fanfuse.tukey_hsd(kw.get("groups", [A, B])),
    "Run.from_columns": lambda ctx, **kw: fanfuse.Run.from_columns(["q1"], ["d1"], kw.get("scores", [1.0])),
    "train_fusion": lambda ctx, **kw: fanfuse.train_fusion(
        ctx.runs, ctx.qrels, method="slidefuse" if "window" in kw else "probfuse", **kw
    ),
    "compare": lambda ctx, **kw: fanfuse.compare(ctx.runs, ctx.qrels, ["ndcg@10"], test="fisher", **kw),
    "MultiQueryRetriever.__init__": mqr,
    "MultiQueryRetriever.search": search,
    "MultiQueryRetriever.asearch": asearch,
    "HeuristicExpander.__init__": lambda ctx, **kw: fanfuse.HeuristicExpander(**kw).expand("owls at night"),
    "HeuristicExpander.expand": lambda ctx, **kw: fanfuse.HeuristicExpander().expand("owls at night", **kw),
    "HeuristicExpander.aexpand": lambda ctx, **kw: asyncio.run(
        fanfuse.HeuristicExpander().aexpand("owls at night", **kw)
    ),
    "StaticExpander.expand": lambda ctx, **kw: fanfuse.StaticExpander({"q": ["r"]}).expand("q", **kw),
    "StaticExpander.aexpand": lambda ctx, **kw: asyncio.run(
        fanfuse.StaticExpander({"q": ["r"]}).aexpand("q", **kw)
    ),
    "CallableExpander.expand": lambda ctx, **kw: fanfuse.CallableExpander(lambda q: [q]).expand("q", **kw),
    "CallableExpander.aexpand": lambda ctx, **kw: asyncio.run(
        fanfuse.CallableExpander(lambda q: [q]).aexpand("q", **kw)
    ),
    "LLMExpander.__init__": lambda ctx, **kw: llm(**kw),
    "LLMExpander.expand": lambda ctx, **kw: llm().expand("q", **kw),
    "LLMExpander.aexpand": lambda ctx, **kw: asyncio.run(llm().aexpand("q", **kw)),
    "VariantCache.__init__": lambda ctx, **kw: fanfuse.VariantCache(**kw),
    "TantivyRetriever.build": lambda ctx, **kw: fanfuse.TantivyRetriever.build(
        DOCUMENTS, ctx.directory / "built", **kw
    ),
    "TantivyRetriever.search": lambda ctx, **kw: ctx.index.search("owls", **kw),
    "TantivyRetriever.search_batch": lambda ctx, **kw: ctx.index.search_batch(["owls", "mice"], **kw),
    "DenseRetriever.__init__": lambda ctx, **kw: fanfuse.DenseRetriever(embed, ["d"], embed(["d"]), **kw),
    "DenseRetriever.search_batch": lambda ctx, **kw: fanfuse.DenseRetriever.from_documents(
        DOCUMENTS, embed
    ).search_batch(["owls", "mice"], **kw),
    "DenseRetriever.from_documents": lambda ctx, **kw: fanfuse.DenseRetriever.from_documents(
        DOCUMENTS, embed, **kw
    ),
    "DenseRetriever.search": lambda ctx, **kw: fanfuse.DenseRetriever.from_documents(DOCUMENTS, embed).search(
        "owls", **kw
    ),
    "TfidfSvdEmbedder.__init__": lambda ctx, **kw: tfidf(**kw),
}


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
    """(value, the exception it raises; None: a huge count the row takes). The core refuses with
    FusionError, as the library does a fusion option (a row marked ``core``); other rows the library
    refuses with OutOfRange."""
    in_core = hasattr(fanfuse._core, entry.partition(".")[0])
    refused = FusionError if limit.core or in_core else OutOfRange
    values: list[tuple[Any, type[Exception] | None]] = [(v, refused) for v in outside(limit)]
    values += [("3", TypeError), (True, TypeError), ([3], TypeError)]
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
    return [1.0, value], f"{param}[1]"


@pytest.fixture(scope="module")
def context(small_runs: dict[str, str], tmp_path_factory: pytest.TempPathFactory) -> Context:
    return Context(small_runs, tmp_path_factory.mktemp("api-numbers"))


@pytest.mark.parametrize(("entry", "param", "value", "error", "named"), list(cases()))
def test_a_bad_number_is_refused_naming_the_argument(
    context: Context, entry: str, param: str, value: Any, error: type[Exception] | None, named: str
) -> None:
    if error is None:
        # Taken (the count means "all"), or refused by the bound of what is there (the runs given).
        try:
            assert CALLS[entry](context, **{param: value}) is not None
        except (FusionError, OutOfRange) as refused:
            assert str(refused).startswith(f"{param} must be"), str(refused)
        return
    with pytest.raises(Exception) as raised:  # the type is asserted exactly below
        CALLS[entry](context, **{param: value})
    assert type(raised.value) is error, f"{type(raised.value).__name__}: {raised.value}"
    assert named in str(raised.value), str(raised.value)
