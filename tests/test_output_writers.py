"""The library writes a file only through the core's output guard. Every call in `python/fanfuse` that
writes a path (`open` for writing, `Path.write_text`/`write_bytes`, NumPy's and pyarrow's savers,
`savefig`, `json.dump`, a copy or rename) must write into a stream of `OutputFile`, or into a
directory of its own: a `StagedDirectory` (published whole by the guard) or a `tempfile` directory
or file. The scan reads the source, so a new writer that bypasses the guard fails here."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import fanfuse

PACKAGE = Path(fanfuse.__file__).parent
# The writers scanned: the reference implementation is the spec and writes nothing of the user's.
SKIPPED = ("reference",)
# Writers of a path whose scratch directory a caller made; (file, function): why it is safe.
ALLOWED = {
    ("dask/kernel.py", "_inputs"): "the partition's tempfile directory, made by fuse_partition",
    (
        "retrievers/index_copy.py",
        "_copy_checked",
    ): "the private copy's mkdtemp directory, made by private_copy",
}
# Calls that write their first argument (or the second: json.dump(obj, stream), pq.write_table).
NUMPY_SAVERS = {"save", "savez", "savez_compressed", "savetxt"}
SAVERS = {"savefig", "to_parquet", "tofile"}
DUMPERS = {"dump", "write_table"}
MOVERS = {"copy", "copy2", "copyfile", "copytree", "move", "replace", "rename"}
# What a call may write to without the guard: the guard's own streams, temporary places, memory.
SCRATCH_MAKERS = {
    "OutputFile", "StagedDirectory", "TemporaryDirectory", "NamedTemporaryFile", "mkdtemp", "BytesIO",
}  # fmt: skip


def _called_name(call: ast.Call) -> str:
    function = call.func
    return function.attr if isinstance(function, ast.Attribute) else getattr(function, "id", "")


def _names(node: ast.AST | None) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)} if node is not None else set()


def _writes_mode(node: ast.AST | None) -> bool:
    return (
        isinstance(node, ast.Constant) and isinstance(node.value, str) and bool(set(node.value) & set("wax+"))
    )


def _mode(call: ast.Call, position: int) -> ast.AST | None:
    keyword = next((k.value for k in call.keywords if k.arg == "mode"), None)
    return keyword if keyword is not None else (call.args[position] if len(call.args) > position else None)


def _written(call: ast.Call) -> ast.AST | None:
    """What a call writes to (a path or a stream), or None when it writes no file."""
    function, name = call.func, _called_name(call)
    receiver = function.value if isinstance(function, ast.Attribute) else None
    if name in ("write_text", "write_bytes"):
        return receiver
    if name == "open" and receiver is None and _writes_mode(_mode(call, 1)):
        return call.args[0] if call.args else None
    if name == "open" and receiver is not None and not _names(receiver) & {"os", "io"}:
        return receiver if _writes_mode(_mode(call, 0)) else None
    numpy = receiver is not None and bool(_names(receiver) & {"np", "numpy"})
    if (name in SAVERS or (name in NUMPY_SAVERS and numpy)) and call.args:
        return call.args[0]
    if name in DUMPERS and len(call.args) > 1:
        return call.args[1]
    if name in MOVERS and receiver is not None and _names(receiver) & {"os", "shutil"} and len(call.args) > 1:
        return call.args[1]
    return None


def _scratch_names(function: ast.AST) -> set[str]:
    """Names bound to the guard's streams and to directories of the function's own, and every name
    assigned from one of them (`staging = Path(staged.path)`)."""
    scratch: set[str] = set()
    for item in (n for n in ast.walk(function) if isinstance(n, ast.withitem)):
        maker = item.context_expr
        if isinstance(maker, ast.Call) and _called_name(maker) in SCRATCH_MAKERS:
            scratch |= _names(item.optional_vars)
    # `mkdtemp` is no context manager: its directory is a name assigned from the call.
    for node in ast.walk(function):
        if isinstance(node, ast.Assign) and any(
            isinstance(call, ast.Call) and _called_name(call) in SCRATCH_MAKERS
            for call in ast.walk(node.value)
        ):
            scratch |= set().union(*(_names(t) for t in node.targets))
    changed = True
    while changed:
        changed = False
        for node in ast.walk(function):
            if isinstance(node, ast.Assign) and _names(node.value) & scratch:
                new = set().union(*(_names(t) for t in node.targets)) - scratch
                scratch |= new
                changed |= bool(new)
    return scratch


def _flagged(scope: ast.AST) -> set[ast.Call]:
    """The writing calls in `scope` (nested functions included) whose target is not its scratch."""
    scratch = _scratch_names(scope)
    return {
        node
        for node in ast.walk(scope)
        if isinstance(node, ast.Call)
        and (target := _written(node)) is not None
        and not _names(target) & scratch
    }


def unguarded_writes() -> Iterator[str]:
    """Each writing call that no scope around it (a function, or one it is nested in) makes safe."""
    for path in sorted(PACKAGE.rglob("*.py")):
        relative = path.relative_to(PACKAGE).as_posix()
        if relative.startswith(SKIPPED):
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        scopes = [n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)]
        safe: set[ast.Call] = set()
        flagged: dict[ast.Call, str] = {}
        # The module's own statements are a scope of their own, so that one function's directory
        # does not excuse a write of another.
        definitions = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
        top = [statement for statement in tree.body if not isinstance(statement, definitions)]
        statements = ast.Module(body=top, type_ignores=[])
        for scope in [statements, *scopes]:
            mine = _flagged(scope)
            inside = {n for n in ast.walk(scope) if isinstance(n, ast.Call)}
            safe |= inside - mine
            name = getattr(scope, "name", "<module>")
            for call in mine:
                if (relative, name) in ALLOWED:
                    safe.add(call)
                flagged[call] = name  # the innermost scope names it (walked last)
        for call in sorted(set(flagged) - safe, key=lambda c: c.lineno):
            yield f"{relative}:{call.lineno} in {flagged[call]}: {ast.unparse(call)[:80]}"


def test_every_writer_of_the_library_goes_through_the_guard() -> None:
    assert sorted(set(unguarded_writes())) == []


def test_the_scan_finds_a_writer_that_bypasses_the_guard(tmp_path: Path) -> None:
    source = """
def save(path, data, staged_dir):
    Path(path).write_text(data)
    with open(path, "wb") as out:
        out.write(data)
    np.save(path, data)
    json.dump(data, open(path, "w"))
    with OutputFile(path) as stream:
        np.save(stream, data)
    with StagedDirectory(path) as staged:
        staging = Path(staged.path)
        (staging / "x").write_text(data)
    with open(path, "rb") as read:
        read.read()
"""
    flagged = sorted(call.lineno for call in _flagged(ast.parse(source).body[0]))
    assert flagged == [3, 4, 6, 7, 7]
