"""A call of the core may run Python code on its own thread while it works: the progress callback
of `fuse_files`, and the signal handlers the interpreter runs when the core polls it. That code may
call fanfuse again; every function of the core works there as anywhere (the nested call installs
its own poll), and the outer call goes on to its result."""

from __future__ import annotations

import signal
from collections.abc import Callable
from pathlib import Path
from typing import Any

import fanfuse
import fanfuse._core as core
import pyarrow as pa
import pytest

RUN = "".join(f"q{q} Q0 d{d} {d + 1} {10 - d} t\n" for q in range(3) for d in range(4))
QRELS = "q0 0 d1 1\nq1 0 d2 1\nq2 0 d0 1\n"


def calls(directory: Path) -> dict[str, Callable[[], Any]]:
    """One small call of each function of the core."""
    run_path, qrels_path = directory / "run.trec", directory / "qrels.txt"
    run_path.write_text(RUN)
    qrels_path.write_text(QRELS)
    run, qrels = fanfuse.read_run(str(run_path)), fanfuse.read_qrels(str(qrels_path))
    table = pa.table({"qid": ["q0", "q0"], "docid": ["a", "b"], "score": [2.0, 1.0]})
    qrels_table = pa.table({"qid": ["q0"], "docid": ["a"], "relevance": [1]})
    return {
        "default_threads": core.default_threads,
        "evaluate": lambda: core.evaluate(run, qrels, metrics=["ndcg@10"]),
        "fuse": lambda: core.fuse([[("a", 1.0)], [("b", 2.0)]]),
        "fuse_batch": lambda: core.fuse_batch([[[("a", 1.0)], [("b", 2.0)]]]),
        "fuse_files": lambda: core.fuse_files([str(run_path), str(run_path)], None),
        "fuse_runs": lambda: core.fuse_runs([run, run]),
        "fuse_tables": lambda: core.fuse_tables([table, table], names=["a", "b"]),
        "metric_depth": lambda: core.metric_depth("ndcg@10"),
        "paired_t": lambda: core.paired_t([0.1, 0.5, 0.2], [0.3, 0.4, 0.9]),
        "qrels_from_table": lambda: core.qrels_from_table(qrels_table),
        "randomization_test": lambda: core.randomization_test([0.1, 0.5], [0.3, 0.4]),
        "read_qrels": lambda: core.read_qrels(str(qrels_path)),
        "read_run": lambda: core.read_run(str(run_path)),
        "rrf": lambda: core.rrf([["a", "b"], ["b"]]),
        "rrf_batch": lambda: core.rrf_batch([[["a", "b"], ["b"]]]),
        "runs_from_table": lambda: core.runs_from_table(table),
        "train_fusion": lambda: core.train_fusion([run, run], qrels, method="probfuse"),
        "tukey_hsd": lambda: core.tukey_hsd([[0.1, 0.5, 0.2], [0.3, 0.4, 0.9]]),
        "wilcoxon_test": lambda: core.wilcoxon_test([0.1, 0.5, 0.2], [0.3, 0.4, 0.9]),
    }


def outcome(result: Any) -> str:
    """What a call gave, comparable across calls (a Qrels has no repr of its content)."""
    return repr(result.qids() if isinstance(result, fanfuse.Qrels) else result)


def core_functions() -> list[str]:
    return sorted(
        name
        for name in dir(core)
        if not name.startswith("_")
        and callable(getattr(core, name))
        and not isinstance(getattr(core, name), type)
    )


def test_every_function_of_the_core_is_called(tmp_path: Path) -> None:
    assert sorted(calls(tmp_path)) == core_functions()


@pytest.mark.parametrize("name", core_functions())
def test_a_progress_callback_may_call_any_function_of_the_core(name: str, tmp_path: Path) -> None:
    call = calls(tmp_path)[name]
    expected = outcome(call())
    seen: list[str] = []

    def progress(bytes_read: int, bytes_total: int, queries: int) -> None:
        seen.append(outcome(call()))

    out = tmp_path / "fused.trec"
    summary = core.fuse_files([str(tmp_path / "run.trec")] * 2, str(out), progress=progress)
    assert summary["queries"] == 3 and out.exists()
    assert seen and set(seen) == {expected}  # the last poll before the output is committed, at least


def test_a_signal_handler_may_call_the_core_while_it_works(tmp_path: Path) -> None:
    big = tmp_path / "big.trec"
    big.write_text("".join(f"q{q} Q0 d{d} {d + 1} {100 - d} t\n" for q in range(30_000) for d in range(10)))
    fused: list[list[str]] = []

    def handler(signum: int, frame: object) -> None:
        fused.append(fanfuse.rrf([["a", "b"], ["b"]]).ids)

    previous = signal.signal(signal.SIGALRM, handler)
    try:
        signal.setitimer(signal.ITIMER_REAL, 0.01, 0.01)  # again and again, while the core reads
        summary = core.fuse_files([str(big)] * 2, str(tmp_path / "fused.trec"))
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    assert summary["queries"] == 30_000
    assert fused and all(ids == ["b", "a"] for ids in fused)
