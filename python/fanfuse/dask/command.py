"""`fanfuse fuse --engine dask` and `fanfuse eval --engine dask`: the graphs of ``fanfuse.dask`` run on
the scheduler given (or this process's threads), the file written in the one-process order."""

from __future__ import annotations

import argparse
import contextlib
import os
import socket
import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from typing import IO, TypeVar

import dask.config
import dask.dataframe as dd
import pandas as pd
from dask.base import compute

from fanfuse._core import FusionError, OutputFile
from fanfuse.dask import DEFAULT_BLOCK_BYTES, fused_queries, read_rows, shuffle_partitions
from fanfuse.dask.kernel import evaluate_partition, evaluation_columns
from fanfuse.fusion_options import method_parameters
from fanfuse.runs import RunScores, with_means

T = TypeVar("T")
# Seconds to reach a scheduler given by --scheduler (its TCP port, then its handshake) before
# giving up with an error: a scheduler on a reachable network answers within a second.
CONNECT_TIMEOUT = 5


@contextlib.contextmanager
def scheduler(address: str | None) -> Iterator[None]:
    """Computations inside run on the Dask scheduler at `address`, else on this process's threads:
    on one machine they skip worker start-up and the copies between processes, and the work of a
    partition (Arrow compute, pandas, the Rust kernel) runs without the GIL for the most part."""
    if address is None:
        with dask.config.set({"scheduler": "threads", "dataframe.shuffle.method": "tasks"}):
            yield
        return
    from distributed import Client

    try:
        _reachable(address)
        client = _within(2 * CONNECT_TIMEOUT, lambda: Client(address, timeout=CONNECT_TIMEOUT))
    except (OSError, TimeoutError, ValueError) as error:
        raise FusionError(f"--scheduler {address}: cannot connect ({error})") from None
    with client:
        yield


def _within(seconds: float, connect: Callable[[], T]) -> T:
    """`connect()`, given up after `seconds`: distributed's own timeout does not cover a peer that
    accepts the connection and never answers (its handshake then waits forever). The abandoned
    attempt stays on a daemon thread, which ends with the process."""
    outcome: list[T | BaseException] = []

    def attempt() -> None:
        try:
            outcome.append(connect())
        except BaseException as error:  # handed to the caller's thread
            outcome.append(error)

    thread = threading.Thread(target=attempt, name="fanfuse-connect", daemon=True)
    thread.start()
    thread.join(seconds)
    if not outcome:
        raise TimeoutError(f"no answer within {seconds:g} s; is a Dask scheduler listening there?")
    if isinstance(outcome[0], BaseException):
        raise outcome[0]
    return outcome[0]


def _reachable(address: str) -> None:
    """Fails at once where nothing listens at a tcp:// or tls:// address (distributed would retry a
    refused connection until its timeout), and within CONNECT_TIMEOUT where nothing answers."""
    scheme, _, rest = address.rpartition("://")
    if scheme not in ("", "tcp", "tls"):
        return  # another transport (ucx, inproc): distributed's own timeout applies
    host, _, port = rest.rpartition(":")
    if not port.isdigit():
        return  # distributed reads the address (and words what is wrong with it)
    socket.create_connection((host.strip("[]") or "127.0.0.1", int(port)), timeout=CONNECT_TIMEOUT).close()


def write_fused(fused: dd.DataFrame, stream: IO[bytes]) -> int:
    """Writes the fused queries in the order one process writes them; returns their number."""
    fused = fused.persist()
    buffered = bool(fused["restart"].any().compute())
    ordered = fused.sort_values(["seq"] if buffered else ["release", "seq"]).persist()
    del fused
    queries = 0
    for part in ordered.to_delayed():
        frame = part.compute()
        stream.write("".join(frame["text"].tolist()).encode("utf-8"))
        queries += len(frame)
    return queries


def fuse(args: argparse.Namespace) -> int:
    if args.run_format != "trec":
        raise FusionError("--engine dask writes TREC runs only; drop --run-format or --engine dask")
    options = {
        "method": args.method,
        "norm": args.norm,
        "k": args.rrf_k,
        "weights": args.weights,
        "top_k": args.top_k or None,
        "tie_break": args.tie_break,
        "rank_from": args.rank_from,
        "tag": args.tag,
        "threads": args.threads,
        **method_parameters(args),
    }
    with scheduler(args.scheduler), OutputFile(args.output, inputs=list(args.runs)) as stream:
        fused = fused_queries(list(args.runs), partitions=args.partitions, **options)
        queries = write_fused(fused, stream)
    where = args.scheduler or "this process's threads"
    print(f"fused {queries} queries into {args.output} with Dask ({where})", file=sys.stderr)
    return 0


def evaluate_runs(
    runs: Sequence[str],
    qrels: str,
    metrics: Sequence[str],
    *,
    partitions: int | None = None,
    block_bytes: int = DEFAULT_BLOCK_BYTES,
) -> list[RunScores]:
    """Per-query values of every run computed in the partitions of its shuffle on qid, gathered and
    averaged in run order, as one process averages them (the same means, bit for bit)."""
    if not os.path.isfile(qrels):
        raise FusionError(f"{qrels}: no such file (the qrels)")
    per_query = []
    for run in runs:
        rows, blocks, kinds = read_rows([run], block_bytes=block_bytes)
        shuffled = rows.shuffle(on="qid", npartitions=shuffle_partitions(partitions, rows))
        meta = pd.DataFrame({n: pd.Series([], dtype=t) for n, t in evaluation_columns(metrics).items()})
        per_query.append(
            shuffled.map_partitions(evaluate_partition, blocks, kinds[0], qrels, list(metrics), meta=meta)
        )
    computed: Sequence[pd.DataFrame] = compute(*per_query)
    scored = []
    for run, frame in zip(runs, computed, strict=True):
        frame = frame.sort_values("first", kind="stable")
        values = {m: frame[m].astype(float).tolist() for m in metrics}
        scored.append(with_means(run, frame["qid"].astype(str).tolist(), values))
    return scored
