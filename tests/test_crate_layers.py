"""The layering of the crate, read from its source: the Rust modules (their ``use crate::…`` /
``super::…`` paths, a module's use of its own ancestors aside) import each other in no circle, and the
crate's folders and top-level files stand in declared layers, by step of the flow, none importing one
above it, no two importing each other: the rule ``test_import_graph`` holds the package to."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

from test_import_graph import ROOT, _cycles, _describe, _violations

RUST = ROOT / "rust"

# A Rust path that starts at the crate root or the module above: `crate::runs::train::{self, X}`.
_RUST_PATH = re.compile(r"\b(?:crate|super)(?:::\w+)+")
_USE = re.compile(r"\buse\s+([^;]+);", re.S)


def _rust_module_files() -> dict[tuple[str, ...], Path]:
    """Module path (from the crate root) -> its file: ``rust/runs/mod.rs`` is ``("runs",)``."""
    files = {}
    for path in RUST.rglob("*.rs"):
        parts = path.relative_to(RUST).with_suffix("").parts
        if parts[-1] in ("mod", "lib"):
            parts = parts[:-1]
        files[tuple(parts)] = path
    return files


def _expand_use(tree: str) -> Iterator[str]:
    """The paths of one `use` tree: ``super::{a::X, b::{self, Y}}`` gives ``super::a::X``,
    ``super::b::self`` and ``super::b::Y``."""
    tree = "".join(tree.split())
    start = tree.find("{")
    if start < 0:
        yield tree
        return
    prefix, body = tree[:start], tree[start + 1 : tree.rindex("}")]
    depth, item = 0, ""
    for char in [*body, ","]:
        if char == "," and depth == 0:
            if item:
                yield from (prefix + path for path in _expand_use(item))
            item = ""
            continue
        depth += {"{": 1, "}": -1}.get(char, 0)
        item += char


def _rust_edges(
    module: tuple[str, ...], path: Path, files: dict[tuple[str, ...], Path]
) -> set[tuple[str, ...]]:
    """The modules `module` takes names from; its own ancestors (which declare it, and whose shared
    helpers every child uses) are not counted, as the file tree already orders them."""
    text = re.sub(r"//[^\n]*", "", path.read_text(encoding="utf-8"))
    paths = [p for use in _USE.findall(text) for p in _expand_use(use)]
    paths += _RUST_PATH.findall(text)
    targets = set()
    for rust_path in paths:
        head, *rest = rust_path.split("::")
        if head == "crate":
            base: tuple[str, ...] = ()
        elif head == "super":
            base = module[:-1]
            while rest and rest[0] == "super":
                base, rest = base[:-1], rest[1:]
        else:
            continue
        target = base
        for segment in rest:
            if (*target, segment) not in files:
                break
            target = (*target, segment)
        if target != module[: len(target)]:
            targets.add(target)
    return targets


def test_a_rust_use_tree_gives_every_path() -> None:
    tree = "super::{args::int_in, runs::{self, PyRun},\n detached}"
    assert list(_expand_use(tree)) == [
        "super::args::int_in",
        "super::runs::self",
        "super::runs::PyRun",
        "super::detached",
    ]


def test_the_rust_modules_import_no_circle() -> None:
    files = _rust_module_files()
    graph = {"::".join(m): {"::".join(t) for t in _rust_edges(m, p, files)} for m, p in files.items()}
    assert sum(map(len, graph.values())) > 50, "the walk found the crate's imports"
    cycles = _cycles(graph)
    assert cycles == [], _describe(cycles, graph)


# The crate's units (a folder under rust/, a top-level file), lowest first, by step of the flow; the
# binding is the top. A unit imports only units of its own layer or below, and two never import each
# other (the same rule as the package's LAYERS).
RUST_LAYERS: tuple[tuple[str, ...], ...] = (
    # errors, signals, id hashing, the list layout, the name tables, what an argument accepts
    ("error", "interrupt", "keys", "lists", "names", "args"),
    # the thread pool of batches, the RRF kernel
    ("batch", "rrf"),
    # every other fusion method, and the fusion options value
    ("fusion",),
    # ids, runs and batches copied out of the caller's lists, fused by the kernels; a fusion's result
    ("owned_ids", "fused"),
    # Arrow at the boundary, the output guard
    ("arrow", "output"),
    # run files: read, fused, written
    ("runs",),
    # evaluation of runs against qrels
    ("eval",),
    # the trained methods, trained on runs with eval's metrics; the tables of names the package publishes
    ("train", "published"),
    # the Python binding
    ("python",),
)


def _rust_unit_edges() -> dict[tuple[str, str], list[str]]:
    files = _rust_module_files()
    edges: dict[tuple[str, str], list[str]] = {}
    for module, path in files.items():
        for target in _rust_edges(module, path, files):
            if module and target and module[0] != target[0]:
                edges.setdefault((module[0], target[0]), []).append(str(path.relative_to(ROOT)))
    return edges


def test_every_unit_of_the_crate_is_in_one_layer() -> None:
    declared = [unit for units in RUST_LAYERS for unit in units]
    assert len(declared) == len(set(declared)), "a unit is declared twice"
    found = {module[0] for module in _rust_module_files() if module}
    assert sorted(found - set(declared)) == [], "place each new folder or top-level file in RUST_LAYERS"
    assert sorted(set(declared) - found) == [], "RUST_LAYERS names a unit that no longer exists"


def test_no_unit_of_the_crate_imports_one_above_it_and_no_two_import_each_other() -> None:
    edges = _rust_unit_edges()
    assert len(edges) > 15, "the walk found the imports between units"
    layer = {unit: level for level, units in enumerate(RUST_LAYERS) for unit in units}
    assert _violations(edges, layer) == []
