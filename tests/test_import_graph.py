"""The layering of the code, read from its source: the library (everything under ``python/fanfuse/``
outside ``cli/``) never imports ``fanfuse.cli``; the package's folders and top-level modules stand in
declared layers, by step of the flow, and none imports one above it, nor do two import each other;
the Python modules import each other in no circle (the crate's layers: ``test_crate_layers``). Every
import counts: module-level, inside a function, under ``TYPE_CHECKING``, absolute or relative."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "python" / "fanfuse"
CLI = "fanfuse.cli"


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


SOURCES = {_module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}
# The compiled core counts as a module (its stub stands for it): importing it is no import of the package.
MODULES = set(SOURCES) | {_module_name(p) for p in PACKAGE.rglob("*.pyi")}


def _known(name: str) -> str | None:
    """The longest prefix of the dotted `name` that is a module of the package."""
    parts = name.split(".")
    for end in range(len(parts), 0, -1):
        if ".".join(parts[:end]) in MODULES:
            return ".".join(parts[:end])
    return None


def _imports(module: str) -> Iterator[tuple[int, str]]:
    path = SOURCES[module]
    return _imports_of(module, path.read_text(encoding="utf-8"), is_package=path.name == "__init__.py")


def _imports_of(module: str, source: str, *, is_package: bool) -> Iterator[tuple[int, str]]:
    """(line, module of the package) for every import `source` makes, wherever it stands:
    ``from fanfuse import report_format`` names the submodule, ``from fanfuse.x import name`` the
    module ``fanfuse.x``; a constant ``importlib.import_module("fanfuse...")`` counts too."""
    package = module if is_package else module.rpartition(".")[0]
    for node in ast.walk(ast.parse(source)):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                base = ".".join([*anchor, *([base] if base else [])])
            names = [
                f"{base}.{alias.name}" if f"{base}.{alias.name}" in MODULES else base for alias in node.names
            ]
        elif (
            isinstance(node, ast.Call)
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
            and getattr(node.func, "attr", getattr(node.func, "id", None)) in ("import_module", "__import__")
        ):
            names = [node.args[0].value]
        for name in names:
            target = _known(name)
            if target is not None and target != module:
                yield node.lineno, target


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one node (Tarjan's algorithm), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(graph.get(node, ())):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def _describe(cycles: list[list[str]], graph: dict[str, set[str]]) -> str:
    return "\n".join(
        " | ".join(f"{a} -> {b}" for a in cycle for b in sorted(graph[a]) if b in cycle) for cycle in cycles
    )


def test_the_walk_sees_every_spelling_of_an_import() -> None:
    source = """
import importlib
from typing import TYPE_CHECKING
if TYPE_CHECKING:
    from fanfuse.cli._common import guarded
def late():
    from ..cli import render
    from fanfuse import cli
    import fanfuse.cli.fuse as fuse
    from . import planning
    from .. import report
    return importlib.import_module("fanfuse.cli.search")
"""
    found = {target for _, target in _imports_of("fanfuse.multiquery.probe", source, is_package=False)}
    assert found == {
        "fanfuse.cli._common",
        "fanfuse.cli.render",
        "fanfuse.cli",
        "fanfuse.cli.fuse",
        "fanfuse.multiquery.planning",
        "fanfuse.report",
        "fanfuse.cli.search",
    }


def test_the_library_never_imports_the_cli() -> None:
    library = [m for m in SOURCES if m != CLI and not m.startswith(CLI + ".")]
    assert len(library) > 50, "the walk found the package's modules"
    found = [
        f"{SOURCES[m].relative_to(ROOT)}:{line} imports {target}"
        for m in library
        for line, target in _imports(m)
        if target == CLI or target.startswith(CLI + ".")
    ]
    assert found == []


def test_no_library_module_loads_the_cli() -> None:
    """Every library module and public name loaded in one fresh interpreter (a module whose optional
    extra is missing is skipped), then not one module of ``fanfuse.cli`` is in ``sys.modules``."""
    library = sorted(m for m in SOURCES if m != CLI and not m.startswith(CLI + "."))
    probe = f"""
import importlib, json, sys
import fanfuse
for name in [*fanfuse.__all__, *fanfuse._SUBMODULES]:
    getattr(fanfuse, name)
skipped = []
for module in {library!r}:
    try:
        importlib.import_module(module)
    except ImportError as error:
        skipped.append(f"{{module}}: {{error}}")
