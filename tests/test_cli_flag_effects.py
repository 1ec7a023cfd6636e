"""Every flag of `fuse`, `eval`, `search` and `tune`, given on a small input, either changes what the
command writes or is refused naming it (`fanfuse.cli.idle_flags`); a search's flags do so whatever
the environment leaves to them (`FANFUSE_QUERY_EXPANSION`, `FANFUSE_MAX_QUERY_VARIANTS`)."""

from __future__ import annotations

import argparse
import json
import random
from collections.abc import Callable
from pathlib import Path

import pytest
from fanfuse.cli import main
from fanfuse.cli.flags import Renamed
from test_cli_idle_flags import PARSERS, main_code

# Every flag of the run-file commands, given on a small input, with a value other than its default.
# Each must change what the command writes, or be refused naming it. Flags that change how the work
# runs and never what it writes are listed apart, each with why.
RUN_A = "q1 Q0 d1 2 1.0 a\nq1 Q0 d2 3 3.0 a\nq1 Q0 d3 1 2.0 a\nq2 Q0 d5 1 2.0 a\nq2 Q0 d6 2 1.0 a\n"
RUN_B = "q1 Q0 d4 1 5.0 b\nq1 Q0 d1 2 4.0 b\nq2 Q0 d6 1 9.0 b\nq2 Q0 d7 2 1.0 b\n"
RUN_C = "q1 Q0 d3 1 5.0 c\nq1 Q0 d2 2 4.0 c\nq2 Q0 d6 1 9.0 c\nq2 Q0 d5 2 1.0 c\nq3 Q0 d8 1 1.0 c\n"
QRELS = "q1 0 d1 1\nq1 0 d3 2\nq2 0 d6 1\nq2 0 d7 1\nq3 0 d8 1\n"

FUSE_VALUES = {
    "--method": ["isr"],
    "--train-runs": ["a.run", "b.run"],
    "--train-qrels": ["qrels"],
    "--segments": ["3"],
    "--window": ["3"],
    "--model": ["model.json"],
    "--save-model": ["saved.json"],
    "--norm": ["min-max"],
    "--rrf-k": ["5"],
    "--weights": ["1,3"],
    "--phi": ["0.5"],
    "--sigma": ["0.5"],
    "--gamma": ["2"],
    "--top-k": ["1"],
    "--rank-from": ["rank"],
    "--run-format": ["mtrag"],
    "--collection": ["c"],
    "--tag": ["other"],
    "--scheduler": ["tcp://127.0.0.1:1"],
    "--partitions": ["2"],
}
FUSE_SAME_OUTPUT = {
    "--output": "the base of every call",
    "--help": "prints the help",
    "--threads": "any number of threads writes the same bytes",
    "--engine": "the Dask engine writes the same bytes (tests/test_dask_engine.py)",
}
EVAL_VALUES = {
    "--qrels": None,
    "--metrics": ["map"],
    "--iterations": ["50"],
    "--seed": ["3"],
    "--json": [],
    "--scheduler": ["tcp://127.0.0.1:1"],
    "--partitions": ["2"],
    "--baseline": ["1"],
    "--test": ["wilcoxon"],
    "--correction": ["none"],
    "--alpha": ["0.9"],
    "--format": ["csv"],
    "--rank-from": ["rank"],
}
EVAL_SAME_OUTPUT = {
    "--help": "prints the help",
    "--engine": "the Dask engine evaluates the same numbers (tests/test_dask_engine.py)",
    "--output": "writes the same report to a file",
    "--plot": "writes a picture besides the report (tests/test_report_plot.py)",
}


def assert_changed_or_refused(flag: str, code: int, err: str, changed: Callable[[], bool]) -> None:
    """The command given ``flag`` changed what it writes, or refused the flag naming it (exit 2)."""
    if code == 2:
        assert f"error: {flag}" in err
    else:
        assert code == 0, err
        assert changed()


def assert_printed_changed_or_refused(
    words: list[str],
    flag: list[str],
    capsys: pytest.CaptureFixture[str],
    read: Callable[[str], object] = str,
) -> None:
    """The command of ``words`` prints something other than without ``flag`` (its words), as ``read``
    sees it, or refuses the flag naming it."""
    assert main(words) == 0
    base = read(capsys.readouterr().out)
    code = main_code([*words, *flag])
    out, err = capsys.readouterr()
    assert_changed_or_refused(flag[0], code, err, lambda: read(out) != base)


