"""`fanfuse tune`'s table shows every chosen parameter as the value its JSON holds: a float in the
fewest digits that read back to the same float, never rounded. Each searched option of
`fanfuse.tune.space.OPTIONS` is checked, through `Config.describe` (what the table prints) and
through the command; the help's default levels read back to the defaults too."""

from __future__ import annotations

import json
import random
import re
from pathlib import Path
from typing import Any

import pytest
from fanfuse import METHOD_PARAMETERS
from fanfuse.cli import build_parser, main
from fanfuse.cli.idle_flags import level_flag
from fanfuse.tune import Config
from fanfuse.tune.space import OPTIONS
from generated_runs import generated_qrels, generated_runs, write_beir_qrels, write_trec

# Per parameter, levels that six significant digits would round (but the norm and the counts).
LEVELS: dict[str, list[Any]] = {
    "k": [60.123456789012344],
    "weights": [0.30000000000000004, 1.0],
    "phi": [0.12345678901234568],
    "sigma": [0.0012345678901234567],
    "gamma": [1.2345678901234567],
    "norm": ["min-max"],
    "segments": [7],
    "window": [3],
}


def method_with(parameter: str) -> str:
    """The first method of the core's table that has `parameter` (a trained one only for theirs)."""
    return next(m for m, has in METHOD_PARAMETERS.items() if parameter in has)


def read_described(text: str) -> tuple[str, dict[str, Any]]:
    """The method and parameters of `Config.describe`'s text, each value read as the JSON holds it."""
    method, *pairs = text.split(" ")
    params: dict[str, Any] = {}
    for pair in pairs:
        name, _, value = pair.partition("=")
        if name == "weights":
            params[name] = [float(w) for w in value.split(",")]
        elif name == "norm":
            params[name] = value
        elif name in ("segments", "window"):
            params[name] = int(value)
        else:
            params[name] = float(value)
    return method, params


def test_every_option_has_awkward_levels_here() -> None:
    assert {option.parameter for option in OPTIONS} == set(LEVELS)


@pytest.mark.parametrize("parameter", list(LEVELS))
def test_describe_shows_each_value_exactly(parameter: str) -> None:
    method = method_with(parameter)
    value = tuple(LEVELS[parameter]) if parameter == "weights" else LEVELS[parameter][0]
    shown = Config(method, {parameter: value}).describe()  # type: ignore[arg-type]
    expected = list(value) if parameter == "weights" else value
    assert read_described(shown) == (method, {parameter: expected}), shown
    if isinstance(value, float):
        assert f"{parameter}={value!r}" == shown.split(" ")[1]  # the shortest text that reads back


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> tuple[list[str], str]:
    rng = random.Random(11)
    directory = tmp_path_factory.mktemp("tune-table")
    hits = generated_runs(rng, runs=2, queries=16, docs=20, depth=8)
    paths = [
        write_trec(directory / f"run{i}.trec", run, rng, interleaved=False) for i, run in enumerate(hits)
    ]
    return paths, write_beir_qrels(directory / "qrels.tsv", generated_qrels(rng, hits))


def table_rows(out: str) -> list[list[str]]:
    lines = out.split("\n\n")[0].splitlines()
    assert lines[0].split()[:3] == ["fold", "chosen", "fusion"], out
    return [re.split(r"\s{2,}", line.strip()) for line in lines[2:]]


@pytest.mark.parametrize("parameter", list(LEVELS))
def test_the_command_table_shows_what_its_json_holds(
    parameter: str, files: tuple[list[str], str], capsys: pytest.CaptureFixture[str]
) -> None:
    paths, qrels = files
    method = method_with(parameter)
    option = next(o for o in OPTIONS if o.parameter == parameter)
    levels = ",".join(repr(v) if isinstance(v, float) else str(v) for v in LEVELS[parameter])
    argv = ["tune", *paths, "--qrels", qrels, "--method", method, level_flag(option.keyword), levels]
    argv += ["--folds", "2"]
    assert main(argv) == 0
    rows = table_rows(capsys.readouterr().out)
    assert main([*argv, "--json"]) == 0
    folds = json.loads(capsys.readouterr().out)["folds"]
    assert len(rows) == len(folds) == 2
    for row, fold in zip(rows, folds, strict=True):
        method_shown, params = read_described(row[1])
        assert method_shown == method == fold["fused"]["method"]
        assert params == fold["fused"]["params"], (row, fold)
        assert params[parameter] in (LEVELS[parameter], *LEVELS[parameter]) or parameter == "weights"


def test_the_help_shows_each_default_level_exactly() -> None:
    parser = build_parser("tune")
    commands = next(a for a in parser._actions if a.dest == "command")
    actions = {a.dest: a for a in commands.choices["tune"]._actions}  # type: ignore[union-attr]
    for option in OPTIONS:
        shown = re.search(r"\(default: ([^)]*)\)", str(actions[option.keyword].help))
        assert shown is not None, option.keyword
        if option.default is None:
            assert shown.group(1) == "not searched"
        else:
            assert [float(v) for v in shown.group(1).split(",")] == list(option.default), option.keyword


def test_the_p_value_shown_is_the_one_the_json_holds(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Each run finds one of two relevant documents first, the fusion both: the fusion is better on
    every query, so the randomization test's p is at its floor, 1 / (iterations + 1), which the
    summary shows in three significant digits as the JSON holds it, never as 0."""
    queries = [f"q{i}" for i in range(30)]
    run_a = "".join(f"{q} Q0 a-{q} 1 2.0 t\n{q} Q0 x-{q} 2 1.0 t\n" for q in queries)
    run_b = "".join(f"{q} Q0 b-{q} 1 2.0 t\n{q} Q0 y-{q} 2 1.0 t\n" for q in queries)
    qrels = "".join(f"{q} 0 a-{q} 1\n{q} 0 b-{q} 1\n" for q in queries)
    for name, text in (("a.trec", run_a), ("b.trec", run_b), ("qrels.txt", qrels)):
        (tmp_path / name).write_text(text)
    argv = [
        "tune",
        str(tmp_path / "a.trec"),
        str(tmp_path / "b.trec"),
        "--qrels",
        str(tmp_path / "qrels.txt"),
    ]
    argv += ["--method", "isr", "--metric", "recall@2"]
    assert main(argv) == 0
    shown = re.search(r"paired randomization p=([^)]+)\)", capsys.readouterr().out)
    assert main([*argv, "--json"]) == 0
    p_value = json.loads(capsys.readouterr().out)["p_value"]
    assert shown is not None and 0 < p_value < 0.001
    assert float(shown.group(1)) == float(f"{p_value:.3g}") > 0, shown.group(1)
