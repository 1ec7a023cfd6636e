"""A bad option value of a command exits 2 with one line, `fanfuse CMD: error: ...`, that names the
option: argparse's usage errors and fanfuse's own alike, never a traceback."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from cli_process import with_flag
from fanfuse.cli import main


@pytest.fixture(scope="module")
def files(small_runs: dict[str, str], tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    directory = tmp_path_factory.mktemp("cli-bad-options")
    # An empty index directory: every case's option is refused before the index is opened.
    (directory / "empty-index").mkdir()
    return {**small_runs, "out": str(directory / "out.trec"), "index": str(directory / "empty-index")}


FUSE = ["fuse", "{run0}", "{run1}", "-o", "{out}"]
EVAL = ["eval", "{run0}", "{run1}", "--qrels", "{qrels}"]
TUNE = ["tune", "{run0}", "{run1}", "--qrels", "{qrels}", "--folds", "2", "--ks", "60"]
SEARCH = ["search", "owls", "--index", "{index}"]

# (command line, text the one-line message must contain): what the range of a flag alone cannot
# say (the ranges are generated from fanfuse.limits below): bounds known once the input is read,
# values the core refuses in combination, names.
CASES = [
    ([*FUSE, "--top-k", "-1"], "argument --top-k: must be an int >= 0 (0 keeps all) (got '-1')"),
    ([*FUSE, "--threads", "2000"], "argument --threads: must be an int from 1 to 1024 (got '2000')"),
    ([*FUSE, "--rrf-k=-inf"], "argument --rrf-k: must be a finite number > 0 (got '-inf')"),
    ([*FUSE, "--weights", "1,-1"], "argument --weights: expected comma-separated numbers, each"),
    ([*FUSE, "--weights", "1e308,1e308"], "weights sum to inf"),
    ([*FUSE, "--weights", "1"], "weights has 1 entries but there are 2 runs; give one weight per run"),
    ([*EVAL, "--iterations", str(2**32)], "argument --iterations: must be an int from 1 to 4294967295"),
    ([*EVAL, "--seed", str(2**64)], "argument --seed: must be an int from 0 to 18446744073709551615"),
    ([*EVAL, "--metrics", "ndcg@0"], "--metrics 'ndcg@0': the cut-off after @ (or _) must be an integer"),
    ([*EVAL, "--metrics", ""], "argument --metrics: expected comma-separated names, such as ndcg@10,map"),
    ([*EVAL, "--metrics", " , "], "argument --metrics: expected comma-separated names"),
    ([*EVAL, "--baseline", "2"], "--baseline must be the index of a run, from 0 to 1 (got 2)"),
    (with_flag(TUNE, "--folds", ["7"]), "folds must be at most the judged queries, 6 (got 7)"),
    ([*TUNE, "--weight-levels", "0"], "--weight-levels has no level > 0"),
    (with_flag(TUNE, "--ks", [""]), "argument --ks: expected comma-separated numbers"),
    ([*TUNE, "--metric", "ndcg@x"], "metric 'ndcg@x': the cut-off after @ (or _) must be an integer >= 1"),
    ([*SEARCH, "--max-variants", "0"], "argument --max-variants: must be an int from 1 to 5 (got '0')"),
    (
        ["demo", "--top-k", "-3"],
        "argument --top-k: must be an int >= 0 (0 keeps all, up to 10000) (got '-3')",
    ),
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
    if argv[0] == "serve":  # its options are read once its extra is there; without it, that is the error
        pytest.importorskip("uvicorn", reason="fanfuse[serve] is not installed")
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
