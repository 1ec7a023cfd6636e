"""Writes docs/benchmarks.md and its plots: fanfuse against every peer, all measured in this one run.

    make bench-peers          # .venv/bin/python benches/peers_report.py

Sections: one query's RRF per call in three input forms (`peer_fusion.py`), batches of queries,
whole run files fused and evaluated (`peer_runs.py`), and multi-query search end to end over the
MT-RAG clapnq passage pool (`peer_search.py`; skipped when ../shared/data/mtrag is absent). Every
contender of a table runs on the same inputs, interleaved round by round so that a busy spell of
the shared machine hits all alike; each table states the load average before and after it. The
ratio column (a contender's time over fanfuse's) is what carries over to another machine.
"""

from __future__ import annotations

import argparse
import platform
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import fanfuse

sys.path.insert(0, str(Path(__file__).resolve().parent))
import peer_fusion
import peer_runs
import peer_search
import scale_fuse
from bench_eval import generate as eval_inputs
from measuring import best_seconds, load_text, machine, versions
from peers_plot import bar_chart
from workloads import int64_query, str_query

ROOT = Path(__file__).resolve().parents[1]
PEERS = ("rankops", "ranx", "trectools", "pytrec-eval-terrier", "langchain-classic", "langchain-core",
         "llama-index-core", "haystack-ai", "numpy", "onnxruntime", "tantivy")  # fmt: skip


def table(rows: list[tuple[str, float, str]], unit: str, scale: float) -> list[str]:
    """Markdown rows: contender, time, ratio to the first row (fanfuse), agreement."""
    base = rows[0][1]
    out = [f"| contender | {unit} | x fanfuse | same ranking |", "|---|---:|---:|---|"]
    for name, seconds, agree in rows:
        ratio = seconds / base
        out.append(f"| {name} | {seconds * scale:,.1f} | {ratio:,.{1 if ratio >= 1 else 2}f} | {agree} |")
    return out


class Report:
    def __init__(self, out: Path, rounds: int) -> None:
        self.out, self.rounds, self.lines, self.plots = out, rounds, [], []

    def section(self, title: str, text: str) -> str:
        self.lines += ["", f"## {title}", "", text, ""]
        return load_text("before")

    def close_table(self, before: str, rows: list[tuple[str, float, str]], unit: str, scale: float,
                    plot: str) -> None:  # fmt: skip
        self.lines += table(rows, unit, scale)
        self.lines += ["", f"Around this table: {before}; {load_text('after')}.", ""]
        png = self.out.parent / f"benchmarks-{plot}.png"
        bar_chart(png, [(n, s * scale) for n, s, _ in rows], unit)
        self.lines.append(f"![{plot}]({png.name})")


def per_call(report: Report, queries: int) -> None:
    rng = random.Random(7)
    str_queries = [str_query(rng) for _ in range(queries)]
    int_queries = [int64_query(rng) for _ in range(queries)]
    for form in peer_fusion.FORMS:
        inputs = int_queries if form == "int64 arrays" else str_queries
        chosen = [c for c in peer_fusion.contenders() if c.form == form]
        before = report.section(
            f"Per call: {form}",
            f"One query: 4 ranked lists of 100 ids from a pool of 250, top 10; {queries} distinct queries "
            f"cycled, time per query (µs), best of {report.rounds} rounds.",
        )
        states = {c.name: [c.prepare(q) for q in inputs] for c in chosen}
        agree = {
            c.name: _yes(all(peer_fusion.rankings_agree(q, c.fuse(c.prepare(q)), c.k) for q in inputs))
            for c in chosen
        }
        calls = {c.name: _loop(c.fuse, states[c.name]) for c in chosen}
        best = best_seconds(calls, repeat=report.rounds)
        rows = [(name, best[name] / queries, agree[name]) for name in calls]
        slug = {"str ids": "str", "(id, score) pairs": "pairs", "int64 arrays": "int64"}[form]
        report.close_table(before, rows, "µs per query", 1e6, f"per-call-{slug}")


