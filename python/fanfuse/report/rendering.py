"""The renderings of a comparison report (``fanfuse.report.Report``): terminal table, Markdown,
LaTeX, CSV (one row per run and metric) and JSON. Markdown and LaTeX set each metric's best mean in
bold; LaTeX's markers need the amssymb package (``\\blacktriangle``)."""

from __future__ import annotations

import csv
import io
import json
import math
from collections.abc import Callable, Sequence
from typing import Any, Literal, get_args

from fanfuse.limits import check_choice
from fanfuse.report.data import ReportData

#: The renderings of a report, each a method of ``Report`` too (``to_markdown``, ...).
ReportFormat = Literal["table", "markdown", "latex", "csv", "json"]
FORMATS: tuple[ReportFormat, ...] = get_args(ReportFormat)

CSV_FIELDS = (
    "run",
    "metric",
    "mean",
    "baseline_mean",
    "queries",
    "statistic",
    "p_value",
    "adjusted_p_value",
    "significant",
    "marker",
    "wins",
    "ties",
    "losses",
)


def render(report: ReportData, format: ReportFormat) -> str:
    """`report` in `format`, one of `FORMATS`."""
    return _RENDERERS[check_choice("format", format, FORMATS)](report)


def table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """A plain-text table: first column left-aligned, the others right-aligned."""
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]

    def line(cells: Sequence[str]) -> str:
        return "  ".join(
            c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(cells, widths, strict=False))
        )

    return "\n".join([line(header), "  ".join("-" * w for w in widths), *(line(r) for r in rows)])


def _finite(value: float) -> float | None:
    """JSON has no infinity or NaN (a t statistic of equal non-zero differences is infinite)."""
    return value if math.isfinite(value) else None


def as_dict(report: ReportData) -> dict[str, Any]:
    return {
        "metrics": report.metrics,
        "baseline": report.names[report.baseline],
        "test": report.test,
        "correction": report.correction,
        "alpha": report.alpha,
        "legend": report.legend(),
        "runs": [{"run": s.name, "queries": len(s.qids), "means": s.means} for s in report.scores],
        "comparisons": [
            {
                **{f: getattr(c, f) for f in CSV_FIELDS if f not in ("marker", "statistic")},
                "statistic": _finite(c.statistic),
                "marker": c.marker,
            }
            for c in report.comparisons
        ],
    }


def _mean_cell(report: ReportData, run: str, metric: str, mean: float, *, with_p: bool) -> str:
    found = report.comparison(run, metric)
    if found is None:
        return f"{mean:.4f}"
    cell = f"{mean:.4f}{found.marker}"
    return f"{cell} p={found.adjusted_p_value:.3g}" if with_p else cell


def _rows(report: ReportData, cell: Callable[[str, str, float], str]) -> list[list[str]]:
    return [
        [
            report.label(i),
            *(cell(s.name, m, s.means[m]) for m in report.metrics),
        ]
        for i, s in enumerate(report.scores)
    ]


def _wtl_rows(report: ReportData) -> list[list[str]]:
    rows = []
    for i, s in enumerate(report.scores):
        if i == report.baseline:
            continue
        found = [report.comparison(s.name, m) for m in report.metrics]
        rows.append([s.name, *(f"{c.wins}/{c.ties}/{c.losses}" for c in found if c is not None)])
    return rows


def _best(report: ReportData, metric: str) -> float:
    return max(s.means[metric] for s in report.scores)


def _table(report: ReportData) -> str:
    header = ["run", "queries", *report.metrics]
    rows = [
        [row[0], str(len(s.qids)), *row[1:]]
        for row, s in zip(
            _rows(report, lambda r, m, v: _mean_cell(report, r, m, v, with_p=True)),
            report.scores,
            strict=True,
        )
    ]
    parts = [table(header, rows)]
    if report.comparisons:
        parts += ["", table(["W/T/L", *report.metrics], _wtl_rows(report))]
    return "\n\n".join(filter(None, ["\n".join(parts), report.legend()])) + "\n"


# What Markdown (CommonMark and GitHub's tables) reads as markup inside a table cell: the escape
# itself, code, emphasis and strikethrough, links and images, HTML and autolinks, entities, math, and
# the cell separator. Each is written backslash-escaped, which every renderer shows as the character.
MARKDOWN_ACTIVE = frozenset("\\`*_[]<>&~$|")


def _markdown_escape(text: str) -> str:
    """A run or metric name as a Markdown table cell shows it: each character Markdown would read as
    markup escaped, a line break (which would end the row) written as ``<br>``."""
    escaped = "".join(f"\\{char}" if char in MARKDOWN_ACTIVE else char for char in text)
    return "<br>".join(escaped.replace("\r\n", "\n").replace("\r", "\n").split("\n"))


