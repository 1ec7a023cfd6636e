"""`fanfuse fuse RUN... -o OUT`: fuse TREC / MT-RAG run files query by query, streaming, in Rust."""

from __future__ import annotations

import argparse
import contextlib
import sys
from collections.abc import Iterator
from typing import Any

from fanfuse._core import (
    METHODS,
    NORMS,
    RUN_FORMATS,
    TRAINED_METHODS,
    FusionError,
    FusionModel,
    Run,
    fuse_files,
    train_fusion,
)
from fanfuse.cli._common import number_option
from fanfuse.cli.engine import add_engine_options, check_engine_options, dask_commands
from fanfuse.cli.fusion_options import DEFAULTS, RUN_FILE_TOP_K, run_fusion_options
from fanfuse.cli.idle_flags import loaded_model
from fanfuse.cli.paths import (
    PARQUET_SUFFIXES,
    HeldOutputs,
    add_input,
    add_output,
    add_runs,
    check_named,
    names_parquet,
)
from fanfuse.cli.progress import ProgressBar
from fanfuse.errors import InvalidSetting
from fanfuse.options import FusionOptions
from fanfuse.tables import is_parquet, read_any_qrels, read_any_run, read_parquet_run, to_arrow, write_parquet

# How the writers begin the refusal of a run no output can hold (no query; for TREC no hit).
NOTHING_TO_WRITE = "nothing to write: "


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "fuse",
        help="fuse run files (TREC or MT-RAG JSONL, optionally .gz) into one run",
        description="Fuses the runs query by query (the union of their queries) and writes the result "
        "atomically. Memory stays flat when every input is grouped by query in the same order.",
    )
    add_runs(parser, help="run files: TREC 6-column, MT-RAG JSONL or Parquet")
    add_output(
        parser,
        "-o",
        "--output",
        required=True,
        help=f"output file (written atomically); a name ending in {' or '.join(PARQUET_SUFFIXES)} (any case) "
        "is written as Parquet (qid, docid, rank, score)",
    )
    parser.add_argument(
        "--method",
        help=f"fusion method (default rrf; with --model, the model's): {', '.join(METHODS)}, and trained on "
        f"qrels (with --train-runs and --train-qrels, or --model): {', '.join(TRAINED_METHODS)} "
        "(docs/fusion-methods.md)",
    )
    add_input(
        parser,
        "--train-runs",
        kind="run",
        nargs="+",
        metavar="RUN",
        help="runs to train on (TREC, MT-RAG JSONL or Parquet), one per input run, in the same order",
    )
    add_input(
        parser,
        "--train-qrels",
        kind="qrels",
        metavar="QRELS",
        help="qrels to train on (TREC, BEIR TSV or Parquet)",
    )
    number_option(parser, "--segments", "segments", "probfuse: segments per list (default 25)")
    number_option(parser, "--window", "window", "slidefuse: half-window (default 5)")
    add_input(
        parser,
        "--model",
        kind="model",
        metavar="JSON",
        help="a trained model saved by --save-model (instead of training)",
    )
    add_output(parser, "--save-model", metavar="JSON", help="write the trained model here (atomically)")
    parser.add_argument(
        "--norm",
        help=f"score normalisation of score methods (their default min-max): {', '.join(NORMS)}",
    )
    number_option(parser, "--rrf-k", "k", f"RRF constant k (default {DEFAULTS.k:g})")
    number_option(
        parser, "--weights", "weight", "one weight per run, e.g. 1,0.5,2 (default all 1)", many=True
    )
    number_option(parser, "--phi", "phi", f"rbc: persistence (default {DEFAULTS.phi:g})")
    number_option(parser, "--sigma", "sigma", f"logn_isr: smoothing (default {DEFAULTS.sigma:g})")
    number_option(
        parser, "--gamma", "gamma", f"combgmnz: exponent of the hit count (default {DEFAULTS.gamma:g})"
    )
    number_option(
        parser,
        "--top-k",
        "fused_top_k",
        f"hits kept per query (default {RUN_FILE_TOP_K}, as trec_eval reads a run)",
        note=" (0 keeps all)",
    )
    parser.add_argument(
        "--run-format", default="trec", choices=RUN_FORMATS, help="format of the written run (default trec)"
    )
    parser.add_argument("--collection", help="MT-RAG 'Collection' of the output (default: the first input's)")
    parser.add_argument("--tag", default="fanfuse", help="run tag of TREC output (default fanfuse)")
    number_option(parser, "--threads", "threads", "fusion threads (default: FANFUSE_NUM_THREADS, else 1)")
    add_engine_options(parser)
    parser.set_defaults(run=run)


