"""The documentation and the code's comments describe the code as it is, not how it got there: no
"before this work", "this branch changed", "was 0.4 s", no commit hash standing for an older build.
History lives in git log; a measurement compares named alternatives measured in the same run.

Scanned: README.md and docs/*.md outside fenced code blocks; the comments and docstrings of every
Python file (python/, benches/, tests/), the comments of every Rust file (rust/, fuzz/), of the
Makefile and of the shell scripts."""

from __future__ import annotations

import ast
import io
import re
import tokenize
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

# Phrases that only tell how the code got here. Each is word-bounded and narrow enough that the
# project's plain descriptions do not match it ("used to" alone would catch "the seed used to draw").
HISTORY = re.compile(
    r"|".join(
        [
            r"\bbefore (?:this|these|the) (?:work|change|changes|branch|commit|fix|cuts?|routing|rewrite)\b",
            r"\bafter (?:this|these|the) (?:work|change|changes|branch|commit|fix)\b",
            r"\bthis (?:branch|PR|helper|commit)\b",
            r"\bthis work\b(?! ?s)",
            r"\bstart of this\b",
            r"\bwhat (?:this|the) (?:branch|change|work) (?:changed|did|added)\b",
            r"\bwhat changed\b",
            r"\bwe (?:changed|replaced|removed|rewrote|moved)\b",
            r"\bwas now\b",
            r"\bused to be\b",
            r"\bpreviously\b",
            r"\bformerly\b",
            r"\bnot anymore\b",
            r"\bno longer (?:reaches|copies|reads|writes|uses|imports|loads|calls|runs|takes|goes|builds)\b",
            r"\bthe (?:old|new) (?:build|code|kernel|path|design|binding|route)\b",
            r"\bthe old one-",
            r"\bold build(?:'s|:)",
            r"\bfanfuse before\s*(?:\||\(|$)",
            r"\(was [^)]*\)",
            r"\bit was \d",
            r"\bnow (?!is\b|has\b)[a-z]+s\b",
            r"\bas before\b",
            r"\bthis replaces\b",
            r"\b(?:this|which) (?:halved|doubled)\b",
            r"\b(?:was|were) the (?:kernel's )?(?:most|largest)\b",
            r"\bthis replaced\b",
            r"\b(?:later|earlier) commits?\b",
            r"\|\s*(?:before|after)\b[^|]*\|",
            r"(?-i:(?:^|\. )(?:Before|After): )",
            r"\"before\"",
            r"\bat main\b",
            r"\bmain's code\b",
        ]
    ),
    re.IGNORECASE,
)
# A commit hash in prose: 7 to 40 hex digits with at least one digit and one letter, not part of a
# longer word or path (an index folder `clapnq-8f3fc918bddfc297` is a name, not a commit). A ref
# given to a bench's `--ref`/`--ab` is a command's argument: the prose beside it names what it is.
COMMIT = re.compile(
    r"(?<![\w/.-])(?<!--ref )(?<!--ab )(?=[0-9a-f]*[0-9])(?=[0-9a-f]*[a-f])[0-9a-f]{7,40}(?![\w-])"
)

# Lines that match a pattern and still describe the code as it is: (file, a piece of the line): why.
ALLOWED: dict[tuple[str, str], str] = {
    ("README.md", "rustc 1.95.0 (59807616e"): "rustc's own version string, not a commit of this project",
}


def doc_lines(path: Path) -> list[tuple[int, str]]:
    """The page's prose lines (fenced code blocks left out: a command may name a git ref to compare)."""
    out, fenced = [], False
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if line.lstrip().startswith("```"):
            fenced = not fenced
        elif not fenced:
            out.append((number, line))
    return out


def python_lines(path: Path) -> list[tuple[int, str]]:
    """The file's comments and docstrings, line by line."""
    source = path.read_text(encoding="utf-8")
    out = []
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type == tokenize.COMMENT:
            out.append((token.start[0], token.string))
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            docstring = ast.get_docstring(node, clean=False)
            if docstring is not None:
                first = node.body[0].lineno
                out.extend((first + i, text) for i, text in enumerate(docstring.splitlines()))
    return out


