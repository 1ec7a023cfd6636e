"""Run files for the Dask engine's tests: generated runs written grouped (each run in its own query
order) or with every line shuffled, queries missing from some runs, a comment and a blank line."""

from __future__ import annotations

import contextlib
import faulthandler
import io
import random
import sys
from collections.abc import Iterator
from pathlib import Path

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
