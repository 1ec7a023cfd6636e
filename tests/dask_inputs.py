"""Run files for the tests of the distributed engines: generated runs written grouped (each run in its
own query order) or with every line shuffled, queries missing from some runs, a comment and a blank
line; the same runs as gzip, MT-RAG JSONL or Parquet; a fused run read back by query."""

from __future__ import annotations

import contextlib
import faulthandler
import gzip
import io
import json
import random
import sys
from collections.abc import Iterator
from pathlib import Path

from fanfuse import read_run
from fanfuse.cli import main
from generated_runs import generated_qrels, generated_runs, write_beir_qrels

# Every command (and the cluster's start) has this long to finish: nothing may hang.
COMMAND_SECONDS = 120


def write_runs(
    directory: Path, seed: int, *, interleaved: bool, runs: int = 3, queries: int = 50
) -> list[str]:
    """The paths of the runs; their qrels are written to `qrels.txt` beside them."""
    rng = random.Random(seed)
    paths = []
    generated = generated_runs(rng, runs=runs, queries=queries, depth=8)
    write_beir_qrels(directory / "qrels.txt", generated_qrels(rng, generated))
    for r, run in enumerate(generated):
        qids = sorted(run)
        rng.shuffle(qids)  # grouped runs in different query orders: queries wait for other runs
        lines = [f"{q}\tQ0 {d} {i + 1} {s!r} gen\n" for q in qids for i, (d, s) in enumerate(run[q])]
        if interleaved:
            rng.shuffle(lines)
        lines.insert(rng.randint(0, len(lines)), "# a comment\n")
        lines.insert(rng.randint(0, len(lines)), "\n")
        path = directory / f"run{r}.trec"
        path.write_text("".join(lines), encoding="utf-8")
        paths.append(str(path))
    return paths


@contextlib.contextmanager
def time_limit(seconds: float = COMMAND_SECONDS) -> Iterator[None]:
    """Ends the test process, printing every thread's stack, if the block outlasts `seconds`: a hung
    cluster fails the run instead of stalling it."""
    faulthandler.dump_traceback_later(seconds, exit=True)
    try:
        yield
    finally:
        faulthandler.cancel_dump_traceback_later()


def fanfuse(*args: str) -> tuple[int, str, str]:
    """The command run in this process (no second start-up of Dask): exit code, stdout, stderr."""
    out, err = io.StringIO(), io.StringIO()
    with time_limit(), contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(args))
    return code, out.getvalue(), err.getvalue()


def python_has_no(module: str) -> list[str]:
    """An interpreter command line on which `import module` fails, as where the extra is missing."""
    code = f"import sys; sys.modules[{module!r}] = None; from fanfuse.cli import main; sys.exit(main())"
    return [sys.executable, "-c", code]


def as_mtrag(path: str, target: Path, *, compress: bool = False) -> str:
    """The TREC run as MT-RAG JSONL: one record per group of consecutive lines of one query (contexts
    in line order), and a record without contexts."""
    records: list[tuple[str, list[dict[str, object]]]] = []
    for line in Path(path).read_text().splitlines():
        fields = line.split()
        if not fields or fields[0].startswith("#"):
            continue
        context = {"document_id": fields[2], "score": float(fields[4]), "text": f"passage {fields[2]}"}
        if records and records[-1][0] == fields[0]:
            records[-1][1].append(context)
        else:
            records.append((fields[0], [context]))
    records.insert(len(records) // 2, ("no-contexts", []))
    text = "".join(
        json.dumps({"task_id": q, "Collection": "c", "contexts": contexts}) + "\n" for q, contexts in records
    )
    return write_text(target, text, compress)


def as_gzip(path: str, target: Path) -> str:
    return write_text(target, Path(path).read_text(), compress=True)


def write_text(target: Path, text: str, compress: bool) -> str:
    if compress:
        target.write_bytes(gzip.compress(text.encode()))
    else:
        target.write_text(text)
    return str(target)


def as_parquet(path: str, target: Path) -> str:
    """The run's lines as a Parquet table, in line order, in several row groups."""
    import pyarrow
    import pyarrow.parquet as pq

    fields = [line.split() for line in Path(path).read_text().splitlines()]
    records = [f for f in fields if f and not f[0].startswith("#")]
    table = pyarrow.table(
        {
            "q_id": [f[0] for f in records],
            "doc_id": [f[2] for f in records],
            "rank": [int(f[3]) for f in records],
            "score": [float(f[4]) for f in records],
        }
    )
    pq.write_table(table, target, row_group_size=64)
    return str(target)


FORMATS = {
    "trec": lambda p, t: p,
    "trec.gz": lambda p, t: as_gzip(p, t.with_suffix(".gz")),
    "mtrag": lambda p, t: as_mtrag(p, t.with_suffix(".jsonl")),
    "mtrag.gz": lambda p, t: as_mtrag(p, t.with_suffix(".jsonl.gz"), compress=True),
    "parquet": lambda p, t: as_parquet(p, t.with_suffix(".parquet")),
}


def columns_of(path: str) -> dict[str, list[tuple[str, int, float]]]:
    qids, docids, ranks, scores = read_run(path, rank_from="file").columns()
    out: dict[str, list[tuple[str, int, float]]] = {}
    for q, d, r, s in zip(qids, docids, ranks, scores, strict=True):
        out.setdefault(q, []).append((d, r, s))
    return out
