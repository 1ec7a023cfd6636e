"""`fanfuse fuse RUN... -o OUT`: fuse TREC / MT-RAG run files query by query, streaming, in Rust."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from fanfuse._core import (
    METHODS,
    NORMS,
    RANK_SOURCES,
    RUN_FORMATS,
    TIE_BREAKS,
    FusionError,
    fuse_files,
    fuse_runs,
)
from fanfuse.cli._common import float_list, guarded, int_from
from fanfuse.cli.engine import add_engine_options, check_engine_options, dask_commands
from fanfuse.cli.progress import ProgressBar
from fanfuse.tables import is_parquet, read_any_run, read_parquet_run, write_parquet

# ranx writes Parquet runs under both names.
PARQUET_SUFFIXES = (".parquet", ".parq")


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "fuse",
        help="fuse run files (TREC or MT-RAG JSONL, optionally .gz) into one run",
        description="Fuses the runs query by query (the union of their queries) and writes the result "
        "atomically. Memory stays flat when every input is grouped by query in the same order.",
    )
    parser.add_argument(
        "runs", nargs="+", metavar="RUN", help="run files: TREC 6-column, MT-RAG JSONL or Parquet"
    )
    parser.add_argument(
        "-o",
        "--output",
        required=True,
        help="output file (written atomically); a name ending in .parquet is written as Parquet",
    )
    parser.add_argument(
        "--method",
        default="rrf",
        help=f"fusion method (default rrf): {', '.join(METHODS)} (docs/fusion-methods.md)",
    )
    parser.add_argument(
        "--norm",
        help=f"score normalisation of score methods (their default min-max): {', '.join(NORMS)}",
    )
    parser.add_argument("--k", type=float, default=60.0, help="RRF k (default 60)")
    parser.add_argument("--weights", type=float_list, help="one weight per run, e.g. 1,0.5,2 (default all 1)")
    parser.add_argument(
        "--top-k",
        type=int_from(0, note=" (0 keeps all)"),
        default=1000,
        help="hits kept per query (default 1000; 0 = all)",
    )
    parser.add_argument(
        "--rank-from",
        default="score",
        choices=RANK_SOURCES,
        help="rank of an input hit: score (default; descending, ties by docid descending, as trec_eval "
        "reads a run), the rank column, or the file order",
    )
    parser.add_argument("--tie-break", default="rank", choices=TIE_BREAKS, help="order of equal fused scores")
    parser.add_argument("--format", default="trec", choices=RUN_FORMATS, help="output format (default trec)")
    parser.add_argument("--collection", help="MT-RAG 'Collection' of the output (default: the first input's)")
    parser.add_argument("--tag", default="fanfuse", help="run tag of TREC output (default fanfuse)")
    parser.add_argument(
        "--threads", type=int_from(1), help="fusion threads (default: FANFUSE_NUM_THREADS, else 1)"
    )
    add_engine_options(parser)
    parser.set_defaults(run=guarded(run))


def run(args: argparse.Namespace) -> int:
    check_engine_options(args)
    if args.engine == "dask":
        code: int = dask_commands(args).fuse(args)
        return code
    if args.output.endswith(PARQUET_SUFFIXES):
        return run_to_parquet(args)
    bar = ProgressBar("fuse", unit="bytes")

    def progress(bytes_read: int, bytes_total: int, queries: int) -> None:
        bar(bytes_read, bytes_total, f"{queries} queries")

    # Parquet inputs are read by pyarrow, then replayed in row order: they fuse as the same lines would.
    inputs = [read_parquet_run(p, rank_from=args.rank_from) if is_parquet(p) else p for p in args.runs]
    summary = fuse_files(
        inputs,
        args.output,
        **fusion_options(args),
        rank_from=args.rank_from,
        format=args.format,
        collection=args.collection,
        tag=args.tag,
        progress=progress if bar.enabled else None,
    )
    bar.close()
    mode = " (inputs not grouped alike: buffered in memory)" if summary["buffered"] else ""
    print(
        f"fused {summary['queries']} queries from {summary['input_lines']} input lines "
        f"into {args.output}{mode}",
        file=sys.stderr,
    )
    return 0


def fusion_options(args: argparse.Namespace) -> dict[str, Any]:
    """The options of the fusion itself, whatever is read and written."""
    return {
        "method": args.method,
        "norm": args.norm,
        "k": args.k,
        "weights": args.weights,
        "top_k": args.top_k or None,
        "tie_break": args.tie_break,
        "threads": args.threads,
    }


def run_to_parquet(args: argparse.Namespace) -> int:
    """Parquet output: the runs are read into memory, fused in one call and written by pyarrow
    (atomically); each query's rows are those of the TREC output."""
    output = Path(args.output)
    for path in args.runs:
        if output.exists() and Path(path).exists() and output.samefile(path):
            raise FusionError(f"the output {args.output} is the input {path}; write the fused run elsewhere")
    runs = [read_any_run(p, rank_from=args.rank_from) for p in args.runs]
    fused = fuse_runs(runs, **fusion_options(args))
    if len(fused) == 0:
        raise FusionError("nothing to write: the runs have no queries")
    write_parquet(fused, args.output)
    print(f"fused {len(fused)} queries into {args.output}", file=sys.stderr)
    return 0
