"""`fanfuse eval RUN... --qrels FILE`: every run side by side, with paired p-values against the first."""

from __future__ import annotations

import argparse
import json
from typing import Any

from fanfuse._core import METRICS, TREC_EVAL_METRICS, FusionError, OutputFile
from fanfuse.cli._common import name_list, number_option
from fanfuse.cli.engine import add_engine_options, check_engine_options, dask_commands
from fanfuse.cli.paths import add_output, add_qrels, add_runs
from fanfuse.cli.progress import ProgressBar
from fanfuse.report import CORRECTIONS, FORMATS, TESTS, compare
from fanfuse.report_format import table
from fanfuse.runs import DEFAULT_METRICS, RunScores, compare_runs, paired_tests_against_first
from fanfuse.tables import read_any_qrels, read_any_run


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "eval",
        help="evaluate runs against qrels (numbers identical to pytrec_eval)",
        description="Each run is read as trec_eval reads it: by score, ties by docid descending; a fused "
        "run is evaluated on its written RRF scores the same way. Means are over the queries in both "
        "the run and the qrels. p: two-sided paired randomization test against the first run; t: two-sided "
        "paired Student t-test against the first run.",
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
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    add_engine_options(parser)
    report = parser.add_argument_group(
        "comparison report", "any of these turns the output into a report against one baseline run"
    )
    number_option(
        report, "--baseline", "baseline", "index of the baseline among the runs, from 0 (default 0)"
    )
    report.add_argument(
        "--test",
        choices=TESTS,
        help="t: paired Student t; fisher: paired randomization (--iterations, --seed); wilcoxon: "
        "Wilcoxon signed-rank; tukey: Tukey's HSD over all runs (default t)",
    )
    report.add_argument(
        "--correction",
        choices=CORRECTIONS,
        help="multiple-comparison correction over runs x metrics (default holm)",
    )
    number_option(report, "--alpha", "alpha", "significance level (default 0.05)")
    report.add_argument("--format", choices=FORMATS, help="output format (default table)")
    add_output(report, "-o", "--output", metavar="FILE", help="write the report to FILE instead of stdout")
    add_output(
        report,
        "--plot",
        metavar="FILE.png",
        help="also write a PNG of the report (needs matplotlib: fanfuse[plot])",
    )
    parser.set_defaults(run=run)


REPORT_OPTIONS = ("baseline", "test", "correction", "alpha", "format", "output", "plot")


def write_report(args: argparse.Namespace) -> int:
    if args.json and args.format not in (None, "json"):
        raise FusionError(f"--json and --format {args.format} disagree; give one of them")
    if args.baseline is not None and args.baseline >= len(args.runs):
        raise FusionError(
            f"--baseline must be the index of a run, from 0 to {len(args.runs) - 1} (got {args.baseline})"
        )
    report = compare(
        args.runs,
        args.qrels,
        args.metrics,
        baseline=args.baseline or 0,
        test=args.test or "t",
        correction=args.correction or "holm",
        alpha=args.alpha or 0.05,
        names=args.runs,
        iterations=args.iterations,
        seed=args.seed,
    )
    text = report.render("json" if args.json else args.format or "table")
    if args.plot:
        report.plot(args.plot)
    if args.output:
        with OutputFile(args.output, inputs=[*args.runs, args.qrels]) as stream:
            stream.write(text.encode())
    else:
        print(text, end="")
    return 0


def scored_in_process(args: argparse.Namespace) -> list[RunScores]:
    qrels = read_any_qrels(args.qrels)
    progress = ProgressBar("reading")
    runs = []
    for i, path in enumerate(args.runs):
        runs.append(read_any_run(path))
        progress(i + 1, len(args.runs))
    progress.close()
    return compare_runs(
        runs, qrels, args.metrics, names=args.runs, iterations=args.iterations, seed=args.seed
    )


def run(args: argparse.Namespace) -> int:
    check_engine_options(args)
    if any(getattr(args, option) is not None for option in REPORT_OPTIONS):
        if args.engine == "dask":
            raise FusionError(
                "a comparison report (--baseline, --test, ...) runs in one process: drop --engine dask"
            )
        return write_report(args)
    if args.engine == "dask":
        commands = dask_commands(args)
        with commands.scheduler(args.scheduler):
            per_query = commands.evaluate_runs(
                args.runs, args.qrels, args.metrics, partitions=args.partitions
            )
        scored = paired_tests_against_first(
            per_query, args.metrics, iterations=args.iterations, seed=args.seed
        )
    else:
        scored = scored_in_process(args)
    if args.json:
        payload = [
            {
                "run": s.name,
                "queries": len(s.qids),
                "means": s.means,
                "p_values": s.p_values,
                "t_test_p_values": s.t_test_p_values,
            }
            for s in scored
        ]
        print(json.dumps({"metrics": args.metrics, "runs": payload}, indent=2))
        return 0
    header = ["run", "queries", *args.metrics]
    rows = []
    for s in scored:
        cells = []
        for m in args.metrics:
            cell = f"{s.means[m]:.4f}"
            if s.p_values is not None and s.t_test_p_values is not None:
                cell += f" (p={s.p_values[m]:.3f} t={s.t_test_p_values[m]:.3f})"
            cells.append(cell)
        rows.append([s.name, str(len(s.qids)), *cells])
    print(table(header, rows))
    return 0