loaded = sorted(m for m in sys.modules if m == {CLI!r} or m.startswith({CLI + "."!r}))
print(json.dumps({{"loaded": loaded, "skipped": skipped}}))
"""
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    result = json.loads(out.splitlines()[-1])
    assert result["loaded"] == [], result


def test_the_python_modules_import_no_circle() -> None:
    graph = {m: {target for _, target in _imports(m)} for m in SOURCES}
    assert sum(map(len, graph.values())) > 200, "the walk found the package's imports"
    cycles = _cycles(graph)
    assert cycles == [], _describe(cycles, graph)


# The package's units (a folder under python/fanfuse/, a top-level module, the package root), lowest
# first, by step of the flow: a unit imports only units of its own layer or below, and two units never
# import each other. A new folder or top-level module has to be placed here.
LAYERS: tuple[tuple[str, ...], ...] = (
    # the compiled core, the names of its choices as types, the records it builds, and the process
    # plumbing beside it
    (
        "fanfuse._core",
        "fanfuse.choices",
        "fanfuse._contribution",
        "fanfuse._panics",
        "fanfuse._cleanups",
        "fanfuse._renamed",
    ),
    # the fusion options value, over the core's checked options
    ("fanfuse.options",),
    # what every layer raises and checks against: the errors, every number's range, JSON data
    ("fanfuse.errors",),
    # path arguments: the str the core takes, refused with the class of what the path is for; text
    # that UTF-8 cannot carry; every number's range and the shape of every sequence argument
    ("fanfuse.paths", "fanfuse.text", "fanfuse.limits"),
    # the output guard every file and folder is written through
    ("fanfuse.output_guard",),
    # a JSON line; a setting that goes with another, refused where it would do nothing
    ("fanfuse.jsonl", "fanfuse.idle_settings"),
    # the environment variables read, checked by name against them
    ("fanfuse.environment",),
    # documents, run files and their evaluation, the spec in plain Python
    (
        "fanfuse.corpus",
        "fanfuse.run_scores",
        "fanfuse.tables",
        "fanfuse.reference",
    ),
    # search backends; run-file comparison, tuning and the distributed engine
    ("fanfuse.retrievers", "fanfuse.report", "fanfuse.tune", "fanfuse.dask"),
    # multi-query search over the backends; the demo's corpus, indexed with them
    ("fanfuse.multiquery", "fanfuse.stdlib_corpus"),
    # the default retriever over an index; the frameworks' adapters
    ("fanfuse.index_retriever", "fanfuse.integrations"),
    # the public names, loaded lazily
    ("fanfuse",),
    ("fanfuse.service",),
    ("fanfuse.cli",),
)


def _unit(module: str) -> str:
    """The layered unit of `module`: ``fanfuse.multiquery.expand.words`` is ``fanfuse.multiquery``."""
    return ".".join(module.split(".")[:2])


def _layer_of() -> dict[str, int]:
    return {unit: level for level, units in enumerate(LAYERS) for unit in units}


def _unit_edges() -> dict[tuple[str, str], list[str]]:
    """(unit, unit it imports) -> where: every import between two different units."""
    edges: dict[tuple[str, str], list[str]] = {}
    for module in SOURCES:
        for line, target in _imports(module):
            pair = (_unit(module), _unit(target))
            if pair[0] != pair[1]:
                edges.setdefault(pair, []).append(
                    f"{SOURCES[module].relative_to(ROOT)}:{line} imports {target}"
                )
    return edges


def test_every_unit_of_the_package_is_in_one_layer() -> None:
    declared = [unit for units in LAYERS for unit in units]
    assert len(declared) == len(set(declared)), "a unit is declared twice"
    found = {_unit(module) for module in MODULES}
    assert sorted(found - set(declared)) == [], "place each new folder or top-level module in LAYERS"
    assert sorted(set(declared) - found) == [], "LAYERS names a unit that no longer exists"


def _violations(edges: dict[tuple[str, str], list[str]], layer: dict[str, int]) -> list[str]:
    """Each import of a unit above the importer's layer, and each pair of units importing each other."""
    upward = [
        f"{a} (layer {layer[a]}) imports {b} (layer {layer[b]}): {where[0]}"
        for (a, b), where in sorted(edges.items())
        if a in layer and b in layer and layer[b] > layer[a]
    ]
    mutual = [
        f"{a} <-> {b}: {where[0]} | {edges[(b, a)][0]}"
        for (a, b), where in sorted(edges.items())
        if a < b and (b, a) in edges
    ]
    return upward + mutual


def test_no_unit_imports_one_above_it_and_no_two_import_each_other() -> None:
    edges = _unit_edges()
    assert len(edges) > 30, "the walk found the imports between units"
    assert _violations(edges, _layer_of()) == []


def test_the_layer_check_refuses_an_upward_and_a_mutual_import() -> None:
    layer = {"low": 0, "high": 1, "twin": 1}
    edges = {("low", "high"): ["low.py:1"], ("high", "low"): ["high.py:2"], ("high", "twin"): ["high.py:3"]}
    assert _violations(edges, layer) == [
        "low (layer 0) imports high (layer 1): low.py:1",
        "high <-> low: high.py:2 | low.py:1",
    ]
    assert _violations({("high", "twin"): ["h"], ("twin", "high"): ["t"]}, layer) == ["high <-> twin: h | t"]
