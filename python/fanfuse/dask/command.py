"""`fanfuse fuse --engine dask` and `fanfuse eval --engine dask`: the graphs of ``fanfuse.dask`` run on
the scheduler given (or this process's threads); the fused file written by the core, in the order
one process writes it."""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import socket
import stat
import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from typing import Any, TypeVar

import dask.config
import pyarrow as pa
from dask.base import compute, persist, tokenize
from dask.delayed import Delayed
from dask.highlevelgraph import HighLevelGraph

from fanfuse._core import Qrels
from fanfuse._core._internal import write_run_text
from fanfuse.choices import RankFrom
from fanfuse.dask import DEFAULT_BLOCK_BYTES, fused_partitions, plan_runs, shuffle_partitions
from fanfuse.dask.kernel import evaluate_partition
from fanfuse.errors import InputError, InvalidSetting
from fanfuse.options import FusionOptions
from fanfuse.run_scores import RunScores, with_means
from fanfuse.tables import read_any_qrels

T = TypeVar("T")
# Seconds to reach a scheduler given by --scheduler (its TCP port, then its handshake) before
# giving up with an error: a scheduler on a reachable network answers within a second.
CONNECT_TIMEOUT = 5
# Bytes of a run file one task reads (a gzip file is read whole); the tests make it small.
BLOCK_BYTES = DEFAULT_BLOCK_BYTES


@contextlib.contextmanager
def scheduler(address: str | None) -> Iterator[None]:
    """Computations inside run on the Dask scheduler at `address`, else on this process's threads:
    on one machine they skip worker start-up and the copies between processes, and the core releases
    the GIL for the work of every task."""
    if address is None:
        with dask.config.set({"scheduler": "threads"}):
            yield
        return
    from distributed import Client

    try:
        _reachable(address)
        client = _within(2 * CONNECT_TIMEOUT, lambda: Client(address, timeout=CONNECT_TIMEOUT))
    except (OSError, TimeoutError, ValueError) as error:
        raise ConnectionError(f"--scheduler {address}: cannot connect ({error})") from None
    except Exception as error:
        # A peer that is not a Dask scheduler (an SSH or HTTP server sending first) fails distributed's
        # handshake in its own ways: a frame length read from other bytes is a MemoryError, which the
        # command would otherwise report as an input too large for the machine.
        said = str(error)[:200]
        raise ConnectionError(
            f"--scheduler {address}: cannot connect (the handshake failed: {type(error).__name__}"
            f"{': ' + said if said else ''}; is a Dask scheduler listening there?)"
        ) from None
    with _quiet("distributed"):
        try:
            yield
        except Exception as error:
            if client.status == "running":
                raise  # the job's own error (a bad line, the output), with the scheduler still there
            raise ConnectionError(
                f"--scheduler {address}: lost the connection to the scheduler mid-job "
                f"(it stopped, or the network failed); nothing was written ({type(error).__name__})"
            ) from None
        finally:
            client.close(timeout=CONNECT_TIMEOUT)


@contextlib.contextmanager
def _quiet(name: str) -> Iterator[None]:
    """Silences logger `name` and those under it inside: distributed logs a lost scheduler with
    tracebacks from its own thread (some of its loggers have levels and handlers of their own),
    where the command reports it in one line."""
    names = [name, *(n for n in logging.root.manager.loggerDict if n.startswith(f"{name}."))]
    loggers = [logging.getLogger(n) for n in names]
    levels = [log.level for log in loggers]
    for log in loggers:
        log.setLevel(logging.CRITICAL + 1)
    try:
        yield
    finally:
        for log, level in zip(loggers, levels, strict=True):
            log.setLevel(level)


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


def in_order(fused: Sequence[Delayed], ranges: int) -> Iterator[pa.Table]:
    """The fused queries in the order one process writes them: the partitions' batches of one range
    of the order key at a time (so this process holds one range), sorted by the key."""
    # One task a range gathers it from every partition, in the graph of the partitions (each fused
    # once): a task a partition and range, or a graph merged a partition at a time, cost far more
    # per partition than its batch.
    name = f"fanfuse-ranges-{tokenize([part.key for part in fused], ranges)}"
    layer: dict[Any, Any] = {(name, k): (_range_of, [part.key for part in fused], k) for k in range(ranges)}
    partitions: list[Any] = list(fused)
    graph = HighLevelGraph.from_collections(name, layer, dependencies=partitions)
    (persisted,) = persist([Delayed((name, k), graph, layer=name) for k in range(ranges)])
    for part in persisted:
        (pieces,) = compute(part)
        yield pa.Table.from_batches(pieces).sort_by("order")