def long_flags(parser: argparse.ArgumentParser) -> set[str]:
    return {a.option_strings[-1] for a in parser._actions if a.option_strings and not isinstance(a, Renamed)}


@pytest.mark.parametrize(
    ("command", "values", "same"),
    [("fuse", FUSE_VALUES, FUSE_SAME_OUTPUT), ("eval", EVAL_VALUES, EVAL_SAME_OUTPUT)],
)
def test_every_flag_of_the_run_file_commands_is_classified(
    command: str, values: dict[str, object], same: dict[str, str]
) -> None:
    assert long_flags(PARSERS[command]) == set(values) | set(same)


@pytest.mark.parametrize("flag", sorted(FUSE_VALUES))
def test_every_flag_of_fuse_changes_the_run_written_or_is_refused(
    flag: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    for name, text in {"a.run": RUN_A, "b.run": RUN_B, "qrels": QRELS}.items():
        Path(name).write_text(text)
    assert main(["fuse", "a.run", "b.run", "-o", "base.run"]) == 0
    code = main_code(["fuse", "a.run", "b.run", "-o", "out.run", flag, *FUSE_VALUES[flag]])
    err = capsys.readouterr().err
    assert_changed_or_refused(
        flag, code, err, lambda: Path("out.run").read_bytes() != Path("base.run").read_bytes()
    )
    assert code == 0 or not Path("out.run").exists()


@pytest.mark.parametrize("flag", sorted(set(EVAL_VALUES) - {"--qrels"}))
def test_every_flag_of_eval_changes_the_report_or_is_refused(
    flag: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    for name, text in {"a.run": RUN_A, "b.run": RUN_B, "c.run": RUN_C, "qrels": QRELS}.items():
        Path(name).write_text(text)
    values = EVAL_VALUES[flag]
    assert values is not None
    words = ["eval", "a.run", "b.run", "c.run", "--qrels", "qrels"]
    assert_printed_changed_or_refused(words, [flag, *values], capsys)


# Every flag of `search`: the words given with it (besides the flag's own), and its value. Each must
# change the JSON answer over a small index, or be refused naming it.
SEARCH_VALUES: dict[str, tuple[list[str], list[str]]] = {
    "--history": ([], ["history.jsonl"]),
    "--turn": ([], ["tell me about bats"]),
    "--expander": ([], ["none"]),
    "--llm-base-url": ([], ["http://127.0.0.1:9/v1"]),
    "--llm-model": ([], ["m"]),
    "--strategy": ([], ["condense"]),
    "--instructions": ([], ["About owls."]),
    "--temperature": ([], ["0.5"]),
    "--max-tokens": ([], ["5"]),
    "--llm-timeout": ([], ["1"]),
    "--max-variants": ([], ["1"]),
    "--top-k": ([], ["1"]),
    "--method": ([], ["isr"]),
    "--norm": ([], ["min-max"]),
    "--rrf-k": ([], ["5"]),
    # Two documents of one text tie under a score method over the question alone.
    "--tie-break": (["--method", "combsum", "--expander", "none"], ["id"]),
    "--filter": ([], ["lang=en"]),
    "--rerank": ([], ["mmr"]),
    "--mmr-lambda": ([], ["0.5"]),
    "--explain": ([], []),
}
SEARCH_SAME_OUTPUT = {
    "--index": "the base of every call",
    "--json": "the base of every call",
    "--help": "prints the help",
    "--no-dense": "this index stores no vectors; the hybrid search and its switch: tests/test_cli_dense.py",
}


def test_every_flag_of_search_is_classified() -> None:
    assert long_flags(PARSERS["search"]) == set(SEARCH_VALUES) | set(SEARCH_SAME_OUTPUT)


@pytest.fixture(scope="module")
def search_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from fanfuse.retrievers.tantivy_index import TantivyRetriever
    from test_cli_search_options import DOCUMENTS

    directory = tmp_path_factory.mktemp("search-flags")
    TantivyRetriever.build(DOCUMENTS, directory / "idx")
    (directory / "history.jsonl").write_text('{"role": "user", "content": "tell me about bats"}\n')
    return directory


# The environment a search reads where its flags leave a setting out, and the value each flag takes
# under it where the one above would only state what the environment gives.
SEARCH_ENVIRONMENTS: dict[str, tuple[dict[str, str], dict[str, list[str]]]] = {
    "unset": ({}, {}),
    "expansion-off": (
        {"FANFUSE_QUERY_EXPANSION": "off"},
        {"--expander": ["heuristic"], "--max-variants": ["3"]},
    ),
    "one-variant": ({"FANFUSE_MAX_QUERY_VARIANTS": "1"}, {"--max-variants": ["3"]}),
}
# What a flag may leave unchanged under one of them, without being refused, and why.
_CONVERSATION = "the conversation is context, never refused for going unread (docs/cli.md)"
SEARCH_SAME_UNDER: dict[tuple[str, str], str] = {
    **{
        (flag, environment): _CONVERSATION
        for flag in ("--history", "--turn")
        for environment in ("expansion-off", "one-variant")
    },
    # As --no-dense on an index without vectors: a switch stating what the setting gives already.
    ("--expander", "one-variant"): "--expander none states what one variant gives: the question alone",
}


def test_what_may_stay_unchanged_names_flags_and_environments() -> None:
    for flag, environment in SEARCH_SAME_UNDER:
        assert flag in SEARCH_VALUES and environment in SEARCH_ENVIRONMENTS


@pytest.mark.parametrize(
    ("flag", "environment"),
    [
        (flag, environment)
        for flag in sorted(SEARCH_VALUES)
        for environment in sorted(SEARCH_ENVIRONMENTS)
        if (flag, environment) not in SEARCH_SAME_UNDER
    ],
)
def test_every_flag_of_search_changes_the_answer_or_is_refused_whatever_the_environment(
    flag: str,
    environment: str,
    search_dir: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    from test_cli_search_options import QUERY, without_timings

    variables, values = SEARCH_ENVIRONMENTS[environment]
    for name in ("FANFUSE_QUERY_EXPANSION", "FANFUSE_MAX_QUERY_VARIANTS"):
        monkeypatch.delenv(name, raising=False)
    for name, value in variables.items():
        monkeypatch.setenv(name, value)
    monkeypatch.chdir(search_dir)
    companions, value = SEARCH_VALUES[flag]
    words = ["search", "--index", "idx", QUERY, "--json", *companions]
    flag_words = [flag, *values.get(flag, value)]
    assert_printed_changed_or_refused(words, flag_words, capsys, lambda out: without_timings(json.loads(out)))


def test_the_llm_flags_are_refused_where_the_environment_asks_for_one_variant(
    search_dir: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from test_cli_search_options import QUERY

    monkeypatch.chdir(search_dir)
    monkeypatch.setenv("FANFUSE_MAX_QUERY_VARIANTS", "1")
    llm = ["search", "--index", "idx", QUERY, "--expander", "llm", "--llm-base-url", "http://127.0.0.1:9/v1"]
    llm += ["--llm-model", "m"]
    assert main_code([*llm, "--strategy", "entity"]) == 2
    assert capsys.readouterr().err.startswith(
        "fanfuse search: error: --llm-base-url goes with more than one query variant (query expansion, and "
        "--max-variants, else FANFUSE_MAX_QUERY_VARIANTS, above 1) and would do nothing here"
    )
    # A --max-variants above 1 asks the model again (which is down here: the search falls back).
    assert main_code([*llm, "--max-variants", "2", "--json", "--llm-timeout", "1"]) == 0
    assert json.loads(capsys.readouterr().out)["diagnostics"]["expansion"]["fallback_reason"]


def test_max_variants_is_refused_where_the_environment_turns_expansion_off(
    search_dir: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from test_cli_search_options import QUERY

    monkeypatch.chdir(search_dir)
    monkeypatch.setenv("FANFUSE_QUERY_EXPANSION", "off")
    words = ["search", "--index", "idx", QUERY, "--json", "--max-variants", "3"]
    assert main_code(words) == 2
    err = capsys.readouterr().err
    assert (
        "--max-variants goes with query expansion (--expander heuristic or llm, or no --expander and " in err
    )
    assert err.rstrip().endswith("drop --max-variants or give --expander heuristic")
    assert main_code([*words, "--expander", "heuristic"]) == 0
    assert len(json.loads(capsys.readouterr().out)["diagnostics"]["variants"]) == 3


def test_a_malformed_variable_is_named_by_the_search_not_taken_for_a_setting(
    search_dir: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from test_cli_search_options import QUERY

    monkeypatch.chdir(search_dir)
    monkeypatch.setenv("FANFUSE_QUERY_EXPANSION", "maybe")
    assert main_code(["search", "--index", "idx", QUERY, "--max-variants", "3"]) == 2
    err = capsys.readouterr().err
    assert "FANFUSE_QUERY_EXPANSION" in err
    assert "goes with" not in err


def test_the_demo_refuses_max_variants_with_expansion_off_before_indexing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("FANFUSE_QUERY_EXPANSION", "off")
    cache = tmp_path / "cache"
    assert main_code(["demo", "--max-variants", "3", "--no-dense", "--cache-dir", str(cache)]) == 2
    assert capsys.readouterr().err.startswith(
        "fanfuse demo: error: --max-variants goes with query expansion (FANFUSE_QUERY_EXPANSION not off) "
        "and would do nothing here; drop --max-variants"
    )
    assert not cache.exists()


# Every flag of `tune`, over runs of enough queries that the split of the folds shows in the table.
TUNE_VALUES = {
    "--method": ["isr"],
    "--metric": ["map"],
    "--ks": ["5,60"],
    "--weight-levels": ["0,1"],
    "--phis": ["0.5"],
    "--sigmas": ["0.5"],
    "--gammas": ["2"],
    "--norms": ["min-max"],
    "--segment-counts": ["3"],
    "--windows": ["3"],
    "--search": ["coordinate"],
    "--folds": ["3"],
    "--seed": ["3"],
    "--json": [],
    "--rank-from": ["rank"],
}
TUNE_SAME_OUTPUT = {"--qrels": "the base of every call", "--help": "prints the help"}


def test_every_flag_of_tune_is_classified() -> None:
    assert long_flags(PARSERS["tune"]) == set(TUNE_VALUES) | set(TUNE_SAME_OUTPUT)


def write_tune_input(directory: Path) -> list[str]:
    """Three runs of 24 queries over 12 documents, and their qrels (seeded: the same files each time)."""
    rng = random.Random(1)
    documents = [f"d{i}" for i in range(12)]
    judged = [f"q{n} 0 {d} {rng.randint(1, 2)}\n" for n in range(24) for d in rng.sample(documents, 3)]
    (directory / "qrels").write_text("".join(judged))
    names = []
    for name in "abc":
        lines = [
            # Scores that disagree with the rank column, so that where ranks come from shows.
            f"q{n} Q0 {d} {rank} {rng.random() * 10:.3f} {name}\n"
            for n in range(24)
            for rank, d in enumerate(rng.sample(documents, 8), 1)
        ]
        (directory / f"{name}.run").write_text("".join(lines))
        names.append(f"{name}.run")
    return names


@pytest.mark.parametrize("flag", sorted(TUNE_VALUES))
def test_every_flag_of_tune_changes_the_report_or_is_refused(
    flag: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    words = ["tune", *write_tune_input(tmp_path), "--qrels", "qrels"]
    assert_printed_changed_or_refused(words, [flag, *TUNE_VALUES[flag]], capsys)


# Every flag of `index`, over a corpus whose records hold each field under two keys.
INDEX_VALUES = {"--id-field": ["doc"], "--text-field": ["body"], "--title-field": ["name"]}
INDEX_SAME_OUTPUT = {
    "--index": "the base of every call",
    "--help": "prints the help",
    "--dense": "adds vectors, which the BM25 search here does not read (tests/test_cli_dense.py)",
}
INDEX_RECORDS = [
    {
        "id": "a",
        "text": "owls hunt at night",
        "title": "Owls",
        "doc": "x",
        "body": "owls sleep by day",
        "name": "N1",
    },
    {"id": "b", "text": "owls and bats", "title": "Bats", "doc": "y", "body": "owls fly", "name": "N2"},
]


def test_every_flag_of_index_is_classified() -> None:
    assert long_flags(PARSERS["index"]) == set(INDEX_VALUES) | set(INDEX_SAME_OUTPUT)


@pytest.mark.parametrize("flag", sorted(INDEX_VALUES))
def test_every_flag_of_index_changes_the_documents_indexed_or_is_refused(
    flag: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from fanfuse.retrievers.tantivy_index import TantivyRetriever

    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text("".join(json.dumps(record) + "\n" for record in INDEX_RECORDS))

    def documents(index: str) -> list[tuple[str, dict[str, object]]]:
        return [(hit.id, dict(hit.payload)) for hit in TantivyRetriever(tmp_path / index).search("owls", 10)]

    assert main(["index", str(corpus), "--index", str(tmp_path / "base")]) == 0
    code = main_code(["index", str(corpus), "--index", str(tmp_path / "out"), flag, *INDEX_VALUES[flag]])
    err = capsys.readouterr().err
    assert_changed_or_refused(flag, code, err, lambda: documents("out") != documents("base"))
