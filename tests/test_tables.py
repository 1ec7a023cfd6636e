"""Runs as Arrow tables: `fuse_table` and `evaluate_table` give what `fanfuse fuse` / `eval` give on the
same runs as TREC files (same hits, same order, scores bit for bit), whatever the layout of the table
(one per run or one with a run column, rows in any order, string / integer / dictionary / view ids),
and bad columns are refused by name."""

from __future__ import annotations

import inspect
import json
import random
import subprocess
import sys
from pathlib import Path

import fanfuse
import pytest
from fanfuse import FusionError, fuse_files, read_qrels, read_run
from fanfuse.run_scores import score_run
from fanfuse.tables import evaluate_table, fuse_table
from generated_runs import Contexts, generated_runs, write_mtrag
from run_tables import generated_trec_runs, trec_table

pa = pytest.importorskip("pyarrow")

# One fused query: (docid, score) in written order.
Fused = dict[str, list[tuple[str, float]]]


def fused_file(path: Path) -> Fused:
    out: Fused = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        qid, _, docid, _, score, _ = line.split()
        out.setdefault(qid, []).append((docid, float(score)))
    return out


def fused_table(table: object) -> Fused:
    columns = table.to_pydict()  # type: ignore[attr-defined]
    out: Fused = {}
    for qid, docid, score in zip(columns["qid"], columns["docid"], columns["score"], strict=True):
        out.setdefault(qid, []).append((docid, score))
    ranks = columns["rank"]
    starts = [i for i, q in enumerate(columns["qid"]) if i == 0 or columns["qid"][i - 1] != q]
    assert [ranks[i] for i in starts] == [1] * len(starts)
    return out


def same_bits(a: Fused, b: Fused) -> None:
    assert a.keys() == b.keys()
    for qid in a:
        assert [(d, s.hex()) for d, s in a[qid]] == [(d, s.hex()) for d, s in b[qid]], qid


