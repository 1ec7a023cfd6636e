"""`import fanfuse` and the run-file commands load only the core: the retrieval stack (NumPy, Tantivy,
asyncio) is imported on first use, so `fanfuse fuse` / `eval` / `tune` start fast."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

HEAVY = [
    "numpy",
    "tantivy",
    "asyncio",
    "onnxruntime",
    "tokenizers",
    "fanfuse.multiquery",
    "fanfuse.retrievers",
]
# The optional extras' packages: never loaded unless their adapter module is imported.
EXTRAS = [
    "langchain_core",
    "llama_index",
    "haystack",
    "psycopg",
    "psycopg_pool",
    "sklearn",
    "dask",
    "distributed",
    # The service's (`fanfuse[serve]`): its schema is built from the result types, not the reverse.
    "fastapi",
    "pydantic",
    # The user's own LLM clients: LLMExpander tells them apart by the packages already loaded.
    "openai",
    "langchain_openai",
]


def loaded_after(code: str, modules: list[str] = HEAVY) -> dict[str, bool]:
    probe = f"{code}\nimport json, sys\nprint(json.dumps({{m: m in sys.modules for m in {modules!r}}}))"
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


def test_run_file_commands_load_dask_only_for_the_dask_engine(
    small_runs: dict[str, str], tmp_path: Path
) -> None:
    runs = [small_runs["run0"], small_runs["run1"]]
    fuse = f"main(['fuse', *{runs!r}, '-o', {str(tmp_path / 'out.trec')!r}])"
    evaluate = f"main(['eval', *{runs!r}, '--qrels', {small_runs['qrels']!r}])"
    for call in (fuse, evaluate):
        loaded = loaded_after(f"from fanfuse.cli import main\n{call}", ["dask", "distributed", *HEAVY])
        assert loaded == dict.fromkeys(["dask", "distributed", *HEAVY], False), call
    dask_fuse = fuse.replace("])", ", '--engine', 'dask'])")
    assert loaded_after(f"from fanfuse.cli import main\n{dask_fuse}", ["dask"]) == {"dask": True}


def test_the_retrievers_load_onnxruntime_only_when_an_encoder_is_made() -> None:
    loaded = loaded_after("import fanfuse.retrievers, fanfuse.retrievers.dense_cache")
    assert loaded["fanfuse.retrievers"]
    assert not loaded["onnxruntime"] and not loaded["tokenizers"]


def test_the_retrieval_stack_loads_no_optional_extra() -> None:
    code = "import fanfuse; from fanfuse.retrievers import *; from fanfuse.multiquery import *"
    code += "; import fanfuse.multiquery.result_json, fanfuse.cli.render"  # the JSON of a result
    assert loaded_after(code, EXTRAS) == dict.fromkeys(EXTRAS, False)
    # The probe sees an extra when its adapter is imported.
    assert loaded_after("import fanfuse.retrievers.postgres", EXTRAS)["psycopg"]


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