def _markdown(report: ReportData) -> str:
    """The tables and the legend; the names are escaped, the cells of numbers (bold where best) are
    markup of their own."""

    def cell(run: str, metric: str, mean: float) -> str:
        text = _mean_cell(report, run, metric, mean, with_p=False)
        return f"**{text}**" if mean == _best(report, metric) else text

    def grid(header: list[str], rows: list[list[str]]) -> list[str]:
        lines = [
            "| " + " | ".join(_markdown_escape(h) for h in header) + " |",
            "|" + "|".join(["---"] + ["---:"] * (len(header) - 1)) + "|",
        ]
        return lines + ["| " + " | ".join([_markdown_escape(row[0]), *row[1:]]) + " |" for row in rows]

    lines = grid(["run", *report.metrics], _rows(report, cell))
    if report.comparisons:
        lines += ["", *grid(["W/T/L", *report.metrics], _wtl_rows(report))]
    legend = report.legend(_markdown_escape)
    return "\n\n".join(filter(None, ["\n".join(lines), legend])) + "\n"


LATEX_SPECIAL = {
    "\\": r"\textbackslash{}",
    "&": r"\&",
    "%": r"\%",
    "$": r"\$",
    "#": r"\#",
    "_": r"\_",
    "{": r"\{",
    "}": r"\}",
    "~": r"\textasciitilde{}",
    "^": r"\textasciicircum{}",
    # Shown as other glyphs (¡, ¿, —) by LaTeX's default font encoding.
    "<": r"\textless{}",
    ">": r"\textgreater{}",
    "|": r"\textbar{}",
}


def _latex_escape(text: str) -> str:
    """`text` in LaTeX's text mode: each special character escaped, each line break the space LaTeX
    reads a single one as (two would end the paragraph, and a table's cell with it)."""
    flat = text.replace("\r\n", " ").replace("\r", " ").replace("\n", " ")
    return "".join(LATEX_SPECIAL.get(char, char) for char in flat)


def _latex(report: ReportData) -> str:
    markers = {"▲": r"$^{\blacktriangle}$", "▼": r"$^{\blacktriangledown}$", "": ""}

    def cell(run: str, metric: str, mean: float) -> str:
        found = report.comparison(run, metric)
        text = f"{mean:.4f}"
        if mean == _best(report, metric):
            text = rf"\textbf{{{text}}}"
        return text + (markers[found.marker] if found else "")

    def tabular(header: list[str], rows: list[list[str]], escape_cells: bool) -> list[str]:
        lines = [r"\begin{tabular}{l" + "r" * (len(header) - 1) + "}", r"\toprule"]
        lines.append(" & ".join(_latex_escape(h) for h in header) + r" \\")
        lines.append(r"\midrule")
        for row in rows:
            cells = [_latex_escape(row[0]), *(_latex_escape(c) if escape_cells else c for c in row[1:])]
            lines.append(" & ".join(cells) + r" \\")
        return [*lines, r"\bottomrule", r"\end{tabular}"]

    lines = [
        r"% needs \usepackage{booktabs,amssymb}",
        *tabular(["Run", *report.metrics], _rows(report, cell), False),
    ]
    if report.comparisons:
        lines += ["", *tabular(["W/T/L", *report.metrics], _wtl_rows(report), True)]
    legend = report.legend().replace("▲/▼", r"$\blacktriangle$/$\blacktriangledown$")
    # A comment, line by line: a line break in the baseline's name must not end it.
    return "\n".join([*lines, *("% " + line for line in legend.splitlines())]) + "\n"


def _csv(report: ReportData) -> str:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(CSV_FIELDS)
    for i, s in enumerate(report.scores):
        for m in report.metrics:
            found = report.comparison(s.name, m)
            if i == report.baseline or found is None:
                writer.writerow([s.name, m, repr(s.means[m]), repr(s.means[m]), len(s.qids), *[""] * 8])
                continue
            writer.writerow(
                [
                    repr(getattr(found, f)) if isinstance(getattr(found, f), float) else getattr(found, f)
                    for f in CSV_FIELDS
                ]
            )
    return out.getvalue()


def _json(report: ReportData) -> str:
    return json.dumps(as_dict(report), indent=2, ensure_ascii=False) + "\n"


_RENDERERS: dict[ReportFormat, Callable[[ReportData], str]] = {
    "table": _table,
    "markdown": _markdown,
    "latex": _latex,
    "csv": _csv,
    "json": _json,
}