@pytest.fixture(scope="module")
def trec_runs(tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    return generated_trec_runs(tmp_path_factory.mktemp("trec_runs"), seed=13, queries=60)


@pytest.mark.parametrize(
    ("method", "options"),
    [("rrf", {}), ("combmnz", {"norm": "zmuv"}), ("rbc", {"weights": [1.0, 0.5, 2.0]})],
)
def test_fuse_table_equals_fusing_the_trec_files(
    trec_runs: list[str], tmp_path: Path, method: str, options: dict[str, object]
) -> None:
    out = tmp_path / "fused.trec"
    fuse_files(trec_runs, str(out), method=method, top_k=7, **options)  # type: ignore[arg-type]
    tables = [trec_table(p) for p in trec_runs]
    fused = fuse_table(tables, method=method, top_k=7, **options)  # type: ignore[arg-type]
    assert fused.column_names == ["qid", "docid", "rank", "score"]
    same_bits(fused_table(fused), fused_file(out))


def test_one_table_with_a_run_column_in_any_row_order(trec_runs: list[str], tmp_path: Path) -> None:
    out = tmp_path / "fused.trec"
    fuse_files(trec_runs, str(out), weights=[2.0, 1.0, 0.5])
    labels = ["bm25", "dense", "splade"]
    parts = [trec_table(p) for p in trec_runs]
    rows = [
        {**row, "run": label}
        for label, part in zip(labels, parts, strict=True)
        for row in part.to_pylist()  # type: ignore[attr-defined]
    ]
    random.Random(5).shuffle(rows)
    table = pa.Table.from_pylist(rows)
    fused = fuse_table(table, run_column="run", runs=labels, weights=[2.0, 1.0, 0.5])
    same_bits(fused_table(fused), fused_file(out))
    # The label order is the fusion order: weights follow it.
    other = fuse_table(table, run_column="run", runs=labels[::-1], weights=[2.0, 1.0, 0.5])
    assert fused_table(other) != fused_table(fused)


def test_integer_dictionary_and_view_columns_read_as_the_trec_reader_reads_them(tmp_path: Path) -> None:
    run = tmp_path / "ints.trec"
    run.write_text("7 Q0 101 1 2.5 t\n7 Q0 102 2 1.5 t\n8 Q0 101 1 0.5 t\n", encoding="utf-8")
    out = tmp_path / "fused.trec"
    fuse_files([str(run)], str(out))
    layouts = [
        {"qid": pa.array([7, 7, 8], pa.int16()), "docid": pa.array([101, 102, 101], pa.uint64())},
        {
            "qid": pa.array(["7", "7", "8"]).dictionary_encode(),
            "docid": pa.array(["101", "102", "101"], pa.string_view()),
        },
        {"qid": pa.array(["7", "7", "8"], pa.large_string()), "docid": pa.array(["101", "102", "101"])},
    ]
    for columns in layouts:
        table = pa.table({**columns, "score": pa.array([2.5, 1.5, 0.5], pa.float32())})
        same_bits(fused_table(fuse_table([table])), fused_file(out))


def test_sliced_and_chunked_tables(trec_runs: list[str], tmp_path: Path) -> None:
    table = trec_table(trec_runs[0])
    rows = table.num_rows  # type: ignore[attr-defined]
    head, tail = table.slice(0, rows // 2), table.slice(rows // 2)  # type: ignore[attr-defined]
    chunked = pa.concat_tables([head, tail])
    assert chunked.column("qid").num_chunks == 2
    whole = fused_table(fuse_table([table]))
    same_bits(fused_table(fuse_table([chunked])), whole)
    # A batch (the __arrow_c_array__ route) that starts past row 0 of its buffers.
    batch = table.combine_chunks().to_batches()[0].slice(1)  # type: ignore[attr-defined]
    assert fused_table(fuse_table([batch])) == fused_table(fuse_table([table.slice(1)]))  # type: ignore[attr-defined]


def test_pandas_and_polars_frames_go_in_through_arrow(trec_runs: list[str]) -> None:
    tables = [trec_table(p) for p in trec_runs]
    expected = fused_table(fuse_table(tables))
    same_bits(fused_table(fuse_table([t.to_pandas() for t in tables])), expected)  # type: ignore[attr-defined]
    polars = pytest.importorskip("polars")
    same_bits(fused_table(fuse_table([polars.from_arrow(t) for t in tables])), expected)


@pytest.mark.parametrize(
    ("columns", "message"),
    [
        ({"qid": ["q"], "docid": ["d"], "score": ["x"]}, "column 'score' has Arrow type utf8"),
        ({"qid": ["q"], "docid": [1.5], "score": [1.0]}, "column 'docid' has Arrow type float64"),
        ({"qid": [True], "docid": ["d"], "score": [1.0]}, "column 'qid' has Arrow type bool"),
        ({"qid": ["q", None], "docid": ["d", "e"], "score": [1.0, 2.0]}, "tables[0]:2: column 'qid' is null"),
        ({"qid": ["q"], "docid": [""], "score": [1.0]}, "tables[0]:1: column 'docid' is empty"),
        ({"qid": ["q"], "docid": ["d"], "score": [float("nan")]}, "tables[0]:1: column 'score' holds NaN"),
        ({"qid": ["q"], "document": ["d"], "score": [1.0]}, "no document id column: name it 'docid' or"),
        ({"qid": ["q"], "docid": ["d"]}, "has no score column"),
        ({"qid": ["q"], "q_id": ["q"], "docid": ["d"], "score": [1.0]}, "columns 'qid' and 'q_id'"),
        ({"qid": ["q", "q"], "docid": ["d", "d"], "score": [1.0, 2.0]}, "document 'd' appears twice"),
    ],
)
def test_bad_columns_are_named(columns: dict[str, list[object]], message: str) -> None:
    with pytest.raises(FusionError) as error:
        fuse_table([pa.table(columns)])
    assert message in str(error.value)


def test_run_labels_must_be_given_and_known() -> None:
    table = pa.table({"run": ["a", "b"], "qid": ["q", "q"], "docid": ["d", "e"], "score": [1.0, 2.0]})
    with pytest.raises(FusionError, match=r"give the run labels in fusion order"):
        fuse_table(table, run_column="run")
    with pytest.raises(FusionError, match=r"table:2: column 'run' holds run label 'b', which is not in"):
        fuse_table(table, run_column="run", runs=["a"])
    with pytest.raises(FusionError, match=r"has no run label column: name it 'system'"):
        fuse_table(table, run_column="system", runs=["a"])
    # A label of `runs` that the table (a partition) lacks is a run without queries.
    lone = fuse_table(table, run_column="run", runs=["a", "b", "c"])
    assert lone.num_rows == 2
    with pytest.raises(TypeError, match=r"must be an Arrow table"):
        fuse_table([{"qid": ["q"]}])
    with pytest.raises(
        TypeError, match=r"a sequence of tables \(one run each\), or one table with run_column="
    ):
        fuse_table(table.to_pandas())
    # The core's entry names each table by the name given with it: one name per table.
    with pytest.raises(FusionError, match=r"2 tables and 1 names: give one name per table"):
        fanfuse._core.fuse_tables([table, table], names=["only"])


def test_an_empty_partition_gives_an_empty_table_of_the_same_columns() -> None:
    empty = pa.table({c: pa.array([], pa.string()) for c in ("run", "qid", "docid")}).append_column(
        "score", pa.array([], pa.float64())
    )
    fused = fuse_table(empty, run_column="run", runs=["a", "b"])
    assert fused.num_rows == 0
    assert fused.schema == pa.schema(
        [("qid", pa.string()), ("docid", pa.string()), ("rank", pa.int64()), ("score", pa.float64())]
    )


def test_a_table_without_scores_fuses_by_rank_with_rank_methods_only() -> None:
    table = pa.table({"qid": ["q", "q"], "docid": ["d", "e"], "rank": [2, 1]})
    fused = fuse_table([table], rank_from="rank")
    assert fused.column("docid").to_pylist() == ["e", "d"]
    with pytest.raises(FusionError, match=r"has no scores but method 'combsum' fuses scores"):
        fuse_table([table], rank_from="rank", method="combsum")


def test_evaluate_table_equals_fanfuse_eval(trec_runs: list[str], tmp_path: Path) -> None:
    qrels = tmp_path / "qrels.txt"
    run = read_run(trec_runs[0])
    lines = [f"{q} 0 {d} {i % 3}" for q, d, _, _ in zip(*run.columns(), strict=True) for i in [hash(d) % 7]]
    qrels.write_text("\n".join(lines) + "\n", encoding="utf-8")
    metrics = ["ndcg@5", "map", "recall@10"]
    expected = score_run(run, read_qrels(str(qrels)), metrics)
    qrels_rows = [line.split() for line in lines]
    qrels_table = pa.table(
        {
            "q_id": [r[0] for r in qrels_rows],
            "doc_id": [r[2] for r in qrels_rows],
            "score": [int(r[3]) for r in qrels_rows],
        }
    )
    table = evaluate_table(trec_table(trec_runs[0]), qrels_table, metrics)
    assert table.column("qid").to_pylist() == expected.qids
    for m in metrics:
        assert table.column(m).to_pylist() == expected.values[m]


def test_import_fanfuse_does_not_load_pyarrow_and_its_absence_names_the_extra() -> None:
    probe = (
        "import sys, json; sys.modules['pyarrow'] = None; import fanfuse\n"
        "loaded = 'pyarrow' in sys.modules and sys.modules['pyarrow'] is not None\n"
        "try:\n    fanfuse.fuse_table([])\n"
        "except fanfuse.MissingExtra as e:\n    print(json.dumps([loaded, str(e), e.extra]))"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    loaded, message, extra = json.loads(out)
    assert not loaded
    assert "pip install 'fanfuse[arrow]'" in message
    assert extra == "arrow"
    assert fanfuse.fuse_table is fuse_table


@pytest.mark.parametrize("rank_from", ["file", "rank", "score"])
def test_runs_read_from_mtrag_files_replay_as_the_files(tmp_path: Path, rank_from: str) -> None:
    """A Run given to fuse_files is replayed in its line order; the contexts of one MT-RAG record share
    a line, and keep their order in it whatever order the Run was read in."""
    rng = random.Random(7)
    contexts = Contexts()
    paths = [
        write_mtrag(tmp_path / f"m{i}.jsonl", run, rng, contexts, collection="c", interleaved=True)
        for i, run in enumerate(generated_runs(rng, runs=2, queries=30))
    ]
    fuse_files(paths, str(tmp_path / "files.trec"), rank_from=rank_from)
    runs = [read_run(p) for p in paths]
    fuse_files(runs, str(tmp_path / "runs.trec"), rank_from=rank_from)
    assert (tmp_path / "runs.trec").read_bytes() == (tmp_path / "files.trec").read_bytes()


def test_fuse_table_lists_the_queries_in_the_order_fanfuse_fuse_writes_them(
    trec_runs: list[str], tmp_path: Path
) -> None:
    for runs in (trec_runs[:1], trec_runs):  # grouped alike, and interleaved (fused buffered)
        out = tmp_path / "fused.trec"
        fuse_files(runs, str(out), top_k=5)
        fused = fuse_table([trec_table(p) for p in runs], top_k=5)
        qids, docids, ranks, scores = read_run(str(out), rank_from="file").columns()
        assert fused.column("qid").to_pylist() == qids
        assert fused.column("docid").to_pylist() == docids
        assert fused.column("rank").to_pylist() == ranks
        assert [s.hex() for s in fused.column("score").to_pylist()] == [s.hex() for s in scores]


def hits_of(run: fanfuse.Run) -> list[tuple[str, str, float, int]]:
    qids, docids, ranks, scores = run.columns()
    return sorted(zip(qids, docids, scores, ranks, strict=True))


@pytest.mark.parametrize("form", ["trec", "mtrag", "gzip", "parquet"])
def test_read_run_table_reads_what_read_run_reads(trec_runs: list[str], tmp_path: Path, form: str) -> None:
    from fanfuse.tables import read_run_table
    from run_tables import trec_to_parquet

    rng = random.Random(3)
    if form == "mtrag":
        (run,) = generated_runs(rng, runs=1, queries=20)
        path = write_mtrag(tmp_path / "m.jsonl", run, rng, Contexts(), collection="c", interleaved=True)
    elif form == "gzip":
        path = str(tmp_path / "r.trec.gz")
        Path(path).write_bytes(__import__("gzip").compress(Path(trec_runs[1]).read_bytes()))
    elif form == "parquet":
        path = trec_to_parquet(trec_runs[1], tmp_path / "r.parquet")
    else:
        path = trec_runs[1]
    table = read_run_table(path)
    assert table.column_names == ["qid", "docid", "score", "rank", "line"]
    read = fanfuse.tables.read_any_run(path, rank_from="file")
    qids, docids, scores = (table.column(c).to_pylist() for c in ("qid", "docid", "score"))
    assert sorted(zip(qids, docids, scores, strict=True)) == [h[:3] for h in hits_of(read)]
    # Sorted by line (and rank: the contexts of one record), the rows are in file order.
    ordered = table.sort_by([("line", "ascending"), ("rank", "ascending")])
    assert (
        fuse_table([ordered], rank_from="file").to_pydict()
        == fuse_table([read_as_table(read)], rank_from="file").to_pydict()
    )


def read_as_table(run: fanfuse.Run) -> object:
    qids, docids, _, scores = run.columns()
    return pa.table({"qid": qids, "docid": docids, "score": scores})


def test_a_run_is_an_arrow_batch_equal_to_its_columns() -> None:
    """A Run speaks the Arrow PyCapsule protocol: the batch pyarrow takes from it holds its
    ``columns()`` with the types of ``to_arrow``, it outlives the Run, and it reads back as the Run."""
    from fanfuse._core import Run, runs_from_table
    from fanfuse.tables import to_arrow

    qids = ["q2", "q1", "q2", "é \u4e2d", "q1", "é \u4e2d"]
    docids = ["d1", "d2", "d3", "\U0001f600", "long-" * 20, "x"]
    run = Run.from_columns(qids, docids, [0.5, 2.0, 1.5, -1.0, 2.0, 3.0])
    columns = dict(zip(("qid", "docid", "rank", "score"), run.columns(), strict=True))
    batch = pa.record_batch(run)
    schema = pa.schema(
        [("qid", pa.string()), ("docid", pa.string()), ("rank", pa.int64()), ("score", pa.float64())]
    )
    assert batch.schema == schema
    assert batch.to_pydict() == columns
    assert to_arrow(run).schema == schema and to_arrow(run).to_pydict() == columns
    del run
    assert batch.to_pydict() == columns  # the buffers are the batch's own
    assert runs_from_table(batch, rank_from="rank")[0].columns() == tuple(columns.values())
    empty = pa.record_batch(Run.from_columns([], [], []))
    assert empty.schema == schema and empty.num_rows == 0


def test_every_entry_taking_run_labels_refuses_them_without_their_column() -> None:
    """``runs=`` names the labels of ``run_column=``: every entry point that takes both (found by
    signature in ``fanfuse`` and ``fanfuse._core``) refuses labels without the column, by the core's rule."""
    import fanfuse._core

    table = pa.table({"qid": ["q"], "docid": ["d"], "score": [1.0]})
    calls = {
        "fuse_table": lambda f: f([table], runs=["a"]),
        "fuse_tables": lambda f: f([table], names=["t"], runs=["a"]),
        "runs_from_table": lambda f: f(table, runs=["a"]),
    }
    found = {
        name: getattr(module, name)
        for module in (fanfuse, fanfuse._core)
        for name in dir(module)
        if "run_column" in _parameters(getattr(module, name))
    }
    assert sorted(found) == sorted(calls)
    refused = r"^runs= names the labels of a run column: give run_column= too"
    for name, function in found.items():
        with pytest.raises(FusionError, match=refused):
            calls[name](function)


def _parameters(value: object) -> tuple[str, ...]:
    """The parameter names of a callable (none for other values and for callables without a signature)."""
    try:
        return tuple(inspect.signature(value).parameters) if callable(value) else ()
    except (TypeError, ValueError):
        return ()
