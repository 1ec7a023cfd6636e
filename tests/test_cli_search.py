"""`fanfuse index` and `fanfuse search` end to end on a small corpus, and their error paths."""

from __future__ import annotations

import io
import json
import re
from pathlib import Path

import pytest
from fanfuse.cli import main
from fanfuse.cli.progress import ProgressBar
from fanfuse.retrievers.tantivy_index import TantivyRetriever
from llm_server import ScriptedChatServer, llm_server

__all__ = ["llm_server"]  # the fixture, imported for pytest

CORPUS = [
    {
        "doc": "owl",
        "body": "Owls are nocturnal birds of prey that hunt mice at night.",
        "name": "Owls",
        "zone": "a",
    },
    {"doc": "hawk", "body": "Hawks are birds of prey that hunt by day.", "name": "Hawks", "zone": "b"},
    {"doc": "bat", "body": "Bats are nocturnal mammals that fly at night.", "name": "Bats", "zone": "a"},
    {"doc": "mole", "body": "Moles dig tunnels underground.", "name": "Moles", "zone": "b"},
]


@pytest.fixture()
def index_dir(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Path:
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text("".join(json.dumps(r) + "\n" for r in CORPUS), encoding="utf-8")
    args = ["index", str(corpus), "--index", str(tmp_path / "idx")]
    assert main([*args, "--id-field", "doc", "--text-field", "body", "--title-field", "name"]) == 0
    assert "indexed 4 documents" in capsys.readouterr().out
    return tmp_path / "idx"


def test_search_prints_table_variants_and_timings(
    index_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["search", "--index", str(index_dir), "nocturnal birds of prey", "--top-k", "3"]) == 0
    out = capsys.readouterr().out
    rows = [line.split() for line in out.splitlines() if line.strip()[:2] in ("1 ", "2 ", "3 ")]
    assert rows[0][1] == "owl" and len(rows) == 3
    assert "[0] nocturnal birds of prey  (original)" in out
    assert "(feedback)" in out and "[2] nocturnal birds prey  (heuristic)" in out
    assert "branches in" in out and "fusion" in out


def test_search_json_has_hits_with_provenance(index_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert (
        main(["search", "--index", str(index_dir), "nocturnal at night", "--json", "--max-variants", "2"])
        == 0
    )
    result = json.loads(capsys.readouterr().out)
    assert len(result["diagnostics"]["variants"]) == 2
    assert {h["id"] for h in result["hits"][:2]} == {"owl", "bat"}
    first = result["hits"][0]
    assert first["payload"]["title"] == {"owl": "Owls", "bat": "Bats"}[first["id"]]
    assert {p["retriever"] for p in first["provenance"]} == {"bm25"}
    assert sum(p["contribution"] for p in first["provenance"]) == pytest.approx(first["score"])


def test_expander_none_is_a_single_query(index_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["search", "--index", str(index_dir), "birds of prey", "--expander", "none", "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert [v["text"] for v in result["diagnostics"]["variants"]] == ["birds of prey"]


def test_filter_and_explain(index_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["search", "--index", str(index_dir), "nocturnal", "--filter", "zone=a", "--explain"]) == 0
    out = capsys.readouterr().out
    assert "fused list (" in out and "a [0] bm25 rank 1 +" in out
    assert "hawk" not in out and "mole" not in out


def test_hybrid_search_adds_the_dense_retriever(index_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("sklearn")
    assert main(["search", "--index", str(index_dir), "nocturnal mammals", "--dense", "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert {b["retriever"] for b in result["diagnostics"]["branches"]} == {"bm25", "dense", "dense-feedback"}


def test_missing_index_is_a_clear_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["search", "--index", str(tmp_path / "none"), "owls"]) == 2
    assert "--index '" in (err := capsys.readouterr().err)
    assert "none': no such file or directory; give an index directory made by `fanfuse index`" in err


def test_bad_filter_is_a_clear_error(index_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["search", "--index", str(index_dir), "owls", "--filter", "zone"]) == 2
    assert "--filter 'zone': expected KEY=VALUE" in capsys.readouterr().err


def test_bad_corpus_line_names_file_line_and_keeps_the_index(
    index_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": "x", "text": "fine"}\n{"id": "y"}\n', encoding="utf-8")
    assert main(["index", str(bad), "--index", str(index_dir)]) == 2
    assert "bad.jsonl:2: document 'y' has no text field 'text'" in capsys.readouterr().err
    assert main(["search", "--index", str(index_dir), "owls", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["hits"][0]["id"] == "owl"


def test_missing_corpus_file_is_a_clear_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["index", str(tmp_path / "nope.jsonl"), "--index", str(tmp_path / "i")]) == 2
    assert "nope.jsonl': no such file or directory; give a JSONL file" in capsys.readouterr().err


class FakeTerminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_bar_draws_only_on_a_terminal() -> None:
    terminal, pipe = FakeTerminal(), io.StringIO()
    for stream in (terminal, pipe):
        bar = ProgressBar("indexing", total=4, stream=stream)
        bar(2)
        bar(4)
        bar.close()
    assert "2/4  50%" in terminal.getvalue() and terminal.getvalue().endswith("\n")
    assert pipe.getvalue() == ""


def test_readme_main_job_example_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8")
    section = readme.split("## The main job", 1)[1]
    code = re.search(r"```python\n(.*?)```", section, re.DOTALL)
    assert code is not None
    monkeypatch.chdir(tmp_path)
    docs = [
        {"id": "logs", "text": "Rotate the logs every night with logrotate."},
        {"id": "x", "text": "other"},
    ]
    TantivyRetriever.build(docs, tmp_path / "my-index")
    exec(code.group(1), {})
    assert capsys.readouterr().out.split()[0] == "logs"


def test_llm_expander_variants_from_a_chat_server(
    index_dir: Path, llm_server: ScriptedChatServer, capsys: pytest.CaptureFixture[str]
) -> None:
    llm_server.answer(json.dumps({"queries": ["owls hunting mice", "birds active at night"]}))
    args = ["search", "--index", str(index_dir), "what hunts at night", "--expander", "llm", "--json"]
    assert (
        main([*args, "--llm-base-url", llm_server.base_url, "--llm-model", "scripted", "--max-variants", "3"])
        == 0
    )
    result = json.loads(capsys.readouterr().out)
    variants = [(v["text"], v["source"]) for v in result["diagnostics"]["variants"]]
    assert variants == [
        ("what hunts at night", "original"),
        ("owls hunting mice", "llm"),
        ("birds active at night", "llm"),
    ]
    assert result["hits"][0]["id"] == "owl"
    assert llm_server.requests[0].body["model"] == "scripted"


def test_llm_expander_without_a_model_is_a_clear_error(
    index_dir: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("FANFUSE_LLM_MODEL", raising=False)
    assert main(["search", "--index", str(index_dir), "owls", "--expander", "llm"]) == 2
    assert "needs a model" in capsys.readouterr().err


def searched_variants(index_dir: Path, capsys: pytest.CaptureFixture[str], *flags: str) -> list[str]:
    assert main(["search", "--index", str(index_dir), "nocturnal birds of prey", "--json", *flags]) == 0
    return [v["text"] for v in json.loads(capsys.readouterr().out)["diagnostics"]["variants"]]


@pytest.mark.parametrize(
    ("environ", "flags", "count"),
    [
        ({"FANFUSE_QUERY_EXPANSION": "off"}, [], 1),
        ({"FANFUSE_QUERY_EXPANSION": "off"}, ["--expander", "heuristic"], 3),  # the flag wins
        ({"FANFUSE_MAX_QUERY_VARIANTS": "2"}, [], 2),
        ({"FANFUSE_MAX_QUERY_VARIANTS": "2"}, ["--max-variants", "3"], 3),  # the flag wins
        ({"FANFUSE_QUERY_EXPANSION": "on"}, ["--expander", "none"], 1),
    ],
)
def test_search_follows_the_environment_unless_a_flag_is_given(
    index_dir: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    environ: dict[str, str],
    flags: list[str],
    count: int,
) -> None:
    for name, value in environ.items():
        monkeypatch.setenv(name, value)
    assert len(searched_variants(index_dir, capsys, *flags)) == count


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--max-variants", "9"], "--max-variants: must be an int from 1 to 5"),
        (["--top-k", "-1"], "--top-k: must be an int >= 0 (0 keeps all, up to 10000)"),
        (["--rrf-k", "nan"], "--rrf-k: must be a finite number > 0"),
    ],
)
def test_search_numbers_out_of_range_name_the_flag(
    index_dir: Path, capsys: pytest.CaptureFixture[str], flags: list[str], message: str
) -> None:
    # argparse refuses the int flags (SystemExit 2); the library check refuses the float one (returns 2).
    try:
        code = main(["search", "--index", str(index_dir), "owls", *flags])
    except SystemExit as stop:
        code = stop.code
    assert code == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1


def test_search_with_a_bad_environment_is_a_clear_error(
    index_dir: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FANFUSE_MAX_QUERY_VARIANTS", "9")
    assert main(["search", "--index", str(index_dir), "owls"]) == 2
    assert "FANFUSE_MAX_QUERY_VARIANTS must be an int from 1 to 5" in capsys.readouterr().err


def test_a_title_field_no_document_has_is_refused_and_the_index_kept(
    index_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    corpus = index_dir.parent / "corpus.jsonl"
    before = sorted(p.relative_to(index_dir) for p in index_dir.rglob("*"))
    args = ["index", str(corpus), "--index", str(index_dir), "--id-field", "doc", "--text-field", "body"]
    assert main([*args, "--title-field", "headline"]) == 2
    assert capsys.readouterr().err == (
        f"fanfuse index: error: {corpus}: no document has a title under 'headline' (--title-field); "
        "the first one's keys: doc, body, name, zone; drop --title-field or give the key of the titles\n"
    )
    assert sorted(p.relative_to(index_dir) for p in index_dir.rglob("*")) == before
    assert TantivyRetriever(index_dir).search("owls", 1)[0].payload["title"] == "Owls"
    # Left out, the key `title` is read where documents have it, and nothing is asked of those without.
    assert main(args) == 0
    assert "indexed 4 documents" in capsys.readouterr().out
    assert TantivyRetriever(index_dir).search("owls", 1)[0].payload["title"] == ""
