"""`fanfuse eval RUN... --qrels FILE`: every run side by side, compared with a baseline run
(``fanfuse.report``, the one comparison engine)."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from fanfuse._core import METRICS, TREC_EVAL_METRICS
from fanfuse.cli._common import name_list, number_option
from fanfuse.cli.engine import add_engine_options, check_engine_options, dask_commands
from fanfuse.cli.paths import (
    NAMED_FORMATS,
    HeldOutputs,
    add_output,
    add_qrels,
    add_runs,
    add_stdout,
    check_named,
    named_format,
)
from fanfuse.cli.progress import ProgressBar
from fanfuse.errors import InvalidOutput, InvalidSetting, OutOfRange
from fanfuse.output_guard import OutputFile
from fanfuse.report import CORRECTIONS, FORMATS, TESTS, ReportFormat, compare_scores
from fanfuse.report.plot import IMAGE_FORMATS, image, image_format
from fanfuse.run_scores import DEFAULT_METRICS, RunScores, score_run, unranked_queries
from fanfuse.tables import read_any_qrels, read_any_run

# The report formats a name of --output chooses (`fanfuse.cli.paths.NAMED_FORMATS`), where neither
# --format nor --json does; any other name gets --format, else the table.
NAMED_REPORTS: dict[str, ReportFormat] = {
    "JSON": "json",
    "Markdown": "markdown",
    "LaTeX": "latex",
    "CSV": "csv",
}
REPORT_WRITES = (
    "the report as text: --format, else the format a name ending .json, .md, .tex or .csv says, else "
    "the table"
)
# The image formats of --plot, as the names of the files say them.
PLOTS = {NAMED_FORMATS[suffix] for suffix in IMAGE_FORMATS}
PLOT_WRITES = (
    f"an image in the format of its name ({', '.join(f'*{suffix}' for suffix in IMAGE_FORMATS)}; "
    "PNG for another name)"
)


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "eval",
        help="evaluate runs against qrels (numbers identical to pytrec_eval)",
        description="Each run is read as trec_eval reads it: by score, ties by docid descending; a fused "
        "run is evaluated on its written RRF scores the same way. Means are over the queries in both "
        "the run and the qrels. Every run is compared with the baseline (the first unless --baseline says "
        "otherwise) by --test, corrected for the runs x metrics compared (docs/reports.md).",
    )
    add_runs(parser, help="run files: TREC 6-column, MT-RAG JSONL or Parquet")
    add_qrels(parser)
    parser.add_argument(
        "--metrics",
        type=name_list,
        default=list(DEFAULT_METRICS),
        help=f"comma-separated NAME, NAME@K (first K retrieved), NAME-lN (judgments below N are "
        f"non-relevant) or NAME@K-lN, NAME one of {', '.join(METRICS)} (rbp as rbp.95: persistence 0.95; "
        f"r-precision and bpref take no @K); trec_eval's {', '.join(TREC_EVAL_METRICS)} too "
        f"(default {','.join(DEFAULT_METRICS)})",
    )
    number_option(
        parser,
        "--iterations",
        "iterations",
        "sign flips drawn by the randomization test (default 10000); with n queries and 2^n <= this, "
        "all 2^n are counted and p is exact",
        default=10_000,
    )
    number_option(parser, "--seed", "seed", "seed of the randomization test (default 0)", default=0)
    parser.add_argument("--json", action="store_true", help="print JSON (the same as --format json)")
    add_engine_options(parser)
    number_option(
        parser,
        "--baseline",
        "baseline",
        "index of the run every other run is compared with, from 0 (default 0)",
        default=0,
    )
    parser.add_argument(
        "--test",
        choices=TESTS,
        default="t",
        help="t: paired Student t (default); fisher: paired randomization (--iterations, --seed); "
        "wilcoxon: Wilcoxon signed-rank; tukey: Tukey's HSD over all runs",
    )
    parser.add_argument(
        "--correction",
        choices=CORRECTIONS,
        default="holm",
        help="multiple-comparison correction over runs x metrics (default holm)",
    )
    number_option(parser, "--alpha", "alpha", "significance level (default 0.05)", default=0.05)
    parser.add_argument(
        "--format",
        choices=FORMATS,
        help="output format (default: the one the name of --output says, else table)",
    )
    add_output(
        parser,
        "-o",
        "--output",
        metavar="FILE",
        help=f"write the report to FILE instead of stdout; {REPORT_WRITES}",
    )
    add_output(
        parser,
        "--plot",
        metavar="FILE",
        help=f"also write a plot of the report, {PLOT_WRITES} (needs matplotlib: fanfuse[plot])",
    )
    add_stdout(parser, unless="output")
    parser.set_defaults(run=run)


def report_format(args: argparse.Namespace) -> ReportFormat:
    """The format of the report: --format or --json, else the one the name of --output says, else
    the table. A name saying another format than the one given, or no report format, is refused."""
    if args.json and args.format not in (None, "json"):
        raise InvalidSetting(f"--json and --format {args.format} disagree; give one of them")
    given: ReportFormat | None = "json" if args.json else args.format
    if args.plot:
        check_named("--plot", args.plot, PLOTS, PLOT_WRITES)
    if not args.output:
        return given or "table"
    check_named("--output", args.output, NAMED_REPORTS, REPORT_WRITES)
    named = NAMED_REPORTS.get(named_format(args.output) or "")
    if given is not None and named is not None and named != given:
        how = "--json" if args.json else f"--format {given}"
        raise InvalidOutput(
            f"--output {args.output!r}: the name says {named_format(args.output)}, but {how} asks for "
            f"{given}; give --format {named}, or name the file otherwise"
        )
    return given or named or "table"


def run(args: argparse.Namespace) -> int:
    check_engine_options(args)
    chosen = report_format(args)
    if args.baseline >= len(args.runs):
        raise OutOfRange(
            f"--baseline must be the index of a run, from 0 to {len(args.runs) - 1} (got {args.baseline})"
        )
    scores, judged = scored(args)
    for run_scores in scores:
        note = unranked_queries(run_scores, judged)
        if note is not None:
            print(f"fanfuse eval: warning: {note}", file=sys.stderr)
    report = compare_scores(
        scores,
        args.metrics,
        baseline=args.baseline,
        test=args.test,
        correction=args.correction,
        alpha=args.alpha,
        iterations=args.iterations,
        seed=args.seed,
    )
    text = report.render(chosen)
    with HeldOutputs() as held:
        if args.plot:
            held.write(args.plot, image(report, image_format(args.plot)))
        if args.output:
            with OutputFile(args.output, inputs=[*args.runs, args.qrels]) as stream:
                stream.write(text.encode())
        else:
            print(text, end="")
    return 0


def scored(args: argparse.Namespace) -> tuple[list[RunScores], list[str]]:
    """Every run's per-query values, in this process or on a Dask cluster (--engine dask), and the
    queries the qrels judge."""
    if args.engine == "dask":
        commands = dask_commands(args)
        # Read first, as one process reads them: a pipe here, before any scheduler is asked.
        qrels = commands.held_qrels(args.qrels, args.scheduler)
        with commands.scheduler(args.scheduler):
            distributed: list[RunScores] = commands.evaluate_runs(
                args.runs, qrels, args.metrics, partitions=args.partitions, rank_from=args.rank_from
            )
        # A path is a regular file's, which reads again as it read for the workers.
        judged = read_any_qrels(qrels) if isinstance(qrels, str) else qrels
        return distributed, judged.qids()
    judged = read_any_qrels(args.qrels)
    progress = ProgressBar("reading")
    scores = []
    for i, path in enumerate(args.runs):
        scores.append(score_run(read_any_run(path, rank_from=args.rank_from), judged, args.metrics, path))
        progress(i + 1, len(args.runs))
    progress.close()
    return scores, judged.qids()
