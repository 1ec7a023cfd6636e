"""Where a run's ranks come from is a setting of every entry point that reads a run file: each
command with a run input (from the parsers) takes ``--rank-from`` and reads its runs by it, and each
public function that reads runs from paths takes ``rank_from``. A run without scores (a Parquet
table of ranks) is read by every one of them when told to, and each refusal of it names the
command's own flag."""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path

import fanfuse
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from fanfuse import RANK_SOURCES, compare
from fanfuse.cli import main
from fanfuse.cli.paths import INPUT, path_actions
from fanfuse.errors import InvalidSetting
from fanfuse.tables import evaluate_table, read_any_run
from test_api_numbers import entry_points
from test_cli_flags import commands

ENGINES = ["process", "dask"]
# The rest of each command's arguments after its run files, for a command that reads runs: a new
# such command fails `test_every_run_command_is_run_here` until it is listed.
REST = {
    "fuse": lambda tmp: ["-o", str(tmp / "fused.trec")],
    "eval": lambda tmp: ["--qrels", str(tmp / "qrels.txt")],
    "tune": lambda tmp: ["--qrels", str(tmp / "qrels.txt"), "--folds", "2"],
}


def run_commands() -> dict[str, argparse.ArgumentParser]:
    return {
        name: parser
        for name, parser in commands().items()
        if any(role == INPUT and kind == "run" for _, role, kind in path_actions(parser))
    }


def test_every_run_command_is_run_here() -> None:
    assert set(run_commands()) == set(REST)


@pytest.mark.parametrize("command", sorted(REST))
def test_the_command_takes_rank_from(command: str) -> None:
    (action,) = (a for a in run_commands()[command]._actions if "--rank-from" in a.option_strings)
    assert tuple(action.choices or ()) == RANK_SOURCES
    assert action.default == "score"


@pytest.fixture(params=["parquet", "mtrag"])
def ranked_only(request: pytest.FixtureRequest, tmp_path: Path) -> list[str]:
    """Two runs without scores, in ranks (a Parquet rank column, MT-RAG contexts in order), and the
    qrels."""
    paths = []
    for name, docids in (("a", ["d1", "d2", "d3", "d4"]), ("b", ["d3", "d1", "d4", "d2"])):
        path = tmp_path / f"{name}.{'parquet' if request.param == 'parquet' else 'jsonl'}"
        if request.param == "parquet":
            qids = [q for q in ("1", "2", "3", "4") for _ in range(4)]
            table = pa.table({"qid": qids, "docid": docids * 4, "rank": [1, 2, 3, 4] * 4})
            pq.write_table(table, path)
        else:
            contexts = [{"document_id": d} for d in docids]
            lines = [json.dumps({"task_id": q, "Collection": "c", "contexts": contexts}) for q in "1234"]
            path.write_text("\n".join(lines) + "\n")
        paths.append(str(path))
    (tmp_path / "qrels.txt").write_text("".join(f"{q} 0 d1 1\n{q} 0 d3 1\n" for q in "1234"))
    return paths


