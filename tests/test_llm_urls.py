"""A URL the LLM client is given is refused where it is given, naming where it came from, when it
is no URL: whitespace or a control character in it (Python's `urlsplit` drops tabs and line breaks
without a word, so `http://host/v1\\r\\nX: y` would have been sent somewhere else on every search) or
a bracket left open (a bare `ValueError: Invalid IPv6 URL`). Every way in: the argument, the
environment variable, each command's --llm-base-url (from the argparse parsers), the proxy
variables."""

from __future__ import annotations

from pathlib import Path

import pytest
from fanfuse.cli import main
from fanfuse.errors import InvalidSetting
from fanfuse.multiquery import LLMExpander
from fanfuse.retrievers.tantivy_index import TantivyRetriever
from test_cli_idle_flags import PARSERS
from test_cli_search_options import DOCUMENTS

BAD_URLS = {
    "line break": ("http://127.0.0.1:9/v1\r\nX: y", "a line break at position 22"),
    "tab": ("http://127.0.0.1:9/v\t1", "a tab at position 21"),
    "space": ("http://127.0.0.1:9/v 1", "a space at position 21"),
    "NUL": ("http://127.0.0.1:9/v1\x00", "a control character at position 22"),
    "DEL": ("http://127.0.0.1:9/\x7fv1", "a control character at position 20"),
    "invisible": ("http://127.0.0.1:9/\u200bv1", "a non-ASCII character at position 20"),
    "open bracket": ("http://[::1", "is not a URL: Invalid IPv6 URL (got 'http://[::1')"),
}


@pytest.mark.parametrize("case", BAD_URLS)
def test_the_argument_and_the_variable_refuse_it(case: str) -> None:
    url, expected = BAD_URLS[case]
    with pytest.raises(InvalidSetting, match="base_url \\(or FANFUSE_LLM_BASE_URL\\)") as given:
        LLMExpander(url, model="m", environ={})
    assert expected in str(given.value)
    with pytest.raises(InvalidSetting) as from_variable:
        LLMExpander(model="m", environ={"FANFUSE_LLM_BASE_URL": url})
    assert str(from_variable.value) == str(given.value)


COMMANDS = sorted(
    command
    for command, parser in PARSERS.items()
    if any("--llm-base-url" in action.option_strings for action in parser._actions)
)
# What each command needs beside the URL, `{index}` a small index.
ARGUMENTS = {"search": ["owls", "--index", "{index}"], "serve": ["--index", "{index}", "--port", "0"]}


def test_every_command_that_takes_the_url_is_listed() -> None:
    assert set(COMMANDS) == set(ARGUMENTS)


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("llm-urls") / "idx"
    TantivyRetriever.build(DOCUMENTS, directory)
    return directory


@pytest.mark.parametrize("case", BAD_URLS)
@pytest.mark.parametrize("command", COMMANDS)
def test_each_command_refuses_it_naming_the_flag(
    command: str, case: str, index: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    if command == "serve":
        pytest.importorskip("uvicorn", reason="fanfuse[serve] is not installed")
    url, expected = BAD_URLS[case]
    argv = [word.format(index=index) for word in ARGUMENTS[command]]
    code = main([command, *argv, "--expander", "llm", "--llm-model", "m", "--llm-base-url", url])
    captured = capsys.readouterr()
    assert code == 2
    assert captured.out == ""
    assert captured.err.startswith(f"fanfuse {command}: error: --llm-base-url "), captured.err
    assert captured.err.count("\n") == 1, captured.err
    assert expected in captured.err


@pytest.mark.parametrize("variable", ["HTTP_PROXY", "HTTPS_PROXY"])
@pytest.mark.parametrize("case", [case for case in BAD_URLS if case != "NUL"])  # no variable holds NUL
def test_the_proxy_variables_refuse_it_without_showing_it(
    variable: str, case: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    url, expected = BAD_URLS[case]
    proxy = url.replace("127.0.0.1:9", "user:secret@127.0.0.1:9")
    monkeypatch.setenv(variable, proxy)
    for name in ("NO_PROXY", "no_proxy", variable.lower()):
        monkeypatch.delenv(name, raising=False)
    scheme = variable.removesuffix("_PROXY").lower()
    with pytest.raises(InvalidSetting, match=f"^{variable} ") as refused:
        LLMExpander(f"{scheme}://api.example.invalid/v1", model="m", environ={})
    assert expected.split(" at position")[0].split(" (got")[0] in str(refused.value)
    assert "secret" not in str(refused.value)