def trained_model(args: argparse.Namespace, held: HeldOutputs) -> FusionModel | None:
    """The model of a trained method: loaded (--model) or trained (--train-runs, --train-qrels), then
    held for --save-model."""
    # fanfuse.cli.idle_flags refused these flags beside a method that is not trained.
    training = args.train_runs is not None or args.train_qrels is not None
    if args.model:  # with a trained --method, or none: the model's
        if training:
            raise InvalidSetting(
                "--model is a trained model: give it or --train-runs/--train-qrels, not both"
            )
        model = loaded_model(args) or FusionModel.load(args.model)
        if args.method is not None and model.method != args.method:
            raise FusionError(f"--model {args.model} is a {model.method} model, not {args.method}")
        return model
    if args.method not in TRAINED_METHODS:
        return None
    if args.train_runs is None or args.train_qrels is None:
        raise InvalidSetting(
            f"--method {args.method} is trained: give --train-runs and --train-qrels (or --model)"
        )
    if len(args.train_runs) != len(args.runs):
        raise FusionError(
            f"--train-runs has {len(args.train_runs)} runs for {len(args.runs)} input runs; "
            "give one per input, in order"
        )
    model = train_fusion(
        [read_any_run(path, rank_from=args.rank_from) for path in args.train_runs],
        read_any_qrels(args.train_qrels),
        method=args.method,
        segments=args.segments,
        window=args.window,
    )
    if args.save_model:
        # The text FusionModel.save writes.
        held.write(args.save_model, f"{model.to_json()}\n".encode())
    return model


def run(args: argparse.Namespace) -> int:
    check_engine_options(args)
    check_output_names(args)
    parquet = names_parquet(args.output)
    check_parquet_output(args, parquet)
    options = run_fusion_options(args)
    with naming_output(args.output):
        if args.engine == "dask":
            # check_engine_options refused a trained method: there is no model to pass.
            code: int = dask_commands(args).fuse(args, options)
            return code
        with HeldOutputs() as held:
            return fuse_to_output(args, options, trained_model(args, held), parquet)


@contextlib.contextmanager
def naming_output(output: str) -> Iterator[None]:
    """A fused run that no output can hold (the writers refuse it as `nothing to write: ...` before
    writing a byte) is refused naming the output it was meant for."""
    try:
        yield
    except FusionError as error:
        if not str(error).startswith(NOTHING_TO_WRITE):
            raise
        raise type(error)(f"--output {output!r}: {error}") from None


def fuse_to_output(
    args: argparse.Namespace, options: FusionOptions, model: FusionModel | None, parquet: bool
) -> int:
    """Fuses the runs into --output (TREC / MT-RAG text by the core's stream, or Parquet)."""
    bar = ProgressBar("fuse", unit="bytes")

    def progress(bytes_read: int, bytes_total: int, queries: int) -> None:
        bar(bytes_read, bytes_total, f"{queries} queries")

    # Parquet inputs are read by pyarrow, then replayed in row order: they fuse as the same lines would.
    inputs = [read_parquet_run(p, rank_from=args.rank_from) if is_parquet(p) else p for p in args.runs]
    # Parquet output: the stream returns the fused run in memory, in the order of the run file it
    # would write, and pyarrow writes it through the output guard.
    result = fuse_files(
        inputs,
        None if parquet else args.output,
        options=options,
        model=model,
        threads=args.threads,
        rank_from=args.rank_from,
        format=args.run_format,
        collection=args.collection,
        tag=args.tag,
        progress=progress if bar.enabled else None,
    )
    bar.close()
    if isinstance(result, Run):
        check_parquet_rows(result)
        write_parquet(result, args.output)
        print(f"fused {len(result)} queries into {args.output}", file=sys.stderr)
        return 0
    mode = " (inputs not grouped alike: buffered in memory)" if result["buffered"] else ""
    print(
        f"fused {result['queries']} queries from {result['input_lines']} input lines "
        f"into {args.output}{mode}",
        file=sys.stderr,
    )
    return 0


def check_output_names(args: argparse.Namespace) -> None:
    """The outputs are what their names say (`fanfuse.cli.paths.NAMED_FORMATS`): the run is text of
    --run-format (MT-RAG JSONL may be named *.json) or Parquet by its name; the model is JSON."""
    suffixes = " / ".join(PARQUET_SUFFIXES)
    check_named(
        "--output",
        args.output,
        {"Parquet", "JSON"} if args.run_format == "mtrag" else {"Parquet"},
        f"a run as TREC or MT-RAG JSONL text (--run-format), or as Parquet for a name ending {suffixes}",
    )
    if args.save_model:
        check_named("--save-model", args.save_model, {"JSON"}, "the trained model as JSON text")


def check_parquet_rows(run: Run) -> None:
    """A Parquet run is one row per hit, and the readers refuse a table without rows: a fused run
    without hits is refused as the TREC writer refuses it, before the file is created."""
    if len(run) == 0:
        raise FusionError(f"{NOTHING_TO_WRITE}the runs have no queries")
    if to_arrow(run).num_rows == 0:
        raise FusionError(
            f"{NOTHING_TO_WRITE}none of its {len(run)} queries has a hit (a Parquet run has a row per hit, "
            f"none for a query without hits); write MT-RAG JSONL (--run-format mtrag, to an output not "
            f"named *{' / *'.join(PARQUET_SUFFIXES)}), which keeps them"
        )


def check_parquet_output(args: argparse.Namespace, parquet: bool) -> None:
    """An output named as Parquet is written by pyarrow from the fused run: refuse what would write
    something else under that name."""
    if not parquet:
        return
    if args.engine == "dask":
        raise InvalidSetting(
            f"--engine dask writes TREC text, not Parquet: drop --engine dask or name the output "
            f"other than *{' / *'.join(PARQUET_SUFFIXES)}"
        )
    if args.run_format != "trec":
        raise InvalidSetting(
            f"--run-format {args.run_format} is a text format, but an output named "
            f"*{' / *'.join(PARQUET_SUFFIXES)} is written as Parquet (qid, docid, rank, score): "
            "drop --run-format or name the output otherwise"
        )
