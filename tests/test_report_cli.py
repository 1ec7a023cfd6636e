"""`fanfuse eval ... --baseline N` writes the comparison report of fanfuse.compare in every format,
to stdout or atomically to a file, with a plot on request; without --baseline the first run is the
baseline; eval loads neither scipy nor matplotlib."""

from __future__ import annotations

import csv
import io
import json
import random
import subprocess
import sys
from pathlib import Path

import fanfuse
import pytest
from fanfuse.cli import main
from fanfuse.report import FORMATS
from fanfuse.report.rendering import _markdown_escape
from generated_runs import generated_qrels, generated_runs, write_beir_qrels, write_trec
from run_reports import scipy_wilcoxon

METRICS = "ndcg@10,recall@5"


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    rng = random.Random(3)
    directory = tmp_path_factory.mktemp("report-cli")
    runs = generated_runs(rng, runs=3, queries=40)
    paths = {
        f"run{i}": write_trec(directory / f"run{i}.trec", r, rng, interleaved=False)
        for i, r in enumerate(runs)
    }
    return {**paths, "qrels": write_beir_qrels(directory / "qrels.tsv", generated_qrels(rng, runs))}


def eval_args(files: dict[str, str], *extra: str) -> list[str]:
    return [
        "eval",
        files["run0"],
        files["run1"],
        files["run2"],
        "--qrels",
        files["qrels"],
        "--metrics",
        METRICS,
        *extra,
    ]