def _range_of(partitions: Sequence[Sequence[pa.RecordBatch]], k: int) -> list[pa.RecordBatch]:
    """The batches of range `k` of the order key, one from each partition."""
    return [batches[k] for batches in partitions]


def write_fused(fused: Sequence[Delayed], ranges: int, output: str, inputs: Sequence[str]) -> int:
    """Writes the fused queries through the core's output file; returns their number."""
    return write_run_text(output, in_order(fused, ranges), inputs=list(inputs))


def fuse(args: argparse.Namespace, options: FusionOptions) -> int:
    """``options``: the fusion options as the command read them (no trained model)."""
    if args.run_format != "trec":
        raise InvalidSetting("--engine dask writes TREC runs only; drop --run-format or --engine dask")
    arguments = {"rank_from": args.rank_from, "threads": args.threads, "format": "trec", "tag": args.tag}
    runs = list(args.runs)
    with scheduler(args.scheduler):
        # Ranges of the output by input block: this process holds about one block's worth at a time.
        fused, ranges = fused_partitions(
            runs,
            options=options,
            partitions=args.partitions,
            block_bytes=BLOCK_BYTES,
            ranges=None,
            **arguments,
        )
        queries = write_fused(fused, ranges, args.output, runs)
    where = args.scheduler or "this process's threads"
    print(f"fused {queries} queries into {args.output} with Dask ({where})", file=sys.stderr)
    return 0


# What a file that is not a regular one is, as a refusal names it.
_KINDS = ((stat.S_ISFIFO, "a pipe"), (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"))


def held_qrels(qrels: str, address: str | None) -> str | Qrels:
    """What the evaluation tasks take the judgments from. A regular file: its path, which each
    worker reads once (and again when the file changes). Anything else (a pipe, a device) gives its
    bytes once: it is read here, once, as one process reads it, and the tasks on this process's
    threads share it. The workers of a scheduler cannot be handed judgments read here (a ``Qrels``
    lives in the core and has no pickled form): each reads the qrels by path where it runs, so a
    file that is not a regular one is refused for them before the scheduler is asked."""
    mode = os.stat(qrels).st_mode
    if stat.S_ISREG(mode):
        return qrels
    if address is not None:
        what = next((name for test, name in _KINDS if test(mode)), "not a regular file")
        raise InputError(
            f"--qrels {qrels!r}: is {what}, which the workers of --scheduler cannot read: each reads "
            "the qrels by path where it runs; write them to a file the workers can read and give the "
            "file, or drop --scheduler (this process's threads evaluate qrels read here once)"
        )
    return read_any_qrels(qrels)


def evaluate_runs(
    runs: Sequence[str],
    qrels: str | Qrels,
    metrics: Sequence[str],
    *,
    partitions: int | None = None,
    block_bytes: int | None = None,
    rank_from: RankFrom = "score",
) -> list[RunScores]:
    """Per-query values of every run computed in the partitions of its shuffle on qid, gathered and
    averaged in run order, as one process averages them (the same means, bit for bit), each run's
    hits in the order ``rank_from`` says, as one process reads them. ``qrels``: a path, or
    judgments ``held_qrels`` read (which a path that is no regular file becomes here)."""
    if isinstance(qrels, str):
        qrels = held_qrels(qrels, None)
    # Judgments held in memory are one object of this process: its identity keys the tasks.
    key = qrels if isinstance(qrels, str) else id(qrels)
    per_run = []
    for run in runs:
        plan = plan_runs([run], block_bytes or BLOCK_BYTES)
        count = shuffle_partitions(partitions, plan)
        tasks = plan.tasks(count, rank_from)
        name = f"fanfuse-evaluate-{tokenize(tasks.name, key, list(metrics))}"
        for j, part in enumerate(tasks.rows):
            arguments = (part, tasks.summaries, plan.names[0], qrels, list(metrics), rank_from)
            tasks.graph[(name, j)] = (evaluate_partition, *arguments)
        tasks.graph[name] = (list, [(name, j) for j in range(count)])
        per_run.append(tasks.delayed(name))
    computed = compute(*per_run)
    scored = []
    for run, parts in zip(runs, computed, strict=True):
        records = sorted(record for part in parts for record in part)
        values = {m: [record[2][j] for record in records] for j, m in enumerate(metrics)}
        scored.append(with_means(run, [record[1] for record in records], values))
    return scored
