"""The serving stack of `fanfuse serve`: `--workers N` processes on one port, the encoder threads
shared out between them, and orjson's answers equal to the standard library's (uvloop's connections
without Nagle's delay: test_service.py)."""

from __future__ import annotations

import dataclasses
import json
import math
import os
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("fastapi")
pytest.importorskip("uvicorn")

from fanfuse import OutOfRange
from fanfuse.cli.serve import share_cpus
from fanfuse.retrievers.onnx_encoder import THREADS_VARIABLE, usable_cpus
from fanfuse.service.app import json_bytes

TIMEOUT = 60.0


def test_each_worker_gets_its_share_of_the_cpus(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(THREADS_VARIABLE, raising=False)
    share_cpus(2)
    assert os.environ[THREADS_VARIABLE] == str(max(1, usable_cpus() // 2))
    monkeypatch.setenv(THREADS_VARIABLE, "3")  # the user's setting stands
    share_cpus(2)
    assert os.environ[THREADS_VARIABLE] == "3"


def test_the_encoder_threads_variable_sets_and_is_checked(monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("onnxruntime")
    from fanfuse.retrievers.default_encoder import default_encoder, embed_extra_installed

    if not embed_extra_installed():
        pytest.skip("needs fanfuse[embed]")
    monkeypatch.setenv(THREADS_VARIABLE, "1")
    assert default_encoder()._session.get_session_options().intra_op_num_threads == 1
    for bad in ("0", "two", "-1"):
        monkeypatch.setenv(THREADS_VARIABLE, bad)
        with pytest.raises(OutOfRange, match=f"{THREADS_VARIABLE} must be an int from 1 to 1024"):
            default_encoder()


def stdlib_json(data: Any) -> bytes:
    text = json.dumps(data, ensure_ascii=False, default=str, allow_nan=False, separators=(",", ":"))
    return text.encode("utf-8")


@pytest.mark.parametrize(
    "data",
    [
        {"hits": [{"id": "é", "score": 0.1 + 0.2, "payload": {"n": 1e-05, "big": 10**17, "none": None}}]},
        {"payload": {3: "int key", 1.5: "float key", True: "bool key", None: "none key"}},
        {"payload": {"huge": 10**30, "path": Path("/x")}},  # orjson refuses the int: the stdlib writes it
        {"payload": {"when": Path("a/b"), "tuple": (1, 2)}},
    ],
)
def test_answers_are_the_json_the_standard_library_writes(data: Any) -> None:
    assert json.loads(json_bytes(data)) == json.loads(stdlib_json(data))


def _asdict_finite(value: Any) -> Any:
    """What `as_data` wrote before: `dataclasses.asdict`, then non-finite floats as None."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {key: _asdict_finite(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_asdict_finite(item) for item in value]
    return value


@pytest.mark.parametrize("method", ["rrf", "condorcet", "combsum"])
def test_as_data_is_the_document_asdict_gave(method: str) -> None:
    from fanfuse.multiquery import MultiQueryRetriever
    from fanfuse.multiquery.result_json import as_data
    from multiquery_toys import KeywordRetriever, rewrites

    retriever = MultiQueryRetriever([KeywordRetriever(), KeywordRetriever(name="other")], expander=rewrites())
    result = retriever.search("rank fusion of lists", method=method)
    expected = _asdict_finite(dataclasses.asdict(result))
    expected["diagnostics"]["degraded"] = result.diagnostics.degraded  # result_json.PROPERTIES
    assert json.dumps(as_data(result), default=str) == json.dumps(expected, default=str)
    assert json.loads(json_bytes(as_data(result))) == json.loads(stdlib_json(expected))
