"""The plot of a comparison report: one column per metric; on top the mean of every run with its 95%
confidence interval (normal approximation: mean +- 1.96 standard errors over the run's evaluated
queries) and the significance markers, below the per-query differences from the baseline, sorted,
one line per run. Written as PNG, PDF or SVG, as the name of the file says (``IMAGE_FORMATS``). Needs
matplotlib (``pip install fanfuse[plot]``), imported only here."""

from __future__ import annotations

import io
import math
import os
from statistics import NormalDist
from typing import Literal, get_args

from fanfuse.errors import MissingExtra
from fanfuse.limits import check_choice
from fanfuse.output_guard import OutputFile
from fanfuse.report.data import ReportData

CONFIDENCE = 0.95
# The formats of a plot, by the suffix of its file's name (in any case); a name without one of them
# gets PNG. Dates are left out of the files, so that the same report gives the same bytes.
ImageFormat = Literal["png", "pdf", "svg"]
IMAGE_KINDS: tuple[ImageFormat, ...] = get_args(ImageFormat)
IMAGE_FORMATS: dict[str, ImageFormat] = {f".{kind}": kind for kind in IMAGE_KINDS}
_NO_DATE = {"png": {}, "pdf": {"CreationDate": None}, "svg": {"Date": None}}


def half_width(values: list[float]) -> float:
    """Half the width of the normal-approximation confidence interval of the mean of `values`."""
    n = len(values)
    if n < 2:
        return 0.0
    mean = sum(values) / n
    sd = math.sqrt(sum((v - mean) ** 2 for v in values) / (n - 1))
    return NormalDist().inv_cdf(0.5 + CONFIDENCE / 2) * sd / math.sqrt(n)


def image_format(path: str | os.PathLike[str]) -> ImageFormat:
    """The format of the plot a file of this name holds (``IMAGE_FORMATS``)."""
    name = os.fspath(path).lower()
    return next((kind for suffix, kind in IMAGE_FORMATS.items() if name.endswith(suffix)), "png")


def plot(report: ReportData, path: str | os.PathLike[str]) -> None:
    """Writes the plot to `path` through the output guard, in the format its name says."""
    data = image(report, image_format(path))
    with OutputFile(path) as stream:
        stream.write(data)


def image(report: ReportData, kind: ImageFormat = "png") -> bytes:
    """The plot as the bytes of an image file of `kind`, one of IMAGE_KINDS."""
    check_choice("kind", kind, IMAGE_KINDS)
    try:
        import matplotlib

        matplotlib.use("Agg")  # files only: no display needed
        import matplotlib.pyplot as plt
        from matplotlib.patches import Patch
    except ImportError:
        raise MissingExtra("--plot needs matplotlib (pip install 'fanfuse[plot]')", extra="plot") from None
    metrics, names = report.metrics, report.names
    columns = len(metrics)
    # A report of one run compares nothing: no panel of differences from a baseline.
    rows = 2 if report.compared else 1
    figure, axes = plt.subplots(rows, columns, figsize=(3.2 * columns + 1, 3.5 * rows - 0.5), squeeze=False)
    colours = [f"C{i % 10}" for i in range(len(names))]
    base = report.scores[report.baseline]
    base_by_query = [dict(zip(base.qids, base.values[m], strict=True)) for m in metrics]
    for col, metric in enumerate(metrics):
        top = axes[0][col]
        means = [s.means[metric] for s in report.scores]
        errors = [half_width(s.values[metric]) for s in report.scores]
        bars = top.bar(range(len(names)), means, yerr=errors, capsize=3, color=colours)
        for i, bar in enumerate(bars):
            found = report.comparison(names[i], metric)
            if found is not None and found.marker:
                top.annotate(
                    found.marker,
                    (bar.get_x() + bar.get_width() / 2, means[i] + errors[i]),
                    ha="center",
                    va="bottom",
                )
        top.set_title(metric)
        top.set_xticks(range(len(names)), [str(i) for i in range(len(names))])
        top.set_xlabel("run")
        if col == 0:
            top.set_ylabel(f"mean, {CONFIDENCE:.0%} CI")
        if not report.compared:
            continue
        bottom = axes[1][col]
        bottom.axhline(0.0, color="black", linewidth=0.8)
        for i, s in enumerate(report.scores):
            if i == report.baseline:
                continue
            deltas = sorted(
                (
                    v - base_by_query[col][q]
                    for q, v in zip(s.qids, s.values[metric], strict=True)
                    if q in base_by_query[col]
                ),
                reverse=True,
            )
            bottom.plot(range(len(deltas)), deltas, color=colours[i], linewidth=1.2)
        bottom.set_xlabel("queries, sorted by difference")
        if col == 0:
            bottom.set_ylabel(f"run - baseline ({report.baseline})")
    handles = [Patch(color=colours[i]) for i in range(len(names))]
    labels = [f"{i}: {report.label(i)}" for i in range(len(names))]
    figure.legend(
        handles, labels, loc="lower center", ncol=min(3, len(names)), fontsize="small", frameon=False
    )
    figure.tight_layout(rect=(0, 0.04 + 0.03 * math.ceil(len(names) / 3), 1, 1))
    written = io.BytesIO()
    try:
        # SVG's ids are salted at random unless a salt is given.
        with matplotlib.rc_context({"svg.hashsalt": "fanfuse"}):
            # The figure's legend sits outside the axes that the layout fits: the image grows to
            # hold it, so a long run name is never cut at the edge.
            figure.savefig(
                written, format=kind, dpi=110, metadata=_NO_DATE[kind], bbox_inches="tight", pad_inches=0.1
            )
    finally:
        plt.close(figure)
    return written.getvalue()