def batches(report: Report, queries: int) -> None:
    rng = random.Random(11)
    batch = [str_query(rng) for _ in range(queries)]
    pairs = [peer_fusion.scored(q) for q in batch]
    before = report.section(
        "Batches",
        f"{queries:,} queries of 4 x 100 ids, top 10 each, given to everyone as (id, score) pairs: "
        "fanfuse's `fuse_batch` (the first row, the base of the ratios) against each peer called once "
        "per query, and ranx fusing the whole batch as one Run per list (numba), with its default "
        "min-max normalisation first and with `norm=None` (RRF reads only the ranks). "
        "`rrf_batch` on str ids (one thread) is fanfuse's call for ids without scores, for reference. "
        f"Time per query (µs), best of {report.rounds} rounds.",
    )
    from ranx import Run, fuse

    ranx_runs = [Run({f"q{i}": dict(q[r]) for i, q in enumerate(pairs)}, name=f"r{r}") for r in range(4)]
    calls: dict[str, Callable[[], Any]] = {
        "fanfuse fuse_batch, (id, score) pairs": lambda: fanfuse.fuse_batch(pairs, top_k=10),
        "fanfuse rrf_batch, str ids": lambda: fanfuse.rrf_batch(batch, top_k=10, threads=1),
        "ranx fuse, one Run per list": lambda: fuse(ranx_runs, method="rrf", params={"k": 60}),
        "ranx fuse, one Run per list, norm=None": lambda: fuse(
            ranx_runs, norm=None, method="rrf", params={"k": 60}
        ),
    }
    for c in peer_fusion.contenders():
        if c.form == "(id, score) pairs" and not c.name.startswith(("fanfuse", "ranx fuse")):
            calls[f"{c.name}, a call per query"] = _loop(c.fuse, [c.prepare(q) for q in batch])
    agree = {
        name: _yes(all(peer_fusion.rankings_agree(q, f.ids) for q, f in zip(batch, fused, strict=True)))
        for name, fused in (
            ("fanfuse fuse_batch, (id, score) pairs", fanfuse.fuse_batch(pairs, top_k=10)),
            ("fanfuse rrf_batch, str ids", fanfuse.rrf_batch(batch, top_k=10)),
        )
    }
    best = best_seconds(calls, repeat=report.rounds)
    rows = [(name, best[name] / queries, agree.get(name, "per call, above")) for name in calls]
    report.close_table(before, rows, "µs per query", 1e6, "batch")


