"""Every flag of `demo` and `serve`, given on a small input, either changes what the command shows or
answers, or is refused naming it; flags that change only how a server runs are listed apart, each
with the test that holds it. And every command has such a table (here or in
`tests/test_cli_flag_effects.py`), so a new command cannot go without one."""

from __future__ import annotations

import contextlib
import json
import re
import signal
import subprocess
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import test_cli_flag_effects as effects
from cli_process import CLI, with_flag
from fanfuse.cli import main
from test_cli_demo import small_stdlib
from test_cli_flag_effects import assert_changed_or_refused, long_flags
from test_cli_idle_flags import PARSERS, main_code
from test_open_index import needs_embed

STOP_SECONDS = 60

# `demo`'s flags, each with the value given (the base run: the default search, its cache built once).
DEMO_VALUES: dict[str, list[str]] = {
    "--top-k": ["2"],
    "--max-variants": ["1"],
    "--no-dense": [],
    "--cache-dir": ["other-cache"],
    "--rebuild": [],
}
DEMO_SAME_OUTPUT = {"--help": "prints the help"}

# `serve`'s flags that change its answers, each with its value (the base: the server's defaults;
# --no-dense over an index with vectors, the others over one without).
SERVE_VALUES: dict[str, list[str]] = {
    "--expander": ["none"],
    "--no-dense": [],
    **{flag: ["1"] for flag in ("--temperature", "--max-tokens", "--llm-timeout")},
    "--llm-base-url": ["http://127.0.0.1:9/v1"],
    "--llm-model": ["m"],
    "--strategy": ["entity"],
    "--instructions": ["About owls."],
}
SERVE_HOW_IT_RUNS = {
    "--index": "the base of every call",
    "--help": "prints the help",
    "--host": "the address it listens on (tests/service_server.py serves on 127.0.0.1)",
    "--port": "the port it listens on (every server of the tests takes --port 0, a free one)",
    "--workers": "the processes answering (tests/test_serve_exit.py: orphaned workers, their copy)",
    "--request-timeout": "when a stalled connection is closed (tests/test_serve_request_deadline.py)",
    "--log-level": "uvicorn's log (a name it does not know is refused: tests/test_cli_bad_options.py)",
}

# Every command's table of flags: what each changes, and what is listed apart.
TABLES: dict[str, tuple[dict[str, Any], dict[str, str]]] = {
    "fuse": (effects.FUSE_VALUES, effects.FUSE_SAME_OUTPUT),
    "eval": (effects.EVAL_VALUES, effects.EVAL_SAME_OUTPUT),
    "search": (effects.SEARCH_VALUES, effects.SEARCH_SAME_OUTPUT),
    "tune": (effects.TUNE_VALUES, effects.TUNE_SAME_OUTPUT),
    "index": (effects.INDEX_VALUES, effects.INDEX_SAME_OUTPUT),
    "demo": (DEMO_VALUES, DEMO_SAME_OUTPUT),
    "serve": (SERVE_VALUES, SERVE_HOW_IT_RUNS),
}


def test_every_command_has_a_table_of_its_flags() -> None:
    assert set(TABLES) == set(PARSERS)


@pytest.mark.parametrize("command", sorted(TABLES))
def test_every_flag_of_every_command_is_in_its_table(command: str) -> None:
    values, apart = TABLES[command]
    assert long_flags(PARSERS[command]) == set(values) | set(apart)
    assert not set(values) & set(apart)


def shown(out: str) -> str:
    """What the demo printed, its timings masked."""
    return re.sub(r"\d+\.\d+", "#", out)


@pytest.mark.parametrize("flag", sorted(DEMO_VALUES))
def test_every_flag_of_demo_changes_what_it_shows_or_is_refused(
    flag: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    small_stdlib(monkeypatch)
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("FANFUSE_QUERY_EXPANSION", raising=False)
    monkeypatch.delenv("FANFUSE_MAX_QUERY_VARIANTS", raising=False)
    words = ["demo", "--cache-dir", "cache", "--top-k", "3", "copy a file"]
    assert main(words) == 0  # builds the cache, so the base run below reuses it
    capsys.readouterr()
    assert main(words) == 0
    base = shown(capsys.readouterr().out)
    code = main_code([*with_flag(words[:-1], flag, DEMO_VALUES[flag]), words[-1]])
    out, err = capsys.readouterr()
    assert_changed_or_refused(flag, code, err, lambda: shown(out) != base)


@pytest.fixture(scope="module")
def serve_index(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from fanfuse.retrievers.tantivy_index import TantivyRetriever
    from test_cli_search_options import DOCUMENTS

    directory = tmp_path_factory.mktemp("serve-flags") / "idx"
    TantivyRetriever.build(DOCUMENTS, directory)
    return directory


@pytest.fixture(scope="module")
def dense_index(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from test_cli_dense import write_corpus
    from test_cli_search_options import DOCUMENTS

    needs_embed()
    directory = tmp_path_factory.mktemp("serve-dense")
    corpus = write_corpus(directory / "corpus.jsonl", DOCUMENTS)
    assert main(["index", str(corpus), "--index", str(directory / "idx"), "--dense"]) == 0
    return directory / "idx"


def answers(base_url: str) -> tuple[object, object]:
    """What a server says of itself and its answer to one search, timings left out."""
    from test_cli_search_options import QUERY, without_timings

    with urllib.request.urlopen(f"{base_url}/healthz", timeout=30) as health:
        said = json.load(health)
    body = json.dumps({"query": QUERY}).encode()
    request = urllib.request.Request(f"{base_url}/search", body, {"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=60) as searched:
        return said, without_timings(json.load(searched))


@contextlib.contextmanager
def served(index: Path, *flag: str) -> Iterator[tuple[int, str, str]]:
    """`fanfuse serve --index INDEX --port 0 FLAG...` as a process: (0, its base URL, "") while it
    listens, stopped by SIGTERM when the block ends; or (its exit status, "", its stderr) if it ended
    before listening."""
    process = subprocess.Popen(
        [*CLI, "serve", "--index", str(index), "--port", "0", *flag],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        line = process.stdout.readline()  # the line it prints once it listens, or "" when it ended
        if not line:
            yield process.wait(STOP_SECONDS), "", process.communicate()[1]
            return
        assert line.startswith("fanfuse serve: listening on http://127.0.0.1:"), line
        yield 0, line.split()[-1], ""
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
        process.communicate(timeout=STOP_SECONDS)


@pytest.mark.parametrize("flag", sorted(SERVE_VALUES))
def test_every_flag_of_serve_changes_its_answers_or_is_refused(
    flag: str, serve_index: Path, request: pytest.FixtureRequest
) -> None:
    pytest.importorskip("fastapi")
    pytest.importorskip("uvicorn")
    if flag == "--no-dense":  # hybrid by default where the index stores vectors
        serve_index = request.getfixturevalue("dense_index")
    with served(serve_index, flag, *SERVE_VALUES[flag]) as (code, url, err):
        given = answers(url) if code == 0 else None
    if code != 0:
        assert_changed_or_refused(flag, code, err, lambda: False)
        return
    with served(serve_index) as (code, url, err):
        assert code == 0, err
        base = answers(url)
    assert given != base
