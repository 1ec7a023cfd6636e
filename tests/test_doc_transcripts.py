"""Every transcript of the README and docs/ (a fenced block whose lines start `$ fanfuse ...`, each
followed by what the command prints) is what the command prints: each one runs, as the console script
does, in a directory holding the files the transcripts name, and its output must equal the lines
shown under it (an input missing from `FILES` shows up as the command's refusal to read it)."""

from __future__ import annotations

import json
import re
import shlex
import subprocess
from pathlib import Path

import pytest
from cli_process import CLI
from command_inputs import RUN_A, RUN_B

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]

# The files the transcripts read, by the names they use.
FILES = {
    "a.run": RUN_A,
    "b.run": RUN_B,
    "corpus.jsonl": "".join(
        json.dumps({"id": f"doc{i}", "text": f"alpha {i}", "title": f"Title {i}"}) + "\n" for i in range(5)
    ),
}


def transcripts() -> list[tuple[str, str, list[str]]]:
    """(page:line, the command, the lines it prints) of every `$ fanfuse` line in a fenced block."""
    found = []
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        for block in re.finditer(r"^```[a-z]*\n(.*?)^```", text, re.DOTALL | re.MULTILINE):
            first = text[: block.start()].count("\n") + 2
            lines = block.group(1).splitlines()
            for at, line in enumerate(lines):
                if line.startswith("$ fanfuse "):
                    shown = []
                    for after in lines[at + 1 :]:
                        if after.startswith("$ "):
                            break
                        shown.append(after)
                    found.append((f"{page.relative_to(ROOT)}:{first + at}", line[2:], shown))
    return found


TRANSCRIPTS = transcripts()


def test_the_pages_hold_transcripts() -> None:
    """The collection itself: the pages' transcripts are found (a changed fence would lose them all)."""
    assert len(TRANSCRIPTS) >= 4, TRANSCRIPTS


@pytest.mark.parametrize(("where", "command", "shown"), TRANSCRIPTS, ids=[w for w, _, _ in TRANSCRIPTS])
def test_a_transcript_prints_what_it_shows(
    where: str, command: str, shown: list[str], tmp_path: Path
) -> None:
    for name, text in FILES.items():
        (tmp_path / name).write_text(text)
    words = shlex.split(command)
    done = subprocess.run(
        [*CLI, *words[1:]], cwd=tmp_path, capture_output=True, text=True, timeout=120, check=False
    )
    printed = (done.stdout + done.stderr).splitlines()
    assert printed == shown, f"{where}: `{command}` printed\n" + "\n".join(printed)
