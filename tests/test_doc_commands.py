"""Every ```bash block of the README and docs/ pastes into a shell: bash reads it (`bash -n`), each
command starts with a program (no `[--flag]` synopsis line run as a command), and each `fanfuse`
command parses with the real parsers and gives no flag that would do nothing beside the others (a
renamed, unknown or idle flag fails here before a user meets it). A comment saying the lines after it
"can be appended to the command above" makes each such line a command of its own: the one above
with that line appended."""

from __future__ import annotations

import re
import shlex
import subprocess
from pathlib import Path

import pytest
from fanfuse.cli import build_parser, command_parsers
from fanfuse.cli.idle_flags import refuse_idle_flags
from fanfuse.errors import InvalidSetting

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


APPENDED = "can be appended to the command above"


def commands(block: str) -> list[list[str]]:
    """The block's commands as words: continuations joined, comments dropped, one per line or `;`/`&&`;
    after a comment saying its lines can be appended, the command above with each such line."""
    joined = block.replace("\\\n", " ")
    out: list[list[str]] = []
    base: list[str] | None = None
    for line in joined.splitlines():
        if base is not None and re.match(r"#\s+-", line):
            out.append([*base, *shlex.split(line.lstrip("#"))])
            continue
        base = out[-1] if APPENDED in line and out else None
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
            parser = build_parser(argv[0] if argv else None)
            try:
                args = parser.parse_args(argv)
            except SystemExit as stop:
                pytest.fail(f"{where}: `fanfuse {shlex.join(argv)}` does not parse (exit {stop.code})")
            if argv and argv[0] in command_parsers(parser):
                try:
                    refuse_idle_flags(argv[0], command_parsers(parser)[argv[0]], argv[1:], args)
                except InvalidSetting as refused:
                    pytest.fail(f"{where}: `fanfuse {shlex.join(argv)}` is refused: {refused}")


def test_the_synopsis_check_fails_on_a_bracket_line() -> None:
    """The check itself: an option line in brackets is a command named `[...`, which no program is."""
    (words,) = commands("               [--history conversation.jsonl] [--turn T]\n")
    assert Path(words[0]).name not in PROGRAMS


def test_lines_said_to_append_are_each_checked_with_the_command_above() -> None:
    """The check itself: each appended line is its own command, the one above plus that line."""
    block = "fanfuse search q --index i\n# Options (each line can be appended to the command above):\n"
    block += "#   --top-k 3\n#   --json\n"
    assert commands(block) == [
        ["fanfuse", "search", "q", "--index", "i"],
        ["fanfuse", "search", "q", "--index", "i", "--top-k", "3"],
        ["fanfuse", "search", "q", "--index", "i", "--json"],
    ]
