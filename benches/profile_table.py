"""Where a search's CPU goes: the yappi stats of `benches/profile_search.py --only MODE --profile`
as a table of milliseconds of CPU per search, one column per file.

    for mode in default single; do FANFUSE_ENCODER_THREADS=1 .venv/bin/python \
        benches/profile_search.py --only $mode --profile /tmp/$mode.json; done
    .venv/bin/python benches/profile_table.py --searches 201 /tmp/default.json /tmp/single.json

Each row is the CPU time (every thread, yappi's CPU clock) spent inside the functions it names,
callees included; the rows name functions that do not call each other, and "the rest" is the
searches' process CPU time (measured by profile_search.py, under the profiler) less the rows:
planning the branches, handing them to the threads and waking them, the reports. A profiler slows
Python code more than native code, so the Python rows are inflated against the encoder's.
`TantivyRetriever.search` is the RM3 first pass, and the BM25 branch of a search of one variant.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

# (row, (file suffix, function name) of each function it sums).
ROWS: tuple[tuple[str, tuple[tuple[str, str], ...]], ...] = (
    ("encoder: the model (onnxruntime)", (("onnx_encoder.py", "OnnxEncoder._run"),)),
    ("encoder: tokenizing, pooling, checks", (("query_vectors.py", "embedded"),)),
    ("dense search (scores, top k, hits)", (("dense.py", "DenseRetriever._ranked"),)),
    ("dense feedback (re-ranking the pool)", (("dense_feedback.py", "DenseFeedback._moved"),)),
    ("BM25 search of one query (RM3's first pass)", (("tantivy_index.py", "TantivyRetriever.search"),)),
    ("RM3 feedback: terms of the documents", (("feedback.py", "FeedbackExpander._relevance_model"),)),
    ("RM3 feedback: the variant written", (("feedback.py", "FeedbackExpander._written"),)),
    ("BM25 searches of the variants", (("tantivy_index.py", "TantivyRetriever.search_batch"),)),
    ("content-word variant", (("expanders.py", "HeuristicExpander.expand"),)),
    ("history variants", (("history.py", "HistoryExpander.expand"),)),
    ("plan (option checks)", (("planning.py", "make_plan"),)),
    ("fusion", (("retriever.py", "MultiQueryRetriever._fuse"),)),
    ("the answer (hits, diagnostics)", (("retriever.py", "MultiQueryRetriever._result"),)),
)
TOTAL = "process CPU time of the searches"  # profile_search.CPU_KEY
# Rows whose functions run inside another row's: subtracted from it.
INSIDE = {
    "encoder: tokenizing, pooling, checks": "encoder: the model (onnxruntime)",
    "RM3 feedback: the variant written": "RM3 feedback: terms of the documents",
}


def cumulative(stats: dict[str, float], functions: tuple[tuple[str, str], ...]) -> float:
    """Seconds inside the functions (callees included)."""
    return sum(stats.get(f"{file}:{name}", 0.0) for file, name in functions)


def column(path: Path) -> dict[str, float]:
    stats = json.loads(path.read_text(encoding="utf-8"))
    rows = {name: cumulative(stats, functions) for name, functions in ROWS}
    for outer, inner in INSIDE.items():
        rows[outer] -= rows[inner]
    total = stats[TOTAL]
    rows["the rest: hand-offs, wake-ups, reports"] = total - sum(rows.values())
    rows["total (process CPU time, profiled)"] = total
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("stats", nargs="+", type=Path, help="profile_search.py --profile files")
    parser.add_argument("--searches", type=int, required=True, help="searches in each run")
    args = parser.parse_args()
    columns = {path.stem: column(path) for path in args.stats}
    names = list(next(iter(columns.values())))
    print("| where | " + " | ".join(f"{name} (CPU ms / search)" for name in columns) + " |")
    print("|---|" + "---:|" * len(columns))
    for name in names:
        cells = " | ".join(f"{1e3 * c[name] / args.searches:.2f}" for c in columns.values())
        print(f"| {name} | {cells} |")


if __name__ == "__main__":
    main()
