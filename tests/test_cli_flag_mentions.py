"""A refusal of the library or the core names every option it mentions as the command's flag, in every
form a message mentions one: at its start (`norms[0] must be ...`), with a value (`method 'isr'`,
`norm='zmuv'`, a suggestion `(format 'mtrag')`), an item of a list (`norms[0]`), after what to do with
it (`drop weights`, `leave norm unset`). Enumerated over every flag of every command's parser (the
mechanism's table, `fanfuse.cli._common.flags_by_name`), and end to end on the refusals users meet;
words that only look like option names (in quotes, in file names, in prose) are left as they are."""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from fanfuse import FusionError
from fanfuse.cli import build_parser, command_parsers, main
from fanfuse.cli._common import flags_by_name, named_by_flags
from fanfuse.errors import InvalidSetting


def _parsers() -> dict[str, argparse.ArgumentParser]:
    return command_parsers(build_parser(None))


def _named() -> Iterator[tuple[str, str, str]]:
    for command, parser in _parsers().items():
        for name, flag in flags_by_name(parser).items():
            yield command, name, flag


NAMED = sorted(_named())
# Each form a message mentions an option in: (message, what the mention becomes), NAME and FLAG
# standing for the option's name and its flag.
FORMS = [
    ("NAME must be one of a, b (got 'c')", "FLAG must be one of a, b (got 'c')"),
    ("NAME: xyzzy plugh", "FLAG: xyzzy plugh"),
    ("NAME[0] must be one of a, b (got 'c')", "value 1 of FLAG must be one of a, b (got 'c')"),
    ("the list NAME[2] is wrong", "the list value 3 of FLAG is wrong"),
    (
        "xyzzy would ignore it, so NAME='x' would do nothing; leave NAME unset",
        "xyzzy would ignore it, so FLAG 'x' would do nothing; leave FLAG unset",
    ),
    (
        "write xyzzy (NAME 'y'), which keeps them",
        "write xyzzy (FLAG 'y'), which keeps them",
    ),
    ("it has no such thing; drop NAME, or change it", "it has no such thing; drop FLAG, or change it"),
    ("give NAME= with a value", "give FLAG with a value"),
]


def _bare(message: str, name: str) -> bool:
    """Whether `message` mentions the option `name` by that name (not its flag), outside quotes: as
    its subject, with a value or an item, or after what to do with it (prose may use the word)."""
    unquoted = re.sub(r"'[^']*'|\"[^\"]*\"", "''", message)
    word = rf"(?<![\w./-]){re.escape(name)}(?![\w-])"
    forms = rf"^{word}|{word}(?:\[|=| '')|\b(?:drop|leave|give|set|unset|omit|pass|remove) {word}"
    return re.search(forms, unquoted) is not None


def test_the_table_holds_no_help_and_no_old_spelling() -> None:
    for command, name, flag in NAMED:
        assert name not in ("help", argparse.SUPPRESS), (command, name, flag)


@pytest.mark.parametrize(("command", "name", "flag"), NAMED)
@pytest.mark.parametrize(("form", "becomes"), FORMS)
def test_every_form_of_a_mention_names_the_flag(
    command: str, name: str, flag: str, form: str, becomes: str
) -> None:
    message = form.replace("NAME", name)
    with pytest.raises(InvalidSetting) as refused, named_by_flags(_parsers()[command]):
        raise InvalidSetting(message)
    said = str(refused.value)
    assert said == becomes.replace("FLAG", flag)
    assert flag in said and not _bare(said, name), said


@pytest.mark.parametrize(("command", "name", "flag"), NAMED)
def test_words_that_only_look_like_an_option_are_kept(command: str, name: str, flag: str) -> None:
    kept = [
        f"the value 'a {name}' is unknown (got \"{name}\")",  # quoted values
        f"{name}.trec:3: the line has 5 fields",  # a file name
        f"./{name}:3: the line has 5 fields",
        f"runs/{name} has no score column",
        f"the {name}s and per-list {name} are fine",  # prose
    ]
    for message in kept:
        with pytest.raises(FusionError) as refused, named_by_flags(_parsers()[command]):
            raise FusionError(message)
        assert str(refused.value) == message


