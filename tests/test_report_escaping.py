"""Run and metric names reach every format of a report as themselves: Markdown escapes each character
it would read as markup inside a table cell (emphasis, code, links, HTML, the cell separator, a line
break), LaTeX its special characters and those its default fonts show as other glyphs (`<`, `>`, `|`),
a line break as the space LaTeX reads it as, and the plain formats keep them as they are. Each format of
fanfuse.report.FORMATS is read back here and must give the names."""

from __future__ import annotations

import csv
import io
import json
import re

import pytest
from fanfuse.report import FORMATS, Report, compare_scores
from fanfuse.report.rendering import LATEX_SPECIAL
from fanfuse.run_scores import with_means

# Names that hold every character Markdown reads inside a table cell, line breaks (in the baseline's
# name too, which the legend repeats), and names with none.
RUNS = ["bm25_rm3*k1|b`0.4`\nv2", "<b>dense</b> [v2](x) ~a~ &amp; $x$ \\*", "a\nbreak\n\nend", "plain.trec"]
METRICS = ["ndcg_cut_10", "P_5", "m*|`[x]"]
# What Markdown reads inside a table cell: emphasis, code, links, autolinks and HTML, entities,
# strikethrough, math, the cell separator, the escape itself. A line break is written <br>.
ACTIVE = set("\\`*_[]<>|~&$")
# What LaTeX's text mode does not show as itself: its special characters, and `<`, `>`, `|`, which its
# default (OT1) fonts show as other glyphs; a line break in a cell, a blank line among them, is markup too.
LATEX_ACTIVE = set("\\&%$#_{}~^<>|\r\n")
NUMBER = re.compile(r"\*\*\d\.\d{4}[▲▼]?\*\*|\d\.\d{4}[▲▼]?|\d+/\d+/\d+")


def report() -> Report:
    qids = ["q1", "q2", "q3"]
    scores = [
        with_means(name, qids, {m: [0.1 * (i + 1), 0.5, 0.2 + 0.1 * j] for j, m in enumerate(METRICS)})
        for i, name in enumerate(RUNS)
    ]
    return compare_scores(scores, METRICS, correction="none", alpha=0.9)


def split_row(line: str) -> list[str]:
    """The cells of a row of a GFM table as written, split at the unescaped pipes."""
    assert line.startswith("| ") and line.endswith(" |"), line
    cells, cell, escaped = [], "", False
    for char in line[2:-2]:
        if char == "|" and not escaped:
            cells.append(cell)
            cell = ""
        else:
            cell += char
        escaped = char == "\\" and not escaped
    return [c.strip() for c in [*cells, cell]]


def read_cell(cell: str) -> str:
    """A name as Markdown shows it; fails on any character a renderer would take as markup."""
    out, escaped = "", False
    for char in cell.replace("<br>", "\n"):
        if escaped:
            assert not char.isalnum() and char.isascii(), f"needless escape of {char!r} in {cell}"
            out, escaped = out + char, False
        elif char == "\\":
            escaped = True
        else:
            assert char not in ACTIVE, f"unescaped {char!r} in {cell}"
            out += char
    assert not escaped, cell
    return out


def read_markdown(text: str) -> tuple[list[str], list[str], str]:
    """Metric names (the header), run labels (the first column) and the legend of a Markdown report."""
    means, wins, legend = text.split("\n\n")
    lines = means.splitlines()
    header = [read_cell(cell) for cell in split_row(lines[0])]
    rows = [split_row(line) for line in lines[2:]]
    assert all(NUMBER.fullmatch(cell) for row in rows for cell in row[1:]), rows
    labels = [read_cell(row[0]) for row in rows]
    lines = wins.splitlines()
    assert [read_cell(cell) for cell in split_row(lines[0])][1:] == header[1:]
    rows = [split_row(line) for line in lines[2:]]
    assert all(NUMBER.fullmatch(cell) for row in rows for cell in row[1:]), rows
    assert [read_cell(row[0]) for row in rows] == [name for name in labels if not name.endswith("(baseline)")]
    return header[1:], labels, legend.strip()


def read_latex(text: str) -> tuple[list[str], list[str]]:
    unescape = sorted(((v, k) for k, v in LATEX_SPECIAL.items()), key=lambda pair: -len(pair[0]))

    def read(cell: str) -> str:
        out, i = "", 0
        while i < len(cell):
            found = next(((k, v) for k, v in unescape if cell.startswith(k, i)), None)
            if found:
                out, i = out + found[1], i + len(found[0])
            else:
                assert cell[i] not in LATEX_ACTIVE, f"unescaped {cell[i]!r} in {cell}"
                out, i = out + cell[i], i + 1
        return out

    body = text.split(r"\midrule")[1].split(r"\bottomrule")[0]
    header = text.split(r"\toprule")[1].split(r"\midrule")[0].strip().removesuffix(r"\\").split(" & ")
    rows = [row.split(" & ") for row in body.strip().removesuffix(r" \\").split(" \\\\\n")]
    return [read(h.strip()) for h in header[1:]], [read(r[0].strip()) for r in rows]


@pytest.mark.parametrize("form", FORMATS)
def test_every_format_gives_back_the_names(form: str) -> None:
    made = report()
    out = made.render(form)  # type: ignore[arg-type]
    labels = [made.label(i) for i in range(len(RUNS))]
    if form == "markdown":
        metrics, shown, legend = read_markdown(out)
        assert metrics == METRICS and shown == labels
        baseline = legend.split("baseline (", 1)[1].rsplit(") by the", 1)[0]
        assert read_cell(baseline) == RUNS[0]
    elif form == "latex":
        as_latex_reads = [label.replace("\n", " ") for label in labels]
        assert read_latex(out) == (METRICS, as_latex_reads)
        # The legend names the baseline in a comment: every line of it stays one.
        legend = out.split(r"\end{tabular}")[-1].strip().splitlines()
        assert legend and all(line.startswith("% ") for line in legend), legend
    elif form == "csv":
        rows = list(csv.DictReader(io.StringIO(out)))
        assert [row["run"] for row in rows] == [r for r in RUNS for _ in METRICS]
        assert [row["metric"] for row in rows] == METRICS * len(RUNS)
    elif form == "json":
        data = json.loads(out)
        assert [r["run"] for r in data["runs"]] == RUNS and data["metrics"] == METRICS
    else:
        assert form == "table"
        assert all(label in out for label in labels) and all(m in out for m in METRICS)


def test_the_markdown_bold_and_markers_stay_markup() -> None:
    out = report().to_markdown()
    assert re.search(r"\| \*\*0\.\d{4}▲?\*\* \|", out) and "▲" in out


def test_every_format_is_checked() -> None:
    assert set(FORMATS) == {"table", "markdown", "latex", "csv", "json"}
