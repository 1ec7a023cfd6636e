"""Parquet runs on the command line: `fanfuse fuse` on Parquet inputs writes the same bytes as on the same
runs as TREC files; `fuse -o out.parquet` holds the rows of the TREC output, is written atomically and
refuses the flags that write text; `eval` and `tune` read Parquet runs and qrels; pyarrow's absence and
bad files are one-line errors."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

import pytest
from fanfuse.cli import build_parser, main
from run_tables import generated_trec_runs, trec_table, trec_to_parquet

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    return generated_trec_runs(tmp_path_factory.mktemp("runs"), seed=31, queries=80)


def as_parquet(runs: list[str], folder: Path) -> list[str]:
    """Each run as Parquet, row for line; the second with ranx's column names."""
    return [
        trec_to_parquet(
            p, folder / f"{Path(p).stem}.parquet", **({"qid": "q_id", "docid": "doc_id"} if i else {})
        )
        for i, p in enumerate(runs)
    ]


@pytest.mark.parametrize(
    "options",
    [
        [],
        ["--method", "combmnz", "--norm", "zmuv", "--top-k", "5"],
        ["--rank-from", "file", "--weights", "1,2,0.5"],
    ],
)
def test_parquet_inputs_fuse_to_the_bytes_of_the_trec_inputs(
    runs: list[str], tmp_path: Path, options: list[str]
) -> None:
    parquet = as_parquet(runs, tmp_path)
    assert main(["fuse", *runs, "-o", str(tmp_path / "trec.out"), *options]) == 0
    assert main(["fuse", *parquet, "-o", str(tmp_path / "parquet.out"), *options]) == 0
    mixed = [parquet[0], runs[1], parquet[2]]
    assert main(["fuse", *mixed, "-o", str(tmp_path / "mixed.out"), *options]) == 0
    expected = (tmp_path / "trec.out").read_bytes()
    assert (tmp_path / "parquet.out").read_bytes() == expected
    assert (tmp_path / "mixed.out").read_bytes() == expected


def test_the_mtrag_runs_as_parquet_fuse_to_the_same_bytes(mtrag_dir: Path, tmp_path: Path) -> None:
    runs = [str(mtrag_dir / "runs_trec" / f"{r}_clapnq_lastturn.trec") for r in ("bm25", "bge", "elser")]
    parquet = [trec_to_parquet(p, tmp_path / f"{Path(p).stem}.parquet") for p in runs]
    assert main(["fuse", *runs, "-o", str(tmp_path / "trec.out")]) == 0
    assert main(["fuse", *parquet, "-o", str(tmp_path / "parquet.out")]) == 0
    assert (tmp_path / "parquet.out").read_bytes() == (tmp_path / "trec.out").read_bytes()


def per_query(rows: list[tuple[str, str, int, float]]) -> dict[str, list[tuple[str, int, str]]]:
    out: dict[str, list[tuple[str, int, str]]] = {}
    for qid, docid, rank, score in rows:
        out.setdefault(qid, []).append((docid, rank, score.hex()))
    return out


def test_parquet_output_holds_the_rows_of_the_trec_output(runs: list[str], tmp_path: Path) -> None:
    assert main(["fuse", *runs, "-o", str(tmp_path / "fused.trec"), "--top-k", "6"]) == 0
    assert main(["fuse", *runs, "-o", str(tmp_path / "fused.parquet"), "--top-k", "6"]) == 0
    trec = trec_table(tmp_path / "fused.trec").to_pydict()
    table = pq.read_table(tmp_path / "fused.parquet")
    assert table.column_names == ["qid", "docid", "rank", "score"]
    written = table.to_pydict()
    expected = per_query(list(zip(trec["qid"], trec["docid"], trec["rank"], trec["score"], strict=True)))
    got = per_query(
        list(zip(written["qid"], written["docid"], written["rank"], written["score"], strict=True))
    )
    assert got == expected
    # A fused Parquet run is itself an input: fusing it alone gives the TREC file back.
    assert (
        main(["fuse", str(tmp_path / "fused.parquet"), "-o", str(tmp_path / "again.trec"), "--rrf-k", "0.5"])
        == 0
    )