def test_a_file_named_as_an_option_is_kept(tmp_path: Path) -> None:
    parser = _parsers()["fuse"]
    args = parser.parse_args(["weights", "norm", "-o", "out"])
    for message in ("weights has no score column ('score')", "norm:3: the line has 5 fields"):
        with pytest.raises(FusionError) as refused, named_by_flags(parser, args):
            raise FusionError(message)
        assert str(refused.value) == message


def _err(argv: list[str]) -> str:
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        assert main(argv) == 2
    return err.getvalue()


@pytest.fixture()
def runs(tmp_path: Path) -> dict[str, str]:
    lines = "".join(f"q{q} Q0 d{d} {d + 1} {5 - d} r\n" for q in range(6) for d in range(3))
    (tmp_path / "a.trec").write_text(lines)
    (tmp_path / "b.trec").write_text(lines.replace("d1 ", "d9 "))
    (tmp_path / "q.txt").write_text("".join(f"q{q} 0 d{q % 3} 1\n" for q in range(6)))
    (tmp_path / "brace.jsonl").write_text(
        json.dumps({"task_id": "{q", "Collection": "c", "contexts": [{"document_id": "d", "score": 1}]})
        + "\n"
    )
    return {p.stem: str(p) for p in tmp_path.iterdir()} | {"out": str(tmp_path / "out.trec")}


def _assert_named(err: str, flag: str, name: str) -> None:
    assert flag in err and not _bare(err.partition(": error: ")[2], name), err


def test_tune_names_norms(runs: dict[str, str]) -> None:
    err = _err(
        [
            "tune",
            runs["a"],
            runs["b"],
            "--qrels",
            runs["q"],
            "--method",
            "combsum",
            "--folds",
            "2",
            "--norms",
            "bogus",
        ]
    )
    assert "value 1 of --norms must be one of" in err, err
    _assert_named(err, "--norms", "norms")


def test_fuse_names_weights_norm_and_method(runs: dict[str, str]) -> None:
    err = _err(["fuse", runs["a"], runs["b"], "-o", runs["out"], "--weights", "1,2", "--method", "isr"])
    assert "drop --weights" in err and "--method 'isr'" in err, err
    _assert_named(err, "--weights", "weights")
    _assert_named(err, "--method", "method")
    # A norm beside a method that reads none is the command's own refusal (docs/cli.md), in flags.
    err = _err(["fuse", runs["a"], runs["b"], "-o", runs["out"], "--norm", "zmuv"])
    assert err.startswith("fanfuse fuse: error: --norm goes with --method combsum"), err
    _assert_named(err, "--norm", "norm")


def test_eval_names_metrics(runs: dict[str, str]) -> None:
    err = _err(["eval", runs["a"], "--qrels", runs["q"], "--metrics", "bogus"])
    assert err.startswith("fanfuse eval: error: --metrics 'bogus': unknown name"), err
    _assert_named(err, "--metrics", "metric")


def test_fuse_names_rank_from_for_a_table_without_scores(runs: dict[str, str], tmp_path: Path) -> None:
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    table = tmp_path / "ranks.parquet"
    pq.write_table(pa.table({"qid": ["q1", "q1"], "docid": ["d1", "d2"], "rank": [1, 2]}), table)
    err = _err(["fuse", str(table), runs["a"], "-o", runs["out"]])
    assert "(--rank-from 'rank' or 'file')" in err, err
    _assert_named(err, "--rank-from", "rank_from")


def test_trec_write_refusals_suggest_the_run_format_flag(runs: dict[str, str]) -> None:
    err = _err(["fuse", runs["brace"], "-o", runs["out"]])
    assert "(--run-format 'mtrag')" in err, err
    _assert_named(err, "--run-format", "format")
    assert not Path(runs["out"]).exists()