def rust_lines(path: Path) -> list[tuple[int, str]]:
    """The file's `//` comments (line, doc and inner doc), a string's `//` (a URL) left out."""
    out = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        code = re.sub(r'"(?:\\.|[^"\\])*"', '""', line)
        if "//" in code:
            out.append((number, code.split("//", 1)[1]))
    return out


def hash_comment_lines(path: Path) -> list[tuple[int, str]]:
    """The `#` comment lines of a shell script or the Makefile."""
    lines = enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
    return [(number, line) for number, line in lines if line.lstrip().startswith("#")]


def scanned() -> list[tuple[str, int, str]]:
    lines = []
    for page in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        lines += [(str(page.relative_to(ROOT)), n, text) for n, text in doc_lines(page)]
    for folder in ("python", "benches", "tests"):
        for path in sorted((ROOT / folder).rglob("*.py*")):
            if path.suffix in (".py", ".pyi") and path.name != Path(__file__).name:
                lines += [(str(path.relative_to(ROOT)), n, text) for n, text in python_lines(path)]
    for folder in ("rust", "fuzz"):
        for path in sorted((ROOT / folder).rglob("*.rs")):
            lines += [(str(path.relative_to(ROOT)), n, text) for n, text in rust_lines(path)]
    for path in [ROOT / "Makefile", *sorted(ROOT.glob("scripts/*.sh")), *sorted(ROOT.glob("fuzz/*.sh"))]:
        lines += [(str(path.relative_to(ROOT)), n, text) for n, text in hash_comment_lines(path)]
    return lines


def history_lines(lines: list[tuple[str, int, str]]) -> list[str]:
    """Each line that holds a history phrase, read with the line after it when that one follows it
    (a phrase wrapped over two lines of a paragraph or a comment is caught at its first line)."""
    found = []
    for at, (where, number, text) in enumerate(lines):
        window = text
        if at + 1 < len(lines) and lines[at + 1][:2] == (where, number + 1):
            window += " " + lines[at + 1][2].lstrip("#/! \t")
        hit = HISTORY.search(window) or COMMIT.search(window)
        if hit is None or hit.start() >= len(text):
            continue
        if not any(where == path and piece in text for path, piece in ALLOWED):
            found.append(f"{where}:{number}: {hit.group(0).strip()!r} in {text.strip()[:120]!r}")
    return found


def test_docs_and_comments_describe_the_code_as_it_is() -> None:
    found = history_lines(scanned())
    assert not found, "history in the docs or comments (git log holds it):\n" + "\n".join(found)


@pytest.mark.parametrize(
    "text",
    [
        "Mispredictions fell before this work.",
        "What this branch changed (CPU per line):",
        "| before | bm25 | default | 212.8 |",
        '"before" is the build of a5ebd60.',
        "Lines are slices of one buffer (was `read_until` into a line buffer).",
        "The reader no longer copies.",
    ],
)
def test_the_scan_catches_a_history_line(text: str) -> None:
    assert HISTORY.search(text) or COMMIT.search(text)


@pytest.mark.parametrize(
    "text",
    [
        "The seed used to draw the sample.",
        "Read the index at .cache/mtrag-indexes/clapnq-8f3fc918bddfc297.",
        "Before the first branch starts: planning and expansion.",
        "The caller is woken after the last end.",
        "A float compare rejects most candidates before the full order is evaluated.",
    ],
)
def test_the_scan_passes_a_plain_description(text: str) -> None:
    assert not (HISTORY.search(text) or COMMIT.search(text))


def test_a_phrase_wrapped_over_two_lines_is_found_at_its_first() -> None:
    lines = [("a.rs", 7, "/ Slices of one buffer. This"), ("a.rs", 8, "/ replaced `read_until`.")]
    assert history_lines(lines) == ["a.rs:7: 'This replaced' in '/ Slices of one buffer. This'"]
    apart = [("a.rs", 7, "/ Slices of one buffer. This"), ("a.rs", 9, "/ replaced `read_until`.")]
    assert history_lines(apart) == []
