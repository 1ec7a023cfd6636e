"""A type checker refuses a misspelled name wherever a named choice is taken. mypy is run on one call
per argument typed as a `Literal` (a parameter, or a key of the options a function unpacks), in the
core's stubs and in every module of the package: the call with a name that is not one must be
refused, the call with the first name it accepts must not. The arguments are found, not listed; and
wherever the package names one of the core's choices (`method`, `norm`, ...), it must be typed so."""

from __future__ import annotations

import ast
import importlib
import re
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import get_type_hints

import fanfuse
import pytest
from fanfuse import choices
from test_choices import literal_names, module_name

PACKAGE = Path(fanfuse.__file__).parent
STUBS = {
    "fanfuse._core": PACKAGE / "_core.pyi",
    "fanfuse._core._internal": PACKAGE / "_core" / "_internal.pyi",
}
WRONG = "not-a-name"
Function = ast.FunctionDef | ast.AsyncFunctionDef


@dataclass(frozen=True)
class Taker:
    """One argument that takes a named choice: `callee` is the expression called (`fanfuse._core.fuse`,
    `typing.cast(fanfuse._core.Run, None).write`) in `module`, `first` a name it accepts; the call
    gives every other argument it needs as `ANY` (typing.Any), `before` and `after` it."""

    module: str
    callee: str
    argument: str
    first: str
    before: str
    after: str
    by_name: bool

    def call(self, name: str) -> str:
        given = f"{self.argument}={name!r}" if self.by_name else repr(name)
        return f"{self.callee}({self.before}{given}{self.after})"


def names_of(annotation: ast.expr | None, namespace: dict[str, object]) -> tuple[object, ...]:
    """The names a Literal annotation accepts, evaluated in `namespace`: () for any other."""
    if annotation is None:
        return ()
    try:
        return literal_names(eval(ast.unparse(annotation), namespace)) or ()
    except NameError:  # a name imported only for the type checker: not one of these Literals
        return ()


def functions(tree: ast.Module) -> Iterator[tuple[ast.ClassDef | None, Function]]:
    """The module's functions, and its classes' methods with their class."""
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            yield None, node
        elif isinstance(node, ast.ClassDef):
            yield from ((node, f) for f in node.body if isinstance(f, ast.FunctionDef | ast.AsyncFunctionDef))


def callee(module: str, owner: ast.ClassDef | None, function: Function) -> str:
    if owner is None:
        return f"{module}.{function.name}"
    if function.name in ("__new__", "__init__"):
        return f"{module}.{owner.name}"
    if any(ast.unparse(d) == "staticmethod" for d in function.decorator_list):
        return f"{module}.{owner.name}.{function.name}"
    return f"typing.cast({module}.{owner.name}, None).{function.name}"


def taker(module: str, owner: ast.ClassDef | None, function: Function, argument: str, first: str) -> Taker:
    """The call of `function` that gives `argument`, by position if it is positional-only, and the
    arguments without a default besides it: positional-only ones by position, the others by name."""
    arguments = function.args
    only = len(arguments.posonlyargs)
    positional = [(a.arg, i < only) for i, a in enumerate([*arguments.posonlyargs, *arguments.args])]
    if owner is not None and not any(ast.unparse(d) == "staticmethod" for d in function.decorator_list):
        positional = positional[1:]  # self, cls
    needed = positional[: len(positional) - len(arguments.defaults)]
    at = next(
        (i for i, (name, by_position) in enumerate(positional) if name == argument and by_position), None
    )
    if at is not None:
        before = ["ANY"] * at
        after = [("ANY" if by_position else f"{name}=ANY") for name, by_position in needed[at + 1 :]]
    else:
        before = ["ANY" for _, by_position in needed if by_position]
        after = [f"{name}=ANY" for name, by_position in needed if not by_position and name != argument]
    kwonly = zip(arguments.kwonlyargs, arguments.kw_defaults, strict=True)
    after += [f"{a.arg}=ANY" for a, default in kwonly if default is None and a.arg != argument]
    before_text, after_text = "".join(f"{b}, " for b in before), "".join(f", {a}" for a in after)
    return Taker(
        module, callee(module, owner, function), argument, first, before_text, after_text, at is None
    )


def stub_classes() -> dict[str, dict[str, ast.expr]]:
    """Each class of the stubs (the option TypedDicts among them): its annotated names, inherited ones
    included."""
    trees = [ast.parse(path.read_text(encoding="utf-8")) for path in STUBS.values()]
    classes = {node.name: node for tree in trees for node in tree.body if isinstance(node, ast.ClassDef)}

    def names(name: str) -> dict[str, ast.expr]:
        inherited: dict[str, ast.expr] = {}
        for base in map(ast.unparse, classes[name].bases):
            inherited |= names(base) if base in classes else {}
        own = {s.target.id: s.annotation for s in classes[name].body if isinstance(s, ast.AnnAssign)}
        return inherited | own

    return {name: names(name) for name in classes}


