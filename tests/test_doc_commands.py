"""Every ```bash block of the README and docs/ pastes into a shell: bash reads it (`bash -n`), each
command starts with a program (no `[--flag]` synopsis line run as a command), and each `fanfuse`
command parses with the real parsers (a renamed or unknown flag fails here before a user meets it)."""

from __future__ import annotations

import re
import shlex
import subprocess
from pathlib import Path

import pytest
from fanfuse.cli import build_parser

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
# What a documented command may run: the programs the project's pages use.
PROGRAMS = {
    "fanfuse",
    "make",
    "pip",
    "pytest",
    "python",
    "time",
    "cargo",
    "curl",
    "wrk",
    "cd",
    "export",
    "rm",
}


def blocks() -> list[tuple[str, str]]:
    found = []
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        for match in re.finditer(r"^```bash\n(.*?)^```", text, re.DOTALL | re.MULTILINE):
            line = text[: match.start()].count("\n") + 1
            found.append((f"{page.relative_to(ROOT)}:{line}", match.group(1)))
    return found


def commands(block: str) -> list[list[str]]:
    """The block's commands as words: continuations joined, comments dropped, one per line or `;`/`&&`."""
    joined = block.replace("\\\n", " ")
    out = []
    for line in joined.splitlines():
        words = shlex.split(line, comments=True)
        command: list[str] = []
        for word in [*words, ";"]:
            if word in (";", "&&", "||", "|"):
                if command:
                    out.append(command)
                command = []
            else:
                command.append(word)
    return out


BLOCKS = blocks()


@pytest.mark.parametrize(("where", "block"), BLOCKS, ids=[where for where, _ in BLOCKS])
def test_a_bash_block_pastes_into_a_shell(where: str, block: str) -> None:
    checked = subprocess.run(["bash", "-n"], input=block, capture_output=True, text=True, check=False)
    assert checked.returncode == 0, f"{where}: {checked.stderr}"
    for words in commands(block):
        while words and re.fullmatch(r"[A-Z_]+=\S*", words[0]):  # VAR=value before a program
            words = words[1:]
        assert words and Path(words[0]).name in PROGRAMS, f"{where}: {shlex.join(words)!r} runs no program"
        at = next((i for i, w in enumerate(words) if Path(w).name == "fanfuse"), None)
        if at is not None:
            argv = words[at + 1 :]
            try:
                build_parser(argv[0] if argv else None).parse_args(argv)
            except SystemExit as stop:
                pytest.fail(f"{where}: `fanfuse {shlex.join(argv)}` does not parse (exit {stop.code})")


def test_the_synopsis_check_fails_on_a_bracket_line() -> None:
    """The check itself: an option line in brackets is a command named `[...`, which no program is."""
    (words,) = commands("               [--history conversation.jsonl] [--turn T]\n")
    assert Path(words[0]).name not in PROGRAMS
