"""The environment variables fanfuse reads are one table (`fanfuse.environment.VARIABLES`), and a set
variable that looks like a misspelling of one is named on standard error by every command."""

from __future__ import annotations

import contextlib
import re
from pathlib import Path

import pytest
from fanfuse.cli import COMMANDS, main
from fanfuse.environment import PREFIX, VARIABLES, misspelt

ROOT = Path(__file__).resolve().parents[1]
# Names with the prefix in the sources that are no variable: a constant of the framework adapters.
NOT_VARIABLES = {"FANFUSE_METADATA_KEYS"}
# Variables of this repository's own scripts and tests, which the package never reads.
HARNESS = [
    "FANFUSE_SETUP",
    "FANFUSE_WHEEL_BUILD",
    "FANFUSE_TEST_INSTALLED_WHEEL",
    "FANFUSE_HYPOTHESIS_PROFILE",
]


def quoted_names(paths: list[Path]) -> set[str]:
    found: set[str] = set()
    for path in paths:
        found |= set(re.findall(rf'"({PREFIX}[A-Z0-9_]+)"', path.read_text(encoding="utf-8")))
    return found


def test_the_table_is_every_variable_the_package_and_the_core_read() -> None:
    sources = [*(ROOT / "python" / "fanfuse").rglob("*.py"), *(ROOT / "rust").rglob("*.rs")]
    sources = [path for path in sources if path.name != "environment.py"]
    assert quoted_names(sources) - NOT_VARIABLES == set(VARIABLES)


def misspelling(name: str) -> str:
    """``name`` with the second-to-last letter of its own part dropped."""
    return name[:-2] + name[-1]


@pytest.mark.parametrize("name", sorted(VARIABLES))
def test_a_misspelt_variable_is_named_with_the_one_meant(
    name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    wrong = misspelling(name)
    assert wrong not in VARIABLES
    assert name in dict(misspelt({wrong: "1"}))[wrong]
    monkeypatch.setenv(wrong, "1")
    run = tmp_path / "a.run"
    run.write_text("q1 Q0 d1 1 1.0 a\n")
    assert main(["fuse", str(run), str(run), "-o", str(tmp_path / "out.run")]) == 0
    first = capsys.readouterr().err.splitlines()[0]
    assert first.startswith(f"fanfuse fuse: warning: {wrong} is set but fanfuse reads no such variable; ")
    assert name in first.partition("did you mean ")[2]


def test_other_variables_with_the_prefix_are_left_alone() -> None:
    assert misspelt(dict.fromkeys([*HARNESS, *VARIABLES, "PATH"], "1")) == []


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_every_command_warns(
    command: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before anything else of the command, so even one refused at once has said it."""
    monkeypatch.setenv("FANFUSE_NUM_THREAD", "2")
    with contextlib.suppress(SystemExit):
        main([command, "--definitely-not-a-flag"])
    err = capsys.readouterr().err
    assert "FANFUSE_NUM_THREAD is set but fanfuse reads no such variable" in err


def test_docs_cli_lists_the_variables() -> None:
    page = (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")
    for name, meaning in VARIABLES.items():
        assert f"| `{name}` | {meaning} |" in page