def test_a_failed_parquet_output_leaves_the_previous_file_and_no_temporary(
    runs: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "fused.parquet"
    out.write_bytes(b"previous")
    bad = tmp_path / "bad.trec"
    bad.write_text("q1 Q0 d1 1 0.5 t\nq1 Q0 d2 x 0.4 t\n", encoding="utf-8")
    assert main(["fuse", runs[0], str(bad), "-o", str(out)]) == 2

    def fail_midway(table: object, where: object, **kwargs: object) -> None:
        where.write(b"PAR1 partial")  # type: ignore[attr-defined]
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(pq, "write_table", fail_midway)
    assert main(["fuse", *runs, "-o", str(out)]) == 2
    assert capsys.readouterr().err.endswith("fused.parquet': No space left on device\n")
    assert out.read_bytes() == b"previous"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.trec", "fused.parquet"]


def test_eval_and_tune_read_parquet_runs_and_qrels(
    runs: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rows = trec_table(runs[0]).to_pydict()
    judged = {(q, d): i % 3 for i, (q, d) in enumerate(zip(rows["qid"], rows["docid"], strict=True))}
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("".join(f"{q} 0 {d} {r}\n" for (q, d), r in judged.items()), encoding="utf-8")
    qrels_parquet = tmp_path / "qrels.parquet"
    keys = list(judged)
    pq.write_table(
        pa.table(
            {"qid": [q for q, _ in keys], "docid": [d for _, d in keys], "relevance": list(judged.values())}
        ),
        qrels_parquet,
    )
    parquet = as_parquet(runs, tmp_path)
    reports = []
    for files, qrels_file in [(runs, qrels), (parquet, qrels_parquet)]:
        assert main(["eval", *files, "--qrels", str(qrels_file), "--json"]) == 0
        report = json.loads(capsys.readouterr().out)
        reports.append([{k: v for k, v in r.items() if k != "run"} for r in report["runs"]])
        assert main(["tune", *files[:2], "--qrels", str(qrels_file), "--json", "--ks", "10,60"]) == 0
        reports.append(json.loads(capsys.readouterr().out))
    assert reports[0] == reports[2] and reports[1] == reports[3]


def fuse_choices(flag: str) -> list[str]:
    parser = build_parser("fuse")
    (commands,) = (a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    (action,) = (a for a in commands.choices["fuse"]._actions if flag in a.option_strings)
    assert action.choices is not None and action.default in action.choices
    return [choice for choice in action.choices if choice != action.default]


# Every choice of the flags that decide what is written, other than the one Parquet output takes.
TEXT_ONLY = [[flag, choice] for flag in ("--engine", "--run-format") for choice in fuse_choices(flag)]


@pytest.mark.parametrize("flags", TEXT_ONLY, ids=" ".join)
def test_a_parquet_output_refuses_the_choices_that_write_text(
    runs: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str], flags: list[str]
) -> None:
    out = tmp_path / "fused.parquet"
    assert main(["fuse", *runs, "-o", str(out), *flags]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"{flags[0]} {flags[1]}" in err and "Parquet" in err, err
    assert not out.exists()


@pytest.mark.parametrize(
    ("columns", "message"),
    [
        (
            {"qid": ["q"], "docid": ["d"], "score": ["high"]},
            "bad.parquet: column 'score' has Arrow type utf8",
        ),
        (
            {"qid": ["q", "q", None], "docid": ["a", "b", "c"], "score": [1.0] * 3},
            "bad.parquet:3: column 'qid' is null",
        ),
        ({"query": ["q"], "docid": ["d"], "score": [1.0]}, "bad.parquet has no query id column"),
    ],
)
def test_bad_parquet_columns_are_one_line_errors(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], columns: dict[str, list[object]], message: str
) -> None:
    pq.write_table(pa.table(columns), tmp_path / "bad.parquet")
    assert main(["fuse", str(tmp_path / "bad.parquet"), "-o", str(tmp_path / "out.trec")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err, err
    assert not (tmp_path / "out.trec").exists()


def test_without_pyarrow_a_parquet_run_names_the_extra(runs: list[str], tmp_path: Path) -> None:
    parquet = trec_to_parquet(runs[0], tmp_path / "r.parquet")
    probe = (
        "import sys; sys.modules['pyarrow'] = None\n"
        "from fanfuse.cli import main\n"
        f"code = main(['fuse', {runs[0]!r}, '-o', {str(tmp_path / 'plain.trec')!r}])\n"
        "assert code == 0 and 'pyarrow' not in [m.split('.')[0] for m in sys.modules if sys.modules[m]]\n"
        f"sys.exit(main(['fuse', {parquet!r}, '-o', {str(tmp_path / 'x.trec')!r}]))"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip().splitlines()[-1] == (
        "fanfuse fuse: error: Arrow tables and Parquet runs need pyarrow: pip install 'fanfuse[arrow]'"
    )
