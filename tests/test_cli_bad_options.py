"""A bad option value of a command exits 2 with one line, `fanfuse CMD: error: ...`, that names the
option: argparse's usage errors and fanfuse's own alike, never a traceback."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from fanfuse.cli import main


@pytest.fixture(scope="module")
def files(small_runs: dict[str, str], tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    directory = tmp_path_factory.mktemp("cli-bad-options")
    return {**small_runs, "out": str(directory / "out.trec"), "index": str(directory / "no-index")}


FUSE = ["fuse", "{run0}", "{run1}", "-o", "{out}"]
EVAL = ["eval", "{run0}", "{run1}", "--qrels", "{qrels}"]
TUNE = ["tune", "{run0}", "{run1}", "--qrels", "{qrels}", "--folds", "2", "--ks", "60"]
SEARCH = ["search", "owls", "--index", "{index}"]

# (command line, text the one-line message must contain)
CASES = [
    ([*FUSE, "--top-k", "-1"], "argument --top-k: must be an int >= 0 (0 keeps all) (got '-1')"),
    ([*FUSE, "--top-k", "1.5"], "argument --top-k"),
    ([*FUSE, "--top-k", "x"], "argument --top-k"),
    ([*FUSE, "--threads", "0"], "argument --threads: must be an int >= 1 (got '0')"),
    ([*FUSE, "--threads", "-2"], "argument --threads"),
    (
        [*FUSE, "--threads", "2000"],
        "threads must be None (FANFUSE_NUM_THREADS, else 1) or an int from 1 to 1024",
    ),
    ([*FUSE, "--threads", str(2**70)], "threads must be"),
    ([*FUSE, "--k", "nan"], "k must be a finite number > 0 (got NaN)"),
    ([*FUSE, "--k", "0"], "k must be a finite number > 0 (got 0)"),
    ([*FUSE, "--k=-inf"], "k must be a finite number > 0 (got -inf)"),
    ([*FUSE, "--weights", "nan,1"], "argument --weights: expected comma-separated finite numbers"),
    ([*FUSE, "--weights", "1,inf"], "argument --weights"),
    ([*FUSE, "--weights", "1,-1"], "weights[1] must be a finite number >= 0 (got -1)"),
    ([*FUSE, "--weights", "1e308,1e308"], "weights sum to inf"),
    ([*FUSE, "--weights", "1"], "weights has 1 entries but there are 2 lists"),
    ([*EVAL, "--iterations", "0"], "argument --iterations: must be an int >= 1 (got '0')"),
    ([*EVAL, "--iterations", "-1"], "argument --iterations"),
    ([*EVAL, "--iterations", str(2**32)], "iterations must be an int from 1 to 4294967295"),
    ([*EVAL, "--seed", "-1"], "argument --seed: must be an int >= 0"),
    ([*EVAL, "--seed", str(2**64)], "seed must be an int from 0 to 2**64 - 1"),
    ([*EVAL, "--metrics", "ndcg@0"], "metric 'ndcg@0': the cut-off after @ (or _) must be an integer >= 1"),
    ([*TUNE, "--folds", "0"], "argument --folds: must be an int >= 2 (got '0')"),
    ([*TUNE, "--folds", "1"], "argument --folds"),
    ([*TUNE, "--folds", "7"], "6 judged queries cannot be split into 7 folds"),
    ([*TUNE, "--seed", "-1"], "argument --seed"),
    ([*TUNE, "--seed", str(2**64)], "seed must be an int from 0 to"),
    ([*TUNE, "--ks", "nan"], "argument --ks"),
    ([*TUNE, "--ks", "0"], "ks[0] must be a finite number > 0 (got 0.0)"),
    ([*TUNE, "--weight-levels", "nan,1"], "argument --weight-levels"),
    ([*TUNE, "--weight-levels", "0"], "weight_levels has no level > 0"),
    ([*TUNE, "--weight-levels=-1,1"], "weight_levels[0] must be a finite number >= 0 (got -1.0)"),
    ([*TUNE, "--metric", "ndcg@x"], "metric 'ndcg@x': the cut-off after @ (or _) must be an integer >= 1"),
    ([*SEARCH, "--top-k", "0"], "argument --top-k: must be an int >= 1 (got '0')"),
    ([*SEARCH, "--variants", "0"], "argument --variants: must be an int from 1 to 5 (got '0')"),
    ([*SEARCH, "--variants", "9"], "argument --variants"),
    (["demo", "--variants", "0"], "argument --variants: must be an int from 1 to 5 (got '0')"),
    (["demo", "--top-k", "-3"], "argument --top-k: must be an int >= 1 (got '-3')"),
    (["fuse", "{run0}"], "the following arguments are required: -o/--output"),
    (
        ["serve", "--index", "{index}", "--log-level", "bogus"],
        "argument --log-level: invalid choice: 'bogus' (choose from critical, error, warning, info, debug, "
        "trace)",
    ),
]


def expand(argv: list[str], files: dict[str, str]) -> list[str]:
    return [word.format(**files) for word in argv]


@pytest.mark.parametrize(("argv", "expected"), CASES, ids=[f"{a[0]} {' '.join(a[-2:])}" for a, _ in CASES])
def test_bad_option_exits_2_with_one_line(
    files: dict[str, str], argv: list[str], expected: str, capsys: pytest.CaptureFixture[str]
) -> None:
    try:
        code = main(expand(argv, files))
    except SystemExit as exit_:  # argparse exits; fanfuse's own errors return the code
        code = exit_.code  # type: ignore[assignment]
    captured = capsys.readouterr()
    assert code == 2
    assert captured.out == ""
    assert captured.err.startswith(f"fanfuse {argv[0]}: error: ")
    assert captured.err.count("\n") == 1, captured.err
    assert expected in captured.err
    assert not Path(files["out"]).exists()


@pytest.mark.parametrize(
    "extra", [["--top-k", "-1"], ["--threads", "-2"], ["--threads", str(2**70)], ["--weights", "nan,1"]]
)
def test_no_traceback_from_the_console_command(files: dict[str, str], extra: list[str]) -> None:
    entry_point = "import sys; from fanfuse.cli import main; sys.exit(main())"  # what the script runs
    argv = [sys.executable, "-c", entry_point, *expand(FUSE, files), *extra]
    result = subprocess.run(argv, capture_output=True, text=True, check=False)
    assert result.returncode == 2
    assert result.stdout == ""
    assert result.stderr.startswith("fanfuse fuse: error: ")
    assert result.stderr.count("\n") == 1
    assert "Traceback" not in result.stderr
