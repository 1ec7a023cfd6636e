"""Where a search's CPU goes, from py-spy's raw samples of `benches/profile_search.py --only MODE`.

    FANFUSE_ENCODER_THREADS=1 py-spy record --native --rate 200 --format raw -o /tmp/default.txt -- \
        .venv/bin/python benches/profile_search.py --only default
    .venv/bin/python benches/profile_table.py --rate 200 --searches 201 /tmp/default.txt /tmp/single.txt

One encoder thread keeps the model's work on the Python thread that calls it, where py-spy sees it
(onnxruntime's own threads are not Python threads). py-spy records busy samples only, so a share of
the samples is a share of CPU. Samples outside `MultiQueryRetriever.search` and its worker threads
(imports, opening the index, loading the model) are left out. A sample counts for the first
category, in the order below, whose markers are all in its stack. With `--rate` (py-spy's samples a
second) and `--searches` (how many searches the run made, the warm-up included) the table is in
milliseconds of CPU per search.
"""

from __future__ import annotations

import argparse
from collections import Counter
from pathlib import Path

# (category, markers all in the stack): the most specific first; a category may have several rows.
CATEGORIES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("encoder: the model (onnxruntime)", ("OnnxEncoder._run",)),
    ("encoder: tokenizing, pooling", ("onnx_encoder.py",)),
    ("RM3 feedback: first-pass BM25 search", ("expand/feedback.py", "TantivyRetriever.search")),
    ("RM3 feedback: terms of the documents", ("expand/feedback.py",)),
    ("history variants", ("history.py",)),
    ("content-word variant", ("expanders.py",)),
    ("content-word variant", ("words.py",)),
    ("dense feedback (re-ranking the pool)", ("retrievers/dense_feedback.py",)),
    ("dense search (scores, top k, hits)", ("retrievers/dense.py",)),
    ("BM25 searches (Tantivy)", ("tantivy_index.py",)),
    ("fusion", ("fusion.py",)),
    ("thread hand-offs and waiting", ("workers.py",)),
    ("thread hand-offs and waiting", ("fanout.py",)),
    ("thread hand-offs and waiting", ("threading.py",)),
    ("thread hand-offs and waiting", ("_portal.py",)),
    ("plan (option checks)", ("planning.py",)),
    ("the answer (hits, diagnostics)", ("retriever.py",)),
)
SEARCH_MARKERS = ("MultiQueryRetriever.search", "Workers._work")
# A thread blocked on a lock or a condition: py-spy --native may sample it as busy; it uses no CPU.
BLOCKED_MARKERS = ("PyThread_acquire_lock_timed", "pthread_cond_timedwait", "pthread_cond_wait")


def category(stack: str) -> str | None:
    if not any(marker in stack for marker in SEARCH_MARKERS):
        return None
    if any(marker in stack for marker in BLOCKED_MARKERS):
        return None
    for name, markers in CATEGORIES:
        if all(marker in stack for marker in markers):
            return name
    return "other"


def shares(path: Path) -> Counter[str]:
    counts: Counter[str] = Counter()
    for line in path.read_text(encoding="utf-8").splitlines():
        stack, _, count = line.rpartition(" ")
        name = category(stack)
        if name is not None:
            counts[name] += int(count)
    return counts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("samples", nargs="+", type=Path, help="py-spy's raw output, one file a column")
    parser.add_argument("--rate", type=float, help="py-spy's --rate")
    parser.add_argument("--searches", type=int, help="searches in each run")
    args = parser.parse_args()
    tables = {path.stem: shares(path) for path in args.samples}
    per_search = args.rate is not None and args.searches is not None
    unit = "CPU ms / search" if per_search else "% of samples"

    def cell(counts: Counter[str], name: str) -> str:
        if per_search:
            return f"{1e3 * counts[name] / args.rate / args.searches:.2f}"
        return f"{100 * counts[name] / max(sum(counts.values()), 1):.1f}"

    names = [*dict.fromkeys(name for name, _ in CATEGORIES), "other"]
    print("| where | " + " | ".join(f"{t} ({unit})" for t in tables) + " |")
    print("|---|" + "---:|" * len(tables))
    for name in sorted(names, key=lambda n: -sum(c[n] / max(sum(c.values()), 1) for c in tables.values())):
        print(f"| {name} | " + " | ".join(cell(c, name) for c in tables.values()) + " |")
    total = "total" if per_search else "samples in searches"
    print(
        f"| {total} | "
        + " | ".join(
            f"{1e3 * sum(c.values()) / args.rate / args.searches:.2f}" if per_search else str(sum(c.values()))
            for c in tables.values()
        )
        + " |"
    )


if __name__ == "__main__":
    main()
