"""`fanfuse tune RUN... --qrels FILE --method M`: cross-validated search of a fusion method's parameters."""

from __future__ import annotations

import argparse
import json
from dataclasses import asdict
from typing import Any

from fanfuse._core import METHODS, TRAINED_METHODS
from fanfuse.cli._common import name_list, number_option
from fanfuse.cli.flags import Renamed
from fanfuse.cli.idle_flags import level_flag
from fanfuse.cli.paths import add_qrels, add_runs, add_stdout
from fanfuse.cli.progress import ProgressBar
from fanfuse.report.rendering import table
from fanfuse.tables import read_any_qrels, read_any_run
from fanfuse.tune import tune
from fanfuse.tune.search import GRID_LIMIT, SEARCHES
from fanfuse.tune.space import OPTIONS, given_levels, shown_level


def _levels_help(default: tuple[Any, ...] | None, what: str) -> str:
    shown = "not searched" if default is None else ",".join(map(shown_level, default))
    return f"{what} (default: {shown}); an error for a method without it"


# fuse's flag of a searched parameter, where it is not the parameter's name.
ONE_VALUE_FLAGS = {"k": "--rrf-k"}

# Each searched option's flag: what it lists, and the row of fanfuse.limits.LIMITS of each level
# (None: names).
WHAT: dict[str, tuple[str, str | None]] = {
    "ks": ("RRF k values", "k"),
    "weight_levels": ("per-run weight levels (at least one > 0)", "weight"),
    "phis": ("rbc persistence values", "phi"),
    "sigmas": ("logn_isr smoothing values", "sigma"),
    "gammas": ("combgmnz exponents", "gamma"),
    "norms": ("score normalisations of score methods", None),
    "segment_counts": ("probfuse segment counts", "segments"),
    "windows": ("slidefuse half-windows", "window"),
}


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "tune",
        help="search a fusion method's parameters with k-fold cross-validation over queries",
        description="Searches the parameters of --method (grid, or coordinate ascent for large grids), "
        "chosen on the training folds and scored on the held-out fold (trained methods are trained on "
        "the training folds only); compared with picking the best single run the same way.",
    )
    add_runs(parser, help="run files (at least two)")
    add_qrels(parser)
    parser.add_argument(
        "--method",
        default="rrf",
        choices=METHODS + TRAINED_METHODS,
        metavar="METHOD",
        help=f"fusion method (default rrf): {', '.join(METHODS + TRAINED_METHODS)}",
    )
    parser.add_argument("--metric", default="ndcg@10", help="metric to optimise (default ndcg@10)")
    for option in OPTIONS:
        what, key = WHAT[option.keyword]
        flag, help = level_flag(option.keyword), _levels_help(option.default, what)
        if key is None:
            parser.add_argument(flag, dest=option.keyword, type=name_list, help=help)
        else:
            number_option(parser, flag, key, help, many=True, dest=option.keyword)
    for option in OPTIONS:
        # fuse's flag of the parameter, which a user of both commands reaches for: refused naming
        # the list of its levels that tune searches.
        single = ONE_VALUE_FLAGS.get(option.parameter, f"--{option.parameter}")
        said = f"sets one value in fuse; tune searches a list of levels: use {level_flag(option.keyword)}"
        parser.add_argument(single, action=Renamed, said=said)
    parser.add_argument(
        "--search",
        default="auto",
        choices=SEARCHES,
        help=f"auto (default): the full grid up to {GRID_LIMIT} configurations, coordinate ascent beyond",
    )
    number_option(parser, "--folds", "folds", "cross-validation folds (default 5)", default=5)
    number_option(parser, "--seed", "seed", "seed of the fold split (default 0)", default=0)
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    add_stdout(parser)
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    qrels = read_any_qrels(args.qrels)
    runs = [read_any_run(path, rank_from=args.rank_from) for path in args.runs]
    progress = ProgressBar("tune")
    report = tune(
        runs,
        qrels,
        method=args.method,
        metric=args.metric,
        search=args.search,
        folds=args.folds,
        seed=args.seed,
        on_step=progress,
        **given_levels(args),
    )
    progress.close()
    if args.json:
        print(json.dumps(asdict(report), indent=2))
        return 0
    names = args.runs
    rows = [
        [
            str(f.fold),
            f.fused.describe(),
            f"{f.fused_heldout:.4f}",
            names[f.single_run],
            f"{f.single_heldout:.4f}",
        ]
        for f in report.folds
    ]
    print(table(["fold", "chosen fusion", "held-out", "chosen single run", "held-out"], rows))
    searched = ", ".join(f"{name} {len(levels)} levels" for name, levels in report.levels.items())
    gain = report.fused_heldout - report.single_heldout
    print(
        f"\n{report.method}: {report.search} search over {searched or 'nothing (one configuration)'}; "
        f"{report.fusions} fusions evaluated"
    )
    print(
        f"{report.metric} on held-out queries ({report.queries}): "
        f"tuned fusion {report.fused_heldout:.4f} vs best single run {report.single_heldout:.4f}: "
        f"{gain:+.4f} (paired randomization p={report.p_value:.3g})"
    )
    return 0