def takers_of(module: str, tree: ast.Module, namespace: dict[str, object]) -> Iterator[Taker]:
    """The arguments of `tree`'s functions typed as a Literal: parameters, and the keys of unpacked
    options (a stub's TypedDict, read from the stub; or one of `namespace`)."""
    stubs = stub_classes()
    for owner, function in functions(tree):
        arguments = [*function.args.posonlyargs, *function.args.args, *function.args.kwonlyargs]
        typed = {a.arg: names_of(a.annotation, namespace) for a in arguments}
        kwarg = function.args.kwarg
        annotation = ast.unparse(kwarg.annotation) if kwarg and kwarg.annotation else ""
        unpacked = re.fullmatch(r"Unpack\[(\w+)\]", annotation)
        if unpacked and unpacked.group(1) in stubs:
            typed |= {key: names_of(a, vars(choices)) for key, a in stubs[unpacked.group(1)].items()}
        elif unpacked:
            typed |= {
                key: literal_names(t) or () for key, t in get_type_hints(namespace[unpacked.group(1)]).items()
            }
        for argument, names in typed.items():
            if names:
                yield taker(module, owner, function, argument, str(names[0]))


def package_modules() -> Iterator[tuple[str, Path]]:
    for path in sorted(PACKAGE.rglob("*.py")):
        relative = path.relative_to(PACKAGE).as_posix()
        yield module_name(relative), path


def all_takers() -> list[Taker]:
    found = []
    for module, path in STUBS.items():
        found += takers_of(module, ast.parse(path.read_text(encoding="utf-8")), vars(choices))
    for module, path in package_modules():
        try:
            namespace = vars(importlib.import_module(module))
        except ImportError:  # an optional extra this environment lacks: checked where it is installed
            continue
        found += takers_of(module, ast.parse(path.read_text(encoding="utf-8")), namespace)
    return list(dict.fromkeys(found))  # an overloaded function once


def test_the_scan_finds_parameters_and_unpacked_options() -> None:
    found = {(t.callee, t.argument) for t in all_takers()}
    assert ("fanfuse._core.fuse", "method") in found  # a stub's options, unpacked
    assert ("fanfuse._core.read_run", "rank_from") in found
    assert ("typing.cast(fanfuse._core.Run, None).write", "format") in found
    assert ("fanfuse.multiquery.expand.llm.LLMExpander", "fallback") in found
    assert ("fanfuse.options.FusionOptions", "norm") in found
    search = "typing.cast(fanfuse.multiquery.retriever.MultiQueryRetriever, None).search"
    assert (search, "tie_break") in found  # the package's own options, unpacked


def test_a_type_checker_refuses_a_name_that_is_not_one(tmp_path: Path) -> None:
    pytest.importorskip("mypy")
    takers = all_takers()
    lines = ["import typing", *sorted({f"import {t.module}" for t in takers}), "ANY: typing.Any = None"]
    first = len(lines) + 1
    for taker in takers:
        lines += [taker.call(WRONG), taker.call(taker.first)]
    source = tmp_path / "calls.py"
    source.write_text("\n".join(lines) + "\n", encoding="utf-8")
    mypy = [sys.executable, "-m", "mypy", "--follow-imports=silent", "--no-error-summary"]
    checked = subprocess.run(
        [*mypy, "--cache-dir", str(tmp_path / "cache"), str(source)],
        capture_output=True,
        text=True,
        check=False,
    )
    refused: dict[int, set[str]] = {}
    for line in checked.stdout.splitlines():
        if m := re.match(rf"{re.escape(str(source))}:(\d+): error: Argument \"(\w+)\".*\[arg-type\]", line):
            refused.setdefault(int(m.group(1)), set()).add(m.group(2))
        elif m := re.match(rf"{re.escape(str(source))}:(\d+): error: .*\[call-overload\]", line):
            # An overloaded function: no variant takes the call, whose other arguments are all Any.
            refused.setdefault(int(m.group(1)), set()).add("*")
    missed = [
        t.call(WRONG)
        for i, t in enumerate(takers)
        if not {t.argument, "*"} & refused.get(first + 2 * i, set())
    ]
    wrong = [t.call(t.first) for i, t in enumerate(takers) if refused.get(first + 2 * i + 1)]
    assert (missed, wrong) == ([], []), checked.stdout[-3000:]


# The core's choices by the name every entry point gives them: wherever the package names one so
# (a parameter, a field, an option key), it is typed with its `fanfuse.choices` Literal.
CORE_CHOICES = ("method", "norm", "tie_break", "duplicates", "rank_from")
NOT_CHOICE_TYPED = {
    "fanfuse.reference": "the spec in plain Python, on its own by design",
    "fanfuse.service.schema": "request fields: each checked against the same names by its validator",
    "fanfuse.multiquery.fusion.takes_weights": "any name: one the core does not know answers False",
}


def untyped_core_choices() -> list[str]:
    """Each parameter or field named for a core choice whose annotation is not a Literal."""
    found = []
    for module, path in package_modules():
        if module in NOT_CHOICE_TYPED:
            continue
        named: list[tuple[str, ast.expr | None, int]] = []
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                if f"{module}.{node.name}" not in NOT_CHOICE_TYPED:
                    arguments = [*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs]
                    named += [(a.arg, a.annotation, node.lineno) for a in arguments]
            elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
                named.append((node.target.id, node.annotation, node.lineno))
        choice_named = [(name, annotation, line) for name, annotation, line in named if name in CORE_CHOICES]
        if not choice_named:
            continue
        try:
            namespace = vars(importlib.import_module(module))
        except ImportError:  # an optional extra this environment lacks: checked where it is installed
            continue
        for name, annotation, line in choice_named:
            if not names_of(annotation, namespace):
                shown = ast.unparse(annotation) if annotation else None
                found.append(f"{path.relative_to(PACKAGE)}:{line} {name}: {shown}")
    return found


def test_every_core_choice_the_package_names_is_typed_as_its_names() -> None:
    assert untyped_core_choices() == []
