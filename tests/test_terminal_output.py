"""Text from an index, a model or a server reaches the terminal as text: NUL, BEL, ESC sequences, C1
controls and bidirectional overrides are shown as escapes by every view of `fanfuse search` (table,
--explain) and in --json (still the same JSON value), and every command's stderr, and its stdout on
a terminal, go through the same filter."""

from __future__ import annotations

import importlib
import json
import os
import pty
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from fanfuse.cli import COMMANDS, main
from fanfuse.retrievers.tantivy_index import TantivyRetriever
from llm_server import ScriptedChatServer, llm_server

__all__ = ["llm_server"]  # the fixture, imported for pytest

DIRTY = "owl\x00\x07\x1b[31m\x9b2J\u202ecod.exe\x7f"
ACTED_ON = ["\x00", "\x07", "\x1b", "\x9b", "\u202e", "\x7f"]
DOCUMENTS = [
    {"id": f"id-{DIRTY}", "title": f"title {DIRTY}", "text": f"owls hunt at night {DIRTY}", "tag": DIRTY},
    {"id": "plain", "title": "Plain", "text": "owls sleep by day"},
]


@pytest.fixture()
def index_dir(tmp_path: Path) -> Path:
    TantivyRetriever.build(DOCUMENTS, tmp_path / "idx")
    return tmp_path / "idx"


def shown(text: str) -> None:
    for character in ACTED_ON:
        assert character not in text, f"{character!r} reached the terminal: {text!r}"


@pytest.mark.parametrize("view", [[], ["--explain"], ["--dense", "--explain"]])
def test_search_views_show_what_the_index_holds(
    index_dir: Path, view: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    if "--dense" in view:
        pytest.importorskip("sklearn")
    assert main(["search", "owls", "--index", str(index_dir), *view]) == 0
    out = capsys.readouterr().out
    shown(out)
    assert "id-owl\\x00\\x07\\x1b[31m" in out


def test_search_json_is_escaped_and_the_same_data(
    index_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["search", "owls", "--index", str(index_dir), "--json", "--filter", f"tag={DIRTY}"]) == 0
    out = capsys.readouterr().out
    shown(out)
    hits = json.loads(out)["hits"]
    assert [(h["id"], h["payload"]["title"], h["payload"]["tag"]) for h in hits] == [
        (f"id-{DIRTY}", f"title {DIRTY}", DIRTY)
    ]


def test_model_variants_and_server_errors_are_shown_as_text(
    index_dir: Path, llm_server: ScriptedChatServer, capsys: pytest.CaptureFixture[str]
) -> None:
    flags = ["--expander", "llm", "--llm-base-url", llm_server.base_url, "--llm-model", "scripted"]
    llm_server.answer(json.dumps({"queries": [f"owls {DIRTY}"]}))
    assert main(["search", "owls", "--index", str(index_dir), *flags]) == 0
    shown(out := capsys.readouterr().out)
    assert "\\x1b[31m" in out
    llm_server.answer_raw(500, f"model down {DIRTY}".encode())
    assert main(["search", "owls", "--index", str(index_dir), *flags]) == 0
    captured = capsys.readouterr()
    shown(captured.out)
    shown(captured.err)
    assert "expansion fell back" in captured.out


@pytest.mark.parametrize("command", list(COMMANDS))
def test_every_command_prints_through_the_filter(
    command: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Whatever a command prints to stderr reaches it made visible (its stdout too, on a terminal)."""

    def run(_: Any) -> int:
        import sys

        print(f"out {DIRTY}\ttab", file=sys.stdout)
        print(f"err {DIRTY}\ttab", file=sys.stderr)
        return 0

    module = importlib.import_module(COMMANDS[command])
    monkeypatch.setattr(module, "run", run)
    monkeypatch.chdir(given_inputs(tmp_path))
    required = {
        "search": ["q", "--index", "i"],
        "serve": ["--index", "i"],
        "index": ["c.jsonl", "--index", "i"],
    }
    inputs = {"fuse": ["a", "-o", "o"], "eval": ["a", "--qrels", "q"], "tune": ["a", "--qrels", "q"]}
    assert main([command, *required.get(command, []), *inputs.get(command, [])]) == 0
    captured = capsys.readouterr()
    shown(captured.err)
    assert "err owl\\x00\\x07\\x1b[31m\\x9b2J\\u202ecod.exe\\x7f\ttab" in captured.err
    assert f"out {DIRTY}" in captured.out  # not a terminal: data passes as it is


def given_inputs(directory: Path) -> Path:
    """`directory` holding the inputs the invocations name (read by nobody: the commands' `run` is
    replaced), so that the commands' check of their inputs passes."""
    (directory / "i").mkdir()
    for name in ("a", "q", "c.jsonl"):
        (directory / name).write_text("")
    return directory


def test_stdout_on_a_terminal_is_filtered_too(tmp_path: Path) -> None:
    """On a real pseudo-terminal, what a command prints to stdout is made visible as well."""
    printing = (
        "import sys; import fanfuse.cli.fuse as command; "
        f"command.run = lambda args: print({DIRTY!r}) or 0; "
        "from fanfuse.cli import main; sys.exit(main(['fuse', 'a', '-o', 'o']))"
    )
    leader, follower = pty.openpty()
    try:
        process = subprocess.run(
            [sys.executable, "-c", printing],
            stdout=follower,
            stderr=subprocess.PIPE,
            timeout=120,
            cwd=given_inputs(tmp_path),
        )
    finally:
        os.close(follower)
    try:
        shown_on_screen = os.read(leader, 65536).decode("utf-8")
    finally:
        os.close(leader)
    assert process.returncode == 0, process.stderr
    shown(shown_on_screen)
    assert "owl\\x00\\x07\\x1b[31m" in shown_on_screen