@pytest.mark.parametrize("command", sorted(REST))
def test_the_command_reads_ranks_when_told(
    command: str, ranked_only: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = [command, *ranked_only, *REST[command](tmp_path)]
    assert main([*argv, "--rank-from", "rank"]) == 0
    capsys.readouterr()
    assert main(argv) == 2
    error = capsys.readouterr().err
    assert "no score column" in error or "has no score" in error
    assert "--rank-from 'rank'" in error and "rank_from" not in error


def test_every_function_reading_runs_from_files_or_tables_takes_rank_from() -> None:
    """A run given as a path or a table (anything but a ``Run``, which was read already, or a list
    of one query's hits) is read by the function, so the function says where its ranks come from."""
    read_here = ("runs", "inputs", "run")
    readers = [
        name
        for name, params in entry_points()
        if any(
            p in read_here and a not in ("Run", "Sequence[Run]", "Iterable[_Run]") for p, a in params.items()
        )
        or name in ("read_run", "tables.read_any_run", "tables.read_parquet_run")
    ]
    assert {"compare", "fuse_files", "evaluate_table", "fuse_table", "dask.fuse_runs"} <= set(readers)
    assert [name for name in readers if "rank_from" not in dict(entry_points())[name]] == []


def test_compare_reads_ranks_when_told(ranked_only: list[str], tmp_path: Path) -> None:
    qrels = str(tmp_path / "qrels.txt")
    report = compare(ranked_only, qrels, ["ndcg@10"], rank_from="rank")
    assert [len(run.values["ndcg@10"]) for run in report.scores] == [4, 4]
    with pytest.raises(Exception, match="rank_from='rank'"):
        compare(ranked_only, qrels, ["ndcg@10"])


def test_compare_refuses_an_unknown_source_when_no_path_is_read(
    ranked_only: list[str], tmp_path: Path
) -> None:
    loaded = [read_any_run(path, rank_from="rank") for path in ranked_only]
    with pytest.raises(InvalidSetting, match="rank_from"):
        compare(loaded, str(tmp_path / "qrels.txt"), ["ndcg@10"], rank_from="bogus")  # type: ignore[arg-type]


@pytest.mark.parametrize("rank_from", RANK_SOURCES)
def test_evaluation_reads_a_run_in_the_order_its_ranks_came_from(tmp_path: Path, rank_from: str) -> None:
    # The file order, the rank column and the scores each put another document first; only d1 is
    # relevant, so P@1 says which order the evaluation read.
    run = tmp_path / "a.run"
    run.write_text("q1 Q0 d2 2 1.0 a\nq1 Q0 d1 1 0.5 a\nq1 Q0 d3 3 0.1 a\n")
    (tmp_path / "qrels.txt").write_text("q1 0 d1 1\n")
    qrels = fanfuse.read_qrels(str(tmp_path / "qrels.txt"))
    first = {"score": "d2", "rank": "d1", "file": "d2"}[rank_from]
    _, values = fanfuse.evaluate(fanfuse.read_run(str(run), rank_from=rank_from), qrels, metrics=["P@1"])
    assert values["P@1"] == [1.0 if first == "d1" else 0.0]


def test_a_run_without_scores_is_evaluated_in_its_row_order(tmp_path: Path) -> None:
    table = pa.table({"qid": ["1", "1", "1"], "docid": ["a", "c", "b"]})
    pq.write_table(table, tmp_path / "rows.parquet")
    (tmp_path / "qrels.txt").write_text("1 0 a 1\n")
    qrels = fanfuse.read_qrels(str(tmp_path / "qrels.txt"))
    run = read_any_run(str(tmp_path / "rows.parquet"), rank_from="file")
    _, values = fanfuse.evaluate(run, qrels, metrics=["P@1", "recip_rank"])
    assert values == {"P@1": [1.0], "recip_rank": [1.0]}  # a first, as the rows say; not docid order


@pytest.mark.parametrize("engine", ENGINES)
def test_eval_on_either_engine_reads_ranks_as_told(
    engine: str, ranked_only: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The distributed engine evaluates as one process does: the same numbers for each source of
    ranks, and runs without scores where ranks come from the rank column or the file order."""
    if engine == "dask":
        pytest.importorskip("dask")
    qrels = str(tmp_path / "qrels.txt")
    printed = {}
    for rank_from in ("rank", "file"):
        argv = ["eval", *ranked_only, "--qrels", qrels, "--format", "csv", "--rank-from", rank_from]
        assert main([*argv, "--engine", engine]) == 0
        printed[rank_from] = capsys.readouterr().out
        assert main(argv) == 0
        assert capsys.readouterr().out == printed[rank_from]  # the process engine's numbers


def test_evaluate_table_reads_a_table_without_scores_when_told(
    ranked_only: list[str], tmp_path: Path
) -> None:
    if not ranked_only[0].endswith(".parquet"):
        pytest.skip("a table: the Parquet runs")
    qrels = fanfuse.read_qrels(str(tmp_path / "qrels.txt"))
    table = pq.read_table(ranked_only[1])
    values = evaluate_table(table, qrels, ["P@1"], rank_from="rank")
    expected = fanfuse.evaluate(read_any_run(ranked_only[1], rank_from="rank"), qrels, metrics=["P@1"])[1]
    assert values.column("P@1").to_pylist() == expected["P@1"]
    with pytest.raises(fanfuse.FusionError, match="rank_from='rank' or 'file'"):
        evaluate_table(table, qrels, ["P@1"])


@pytest.mark.parametrize(
    "argv",
    [
        ["fuse", "-o", "fused.trec"],
        ["fuse", "-o", "fused.trec", "--engine", "dask"],
        ["tune", "--folds", "2"],
    ],
    ids=" ".join,
)
def test_a_score_method_over_runs_without_scores_names_the_run(
    argv: list[str], ranked_only: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Every route that fuses run files refuses a score method over a run without scores naming the
    run's file, with what to do on the command line (not Python's ways to pass scores)."""
    if "dask" in argv:
        pytest.importorskip("dask")
    command, *rest = argv
    rest = [str(tmp_path / word) if word == "fused.trec" else word for word in rest]
    qrels = ["--qrels", str(tmp_path / "qrels.txt")] if command == "tune" else []
    code = main([command, *ranked_only, *rest, *qrels, "--rank-from", "rank", "--method", "combsum"])
    error = capsys.readouterr().err
    assert code == 2, error
    # The run as its command names it: the path given (fuse), or the name of the run read (tune).
    said = "has no scores but --method 'combsum' fuses scores; give the run its scores"
    assert f"{Path(ranked_only[0]).name} {said}" in error
    assert "(id, score) pairs" not in error
    assert not (tmp_path / "fused.trec").exists()


def test_the_library_names_the_run_too(ranked_only: list[str], tmp_path: Path) -> None:
    runs = [read_any_run(path, rank_from="rank") for path in ranked_only]
    with pytest.raises(fanfuse.FusionError, match=f"{re.escape(runs[0].name)} has no scores"):
        fanfuse.fuse_runs(runs, method="combsum")
    if ranked_only[0].endswith(".jsonl"):  # fuse_files reads text files; a table goes in as a Run
        with pytest.raises(fanfuse.FusionError, match=f"{re.escape(ranked_only[0])} has no scores"):
            fanfuse.fuse_files(ranked_only, str(tmp_path / "out.trec"), method="combsum", rank_from="rank")
