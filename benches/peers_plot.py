"""The bar charts of docs/benchmarks.md: one per table, time per contender on a log scale."""

from __future__ import annotations

from pathlib import Path

from fanfuse.output_guard import OutputFile


def bar_chart(path: Path, rows: list[tuple[str, float]], unit: str) -> None:
    """`rows` as horizontal bars, fanfuse (the first row) highlighted; written atomically as PNG."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = [name for name, _ in rows][::-1]
    values = [value for _, value in rows][::-1]
    colours = ["#c44e52" if name.startswith("fanfuse") else "#4c72b0" for name in names]
    figure, axes = plt.subplots(figsize=(8, 0.45 * len(rows) + 1.2))
    axes.barh(names, values, color=colours)
    axes.set_xscale("log")
    axes.set_xlabel(f"{unit} (log scale; shorter is faster)")
    for y, value in enumerate(values):
        axes.text(value, y, f" {value:,.1f}", va="center", fontsize=8)
    figure.tight_layout()
    with OutputFile(path) as stream:
        figure.savefig(stream, format="png", dpi=100)
    plt.close(figure)