def run_files(report: Report, queries: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        paths = peer_runs.write_runs(Path(tmp), queries)
        before = report.section(
            "Run files: fusion",
            f"{scale_fuse.RUNS} TREC run files of {queries:,} queries x {scale_fuse.DOCS} hits, read and "
            f"fused by RRF (k = 60, 100 kept a query), in memory; ms, best of {report.rounds}.",
        )
        peer_runs.warm_ranx()
        engines = peer_runs.fusers(paths)
        results = {name: fuse() for name, fuse in engines.items()}
        best = best_seconds(engines, repeat=report.rounds)
        same = {
            name: "—" if name == "fanfuse" else _yes(peer_runs.runs_agree(paths, results[name]))
            for name in engines
        }
        report.close_table(before, [(n, best[n], same[n]) for n in engines], "ms", 1e3, "run-fusion")


def evaluation(report: Report, queries: int) -> None:
    run, qrels = eval_inputs(queries)
    with tempfile.TemporaryDirectory() as tmp:
        tools = peer_runs.evaluators(run, qrels, Path(tmp))
        before = report.section(
            "Run files: evaluation",
            f"A run of {queries:,} queries x 100 hits and 20 graded judgments a query; P@10, recall@10, "
            f"MAP, MRR, nDCG@10 (means); ms, best of {report.rounds}. Every tool's inputs are built "
            "outside the timing (fanfuse's Run and Qrels, pytrec_eval's RelevanceEvaluator, ranx's "
            "Qrels and Run): the time is the evaluation alone.",
        )
        means = {name: evaluate() for name, evaluate in tools.items()}
        best = best_seconds(tools, repeat=report.rounds)
        same = {n: _yes(all(abs(m[k] - means["fanfuse"][k]) < 1e-9 for k in m)) for n, m in means.items()}
        rows = [(n, best[n], same[n].replace("yes", "equal means")) for n in tools]
        report.close_table(before, rows, "ms", 1e3, "evaluation")


def search(report: Report, data: Path, questions: int) -> None:
    from search_setup import clapnq_setup

    retrievers, variants = clapnq_setup(data, questions)
    searchers = {name: make(retrievers, variants) for name, make in peer_search.CONTENDERS.items()}
    before = report.section(
        "Multi-query search end to end",
        f"The MT-RAG clapnq pool ({len(retrievers['bm25'])} passages): BM25 (Tantivy) and dense "
        f"(all-MiniLM-L6-v2, int8, exact cosine) over the same index; {len(variants)} questions, each "
        "with the same variants for everyone (the original and up to 3 from fanfuse's default "
        f"expander), {peer_search.BRANCH_K} hits per branch, top "
        f"{peer_search.TOP_K}; median ms per search over {report.rounds} rounds of all questions.",
    )
    times: dict[str, list[float]] = {name: [] for name in searchers}
    answers: dict[str, dict[str, list[str]]] = {name: {} for name in searchers}
    for _ in range(report.rounds):
        for question in variants:
            for name, run in searchers.items():
                begin = time.perf_counter()
                answers[name][question] = run(question)
                times[name].append(time.perf_counter() - begin)
    ours = answers["fanfuse"]
    same = {"fanfuse": "—"}
    for name in searchers:
        if name.startswith("LlamaIndex"):
            same[name] = _yes(answers[name] == ours)
        elif name != "fanfuse":
            shared = sum(peer_search.overlap(ours[q], answers[name][q]) for q in variants)
            same[name] = f"another contract: {shared / len(variants):.1f} of 10 shared"
    rows = [(n, statistics.median(times[n]), same[n]) for n in searchers]
    report.close_table(before, rows, "ms per search", 1e3, "search")


def machine_line() -> str:
    facts = ["a shared VM", f"Linux {platform.release()}", *versions(*PEERS), time.strftime("%Y-%m-%d")]
    return f"Machine: {machine(*facts)}."


def _loop(fuse: Callable[[Any], Any], states: list[Any]) -> Callable[[], None]:
    def run() -> None:
        for state in states:
            fuse(state)

    return run


def _yes(flag: bool) -> str:
    return "yes" if flag else "**no**"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "benchmarks.md")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--queries", type=int, default=64, help="distinct queries of the per-call tables")
    parser.add_argument("--batch", type=int, default=200, help="queries of the batch table")
    parser.add_argument("--run-queries", type=int, default=1000, help="queries of the run-file fusion")
    parser.add_argument("--eval-queries", type=int, default=10_000)
    parser.add_argument("--questions", type=int, default=30, help="questions of the end-to-end search")
    parser.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data" / "mtrag")
    args = parser.parse_args()
    report = Report(args.out, args.rounds)
    per_call(report, args.queries)
    batches(report, args.batch)
    run_files(report, args.run_queries)
    evaluation(report, args.eval_queries)
    if (args.data / "passages" / "clapnq_pool.jsonl.gz").is_file():
        search(report, args.data, args.questions)
    else:
        report.lines += ["", f"(End-to-end search skipped: no MT-RAG data at {args.data}.)"]
    header = [
        "# fanfuse against its peers",
        "",
        "Written by `make bench-peers` (`.venv/bin/python benches/peers_report.py`) in one run; do not edit "
        "by hand. Every number below is from that run, on this machine:",
        "",
        machine_line(),
        "",
        "The machine is shared with other engineers' builds and tests: absolute times move from run to "
        "run, the ratios (`x fanfuse`: a contender's time over fanfuse's in the same table) much less. "
        "\"Same ranking\" is checked on every input of the table: the peer's top ids equal fanfuse's, "
        "equal scores allowed in either order (`peer_fusion.rankings_agree`); where a peer's contract "
        "differs it says so. What each peer is given and why is in the docstrings of "
        "`benches/peer_fusion.py`, `benches/peer_runs.py` and `benches/peer_search.py`; "
        "`benches/test_peers.py` checks the agreement on small inputs in the test suite.",
    ]
    args.out.write_text("\n".join(header + report.lines) + "\n", encoding="utf-8")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