def run_cli(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(argv)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def expected_report(files: dict[str, str], **options: object) -> fanfuse.Report:
    paths = [files["run0"], files["run1"], files["run2"]]
    return fanfuse.compare(paths, files["qrels"], METRICS.split(","), names=paths, **options)  # type: ignore[arg-type]


def test_json_report_is_the_library_report(files: dict[str, str], capsys: pytest.CaptureFixture[str]) -> None:
    argv = eval_args(
        files, "--baseline", "1", "--test", "wilcoxon", "--correction", "bonferroni", "--format", "json"
    )
    code, out, _ = run_cli(argv, capsys)
    assert code == 0
    report = expected_report(files, baseline=1, test="wilcoxon", correction="bonferroni")
    assert json.loads(out) == json.loads(report.to_json())
    payload = json.loads(out)
    assert payload["baseline"] == files["run1"] and payload["test"] == "wilcoxon"
    assert len(payload["comparisons"]) == 2 * 2


@pytest.mark.parametrize("form", ["table", "markdown", "latex", "csv"])
def test_every_format_shows_every_run_and_metric(
    files: dict[str, str], form: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = run_cli(eval_args(files, "--format", form, "--alpha", "0.5"), capsys)
    assert code == 0
    report = expected_report(files, alpha=0.5)
    assert out == report.render(form)
    if form != "csv":
        assert all(f"{s.means[m]:.4f}" in out for s in report.scores for m in report.metrics)
    else:
        rows = list(csv.DictReader(io.StringIO(out)))
        assert len(rows) == 3 * 2
        for row in rows:
            found = report.comparison(row["run"], row["metric"])
            if found is not None:
                assert float(row["adjusted_p_value"]) == found.adjusted_p_value
                assert (int(row["wins"]), int(row["ties"]), int(row["losses"])) == (
                    found.wins,
                    found.ties,
                    found.losses,
                )
            run_means = next(s.means for s in report.scores if s.name == row["run"])
            assert float(row["mean"]) == run_means[row["metric"]]
    if form != "csv":
        assert any(c.significant for c in report.comparisons), "alpha 0.5 should mark something"
        marker = {"latex": r"\blacktriangle", "markdown": "▲", "table": "▲"}[form]
        if any(c.marker == "▲" for c in report.comparisons):
            assert marker in out
        assert "W/T/L" in out
    if form == "latex":
        assert out.count(r"\begin{tabular}") == 2 and r"\_" not in out.split("\n")[0]


def test_markdown_marks_the_significant_cells(files: dict[str, str]) -> None:
    report = expected_report(files, alpha=0.5, correction="none")
    lines = report.to_markdown().splitlines()
    for c in report.comparisons:
        # A temporary folder's name may hold an underscore, which Markdown escapes.
        row = next(line for line in lines if line.startswith(f"| {_markdown_escape(c.run)} |"))
        cell = row.strip("|").split("|")[1 + report.metrics.index(c.metric)].strip().strip("*")
        assert cell == f"{c.mean:.4f}{c.marker}"


def test_output_file_is_written_whole_and_kept_on_error(
    files: dict[str, str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "report.md"
    code, stdout, _ = run_cli(eval_args(files, "--format", "markdown", "-o", str(out)), capsys)
    assert code == 0 and stdout == ""
    assert out.read_text() == expected_report(files).to_markdown()
    before = out.read_bytes()
    code, _, err = run_cli(eval_args(files, "--baseline", "3", "-o", str(out)), capsys)
    assert code == 2
    assert err.strip() == "fanfuse eval: error: --baseline must be the index of a run, from 0 to 2 (got 3)"
    assert out.read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == ["report.md"]


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--alpha", "1"], "argument --alpha: must be a number in (0, 1) (got '1')"),
        (["--test", "anova"], "argument --test: invalid choice: 'anova'"),
        (["--json", "--format", "csv"], "--json and --format csv disagree"),
    ],
)
def test_bad_report_options_exit_2_with_one_line(
    files: dict[str, str], extra: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    try:
        code = main(eval_args(files, *extra))
    except SystemExit as stop:
        code = int(stop.code or 0)
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2
    assert message in err[-1]


def test_without_report_options_eval_prints_the_report_against_the_first_run(
    files: dict[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = run_cli(eval_args(files), capsys)
    assert code == 0
    assert out == expected_report(files).to_table()
    code, out, _ = run_cli(["eval", files["run0"], "--qrels", files["qrels"], "--json"], capsys)
    assert code == 0 and json.loads(out)["comparisons"] == []


@pytest.mark.parametrize("form", FORMATS)
def test_a_report_of_one_run_names_no_baseline_and_no_comparison(
    files: dict[str, str], form: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """One run is compared with nothing: no baseline mark, no legend of markers and tests."""
    argv = ["eval", files["run0"], "--qrels", files["qrels"], "--metrics", METRICS, "--format", form]
    code, out, _ = run_cli(argv, capsys)
    report = fanfuse.compare([files["run0"]], files["qrels"], METRICS.split(","), names=[files["run0"]])
    assert code == 0 and out == report.render(form)
    assert all(f"{report.scores[0].means[m]:.4f}" in out or form in ("csv", "json") for m in report.metrics)
    shown = json.loads(out)["legend"] if form == "json" else out
    assert "(baseline)" not in shown and "comparisons" not in shown and "▲" not in shown, shown
    assert "W/T/L" not in shown and "significantly" not in shown, shown


def test_plot_of_one_run_has_no_panel_of_differences(
    files: dict[str, str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    shown: list[list[str]] = []
    real_savefig = plt.Figure.savefig

    def savefig(figure: plt.Figure, *args: object, **kwargs: object) -> None:
        shown.append([axes.get_ylabel() for axes in figure.axes])
        real_savefig(figure, *args, **kwargs)

    plot = tmp_path / "one.png"
    argv = ["eval", files["run0"], "--qrels", files["qrels"], "--metrics", METRICS, "--plot", str(plot)]
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(plt.Figure, "savefig", savefig)
        code, _, _ = run_cli(argv, capsys)
    assert code == 0 and plot.read_bytes().startswith(b"\x89PNG")
    assert len(shown) == 1 and len(shown[0]) == 2, shown  # one panel per metric, no differences below
    assert not any("baseline" in label for label in shown[0]), shown


@pytest.mark.parametrize("metrics", ["ndcg@10", METRICS])
def test_the_plot_holds_every_long_run_name_whole(
    files: dict[str, str], tmp_path: Path, capsys: pytest.CaptureFixture[str], metrics: str
) -> None:
    """The legend under the panels is the only key to the bars: a name cut at the image's edge would
    leave a run unnamed. Nothing is drawn up to the edge of the image (a cut text would be)."""
    image = pytest.importorskip("matplotlib.image")
    runs = []
    for i in range(3):
        runs.append(tmp_path / f"{'elser_clapnq_rewrite_with_a_long_name' * (i + 1)}_{i}.trec")
        runs[-1].write_bytes(Path(files[f"run{i}"]).read_bytes())
    plot = tmp_path / "report.png"
    argv = ["eval", *map(str, runs), "--qrels", files["qrels"], "--metrics", metrics, "--plot", str(plot)]
    assert run_cli(argv, capsys)[0] == 0
    pixels = image.imread(io.BytesIO(plot.read_bytes()))
    for edge in (pixels[:, 0], pixels[:, -1], pixels[0], pixels[-1]):
        assert (edge[:, :3] == 1.0).all(), "something is drawn up to the image's edge"


def test_plot_is_a_png(files: dict[str, str], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("matplotlib")
    plot = tmp_path / "report.png"
    code, _, _ = run_cli(eval_args(files, "--plot", str(plot), "--test", "fisher"), capsys)
    assert code == 0
    assert plot.read_bytes().startswith(b"\x89PNG\r\n\x1a\n")
    assert [p.name for p in tmp_path.iterdir()] == ["report.png"]


def test_eval_and_its_report_load_neither_scipy_nor_matplotlib(files: dict[str, str]) -> None:
    for extra in ([], ["--baseline", "0", "--test", "wilcoxon"], ["--test", "tukey", "--format", "latex"]):
        argv = eval_args(files, *extra)
        probe = (
            "import contextlib, io, json, sys\nfrom fanfuse.cli import main\n"
            f"with contextlib.redirect_stdout(io.StringIO()):\n    main({argv!r})\n"
            "print(json.dumps([m for m in ('scipy', 'matplotlib', 'numpy') if m in sys.modules]))"
        )
        done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
        assert json.loads(done.stdout.splitlines()[-1]) == [], extra


def per_query(path: str, qrels: str) -> dict[str, float]:
    qids, values = fanfuse.evaluate(fanfuse.read_run(path), fanfuse.read_qrels(qrels), metrics=["ndcg@10"])
    return dict(zip(qids, values["ndcg@10"], strict=True))


def test_real_runs_report_equals_scipy(mtrag_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("scipy.stats")
    runs = mtrag_dir / "runs_trec"
    paths = [str(runs / f"elser_clapnq_{s}.trec") for s in ("rewrite", "lastturn", "questions")]
    qrels = str(mtrag_dir / "qrels" / "clapnq" / "dev.tsv")
    argv = [
        "eval",
        *paths,
        "--qrels",
        qrels,
        "--metrics",
        "ndcg@10",
        "--test",
        "wilcoxon",
        "--format",
        "json",
    ]
    code, out, _ = run_cli(argv, capsys)
    assert code == 0
    comparisons = json.loads(out)["comparisons"]
    base = per_query(paths[0], qrels)
    for comparison, path in zip(comparisons, paths[1:], strict=True):
        values = per_query(path, qrels)
        assert comparison["queries"] == len(values) == 208
        expected = scipy_wilcoxon([values[q] for q in base], [base[q] for q in base])
        assert comparison["statistic"] == expected.statistic
        assert comparison["p_value"] == pytest.approx(float(expected.pvalue), rel=1e-9)


def test_every_option_of_compare_is_refused_before_a_run_is_read(tmp_path: Path) -> None:
    """Each keyword option of ``fanfuse.compare`` (enumerated from its signature), given a bad value,
    is refused by name before the runs and qrels are read: the paths here do not exist."""
    import inspect

    bad = {
        "baseline": 2,
        "test": "anova",
        "correction": "bh",
        "alpha": 1.5,
        "names": ["a", "b", "c"],
        "iterations": 0,
        "seed": -1,
        "rank_from": "scores",
    }
    options = inspect.signature(fanfuse.compare).parameters.values()
    assert sorted(bad) == sorted(p.name for p in options if p.kind is p.KEYWORD_ONLY)
    runs, qrels = [str(tmp_path / "a.trec"), str(tmp_path / "b.trec")], str(tmp_path / "qrels.txt")
    for name, value in bad.items():
        with pytest.raises(ValueError, match=rf"^{name}\b") as refused:
            fanfuse.compare(runs, qrels, **{name: value})  # type: ignore[arg-type]
        assert str(tmp_path) not in str(refused.value), name
