"""`import fanfuse` and the run-file commands load only the core: the retrieval stack (NumPy, Tantivy,
asyncio) is imported on first use, so `fanfuse fuse` / `eval` / `tune` start fast."""

from __future__ import annotations

import json
import subprocess
import sys

HEAVY = ["numpy", "tantivy", "asyncio", "fanfuse.multiquery", "fanfuse.retrievers"]


def loaded_after(code: str) -> dict[str, bool]:
    probe = f"{code}\nimport json, sys\nprint(json.dumps({{m: m in sys.modules for m in {HEAVY!r}}}))"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    loaded: dict[str, bool] = json.loads(out.splitlines()[-1])
    return loaded


def test_import_fanfuse_loads_only_the_core() -> None:
    assert loaded_after("import fanfuse; fanfuse.rrf([['a']])") == dict.fromkeys(HEAVY, False)


def test_run_file_commands_do_not_load_the_retrieval_stack() -> None:
    for command in ("fuse", "eval", "tune"):
        call = f"main([{command!r}, '--help'])"
        code = f"from fanfuse.cli import main\ntry:\n    {call}\nexcept SystemExit:\n    pass"
        assert loaded_after(code) == dict.fromkeys(HEAVY, False), command


def test_lazy_names_resolve_on_first_use() -> None:
    import fanfuse
    from fanfuse.multiquery import MultiQueryRetriever
    from fanfuse.retrievers import Hit

    assert fanfuse.MultiQueryRetriever is MultiQueryRetriever
    assert fanfuse.Hit is Hit and fanfuse.retrievers.Hit is Hit
    assert fanfuse.__version__.count(".") >= 2
    assert "MultiQueryRetriever" in dir(fanfuse)
    try:
        fanfuse.no_such_name  # noqa: B018
    except AttributeError as error:
        assert "no_such_name" in str(error)
    else:
        raise AssertionError("an unknown attribute must raise AttributeError")
