"""A fused run evaluates the same whatever depth it is written at: it lists its hits in evaluation
order (fused score descending, equal scores by docid descending) and `top_k` keeps the first k."""

from __future__ import annotations

import tempfile
from pathlib import Path

import fanfuse
import pytest
from hypothesis import given
from hypothesis import strategies as st
from rrf_strategies import examples

CUT_METRICS = ("ndcg@{k}", "precision@{k}", "recall@{k}")


Lines = dict[str, list[tuple[str, float]]]


def fused_lines(runs: list[str], out: Path, top_k: int | None, method: str = "rrf") -> Lines:
    """Fuses the run files and returns each query's written (docid, score) pairs, in file order."""
    fanfuse.fuse_files(runs, str(out), top_k=top_k, method=method)
    lines: Lines = {}
    for line in out.read_text().splitlines():
        qid, _, docid, _, score, _ = line.split()
        lines.setdefault(qid, []).append((docid, float(score)))
    return lines


def means(run_path: Path, qrels: fanfuse.Qrels, metrics: list[str]) -> dict[str, float]:
    qids, values = fanfuse.evaluate(fanfuse.read_run(str(run_path)), qrels, metrics=metrics)
    return {m: sum(v) / len(qids) for m, v in values.items()}


def test_a_tie_at_the_cut_keeps_the_document_evaluation_ranks_first(tmp_path: Path) -> None:
    # a and b swap places in the two runs, so their RRF scores are equal. The kernel's tie-break
    # puts a first (its best rank came in the earlier run); evaluation puts b first (docid descending).
    one, two = tmp_path / "one.trec", tmp_path / "two.trec"
    one.write_text("q Q0 a 1 2 t\nq Q0 b 2 1 t\n")
    two.write_text("q Q0 b 1 2 t\nq Q0 a 2 1 t\n")
    qrels_path = tmp_path / "qrels.txt"
    qrels_path.write_text("q 0 b 1\n")
    runs = [str(one), str(two)]
    cut = fused_lines(runs, tmp_path / "cut.trec", top_k=1)
    full = fused_lines(runs, tmp_path / "full.trec", top_k=None)
    assert [docid for docid, _ in full["q"]] == ["b", "a"]
    assert cut["q"] == full["q"][:1]
    qrels = fanfuse.read_qrels(str(qrels_path))
    assert means(tmp_path / "cut.trec", qrels, ["ndcg@1"]) == {"ndcg@1": 1.0}


@st.composite
def fusion_cases(draw: st.DrawFn) -> tuple[list[dict[str, list[str]]], dict[str, dict[str, int]], str]:
    """Two or three runs over a pool of six documents (so RRF and Borda ties are frequent), graded qrels."""
    pool = [f"d{i}" for i in range(6)]
    qids = ["q1", "q2"]
    n_runs = draw(st.integers(2, 3))
    runs = [{q: draw(st.permutations(pool))[: draw(st.integers(1, 6))] for q in qids} for _ in range(n_runs)]
    qrels = {
        q: {d: draw(st.integers(0, 3)) for d in draw(st.sets(st.sampled_from(pool), min_size=1))}
        for q in qids
    }
    return runs, qrels, draw(st.sampled_from(["rrf", "bordafuse", "isr"]))


@examples(0.004)  # share of the Hypothesis profile (CI=true: 100 of 25k; each fuses and evaluates)
@given(fusion_cases())
def test_every_depth_is_a_prefix_of_the_full_run_and_evaluates_the_same(
    case: tuple[list[dict[str, list[str]]], dict[str, dict[str, int]], str],
) -> None:
    runs, judgments, method = case
    with tempfile.TemporaryDirectory() as folder:
        tmp = Path(folder)
        paths = []
        for r, run in enumerate(runs):
            path = tmp / f"run{r}.trec"
            path.write_text(
                "".join(
                    f"{q} Q0 {d} {i + 1} {10 - i} t\n" for q, docs in run.items() for i, d in enumerate(docs)
                )
            )
            paths.append(str(path))
        qrels_path = tmp / "qrels.txt"
        qrels_path.write_text(
            "".join(f"{q} 0 {d} {rel}\n" for q, docs in judgments.items() for d, rel in docs.items())
        )
        qrels = fanfuse.read_qrels(str(qrels_path))
        full = fused_lines(paths, tmp / "full.trec", top_k=None, method=method)
        for k in range(1, 7):
            cut = fused_lines(paths, tmp / "cut.trec", top_k=k, method=method)
            assert cut == {q: lines[:k] for q, lines in full.items()}, f"top_k={k}"
            metrics = [m.format(k=k) for m in CUT_METRICS]
            assert means(tmp / "cut.trec", qrels, metrics) == means(tmp / "full.trec", qrels, metrics)
            in_memory = fanfuse.fuse_runs([fanfuse.read_run(p) for p in paths], top_k=k, method=method)
            qids, docids, _, scores = in_memory.columns()
            from_memory: Lines = {}
            for q, d, s in zip(qids, docids, scores, strict=True):
                from_memory.setdefault(q, []).append((d, s))
            assert from_memory == cut


def every_cut_metric(k: int) -> list[str]:
    """Every metric that takes a cut-off, at k, with the default and a raised relevance level."""
    names = [n if n != "rbp" else "rbp.8" for n in fanfuse._core.METRICS if n not in ("r-precision", "bpref")]
    return [f"{n}@{k}{level}" for n in names for level in ("", "-l2")]


@examples(0.002)  # share of the Hypothesis profile (CI=true: 50 of 25k; each fuses and evaluates)
@given(fusion_cases())
def test_a_run_fused_to_the_metric_depth_evaluates_as_the_whole_run(
    case: tuple[list[dict[str, list[str]]], dict[str, dict[str, int]], str],
) -> None:
    """What `tune` relies on to fuse each configuration only as deep as its metric reads."""
    runs, judgments, method = case
    columns = [[(q, d, 10.0 - i) for q, docs in run.items() for i, d in enumerate(docs)] for run in runs]
    parsed = [fanfuse.Run.from_columns(*(list(c) for c in zip(*rows, strict=True))) for rows in columns]
    rows = [(q, d, rel) for q, docs in judgments.items() for d, rel in docs.items()]
    with tempfile.TemporaryDirectory() as folder:
        qrels_path = Path(folder) / "qrels.txt"
        qrels_path.write_text("".join(f"{q} 0 {d} {rel}\n" for q, d, rel in rows))
        qrels = fanfuse.read_qrels(str(qrels_path))
    whole = fanfuse.fuse_runs(parsed, top_k=None, method=method)
    for k in range(1, 7):
        metrics = every_cut_metric(k)
        assert {fanfuse.metric_depth(m) for m in metrics} == {k}
        cut = fanfuse.fuse_runs(parsed, top_k=k, method=method)
        assert fanfuse.evaluate(cut, qrels, metrics=metrics) == fanfuse.evaluate(
            whole, qrels, metrics=metrics
        )
    assert {fanfuse.metric_depth(m) for m in ("map", "ndcg", "bpref", "r-precision", "recall")} == {None}


def test_real_fused_runs_evaluate_the_same_at_every_depth(mtrag_dir: Path, tmp_path: Path) -> None:
    # Cutting in the kernel's tie order would give elser_clapnq lastturn + rewrite ndcg@10 0.5777 at
    # depth 10 and 0.5772 at depth 20.
    metrics = ["ndcg@5", "ndcg@10", "recall@5", "recall@10", "precision@10", "map@10"]
    for retriever in ("bm25", "bge", "elser"):
        for domain in ("clapnq", "cloud"):
            runs = [
                str(mtrag_dir / "runs_trec" / f"{retriever}_{domain}_{s}.trec")
                for s in ("lastturn", "rewrite")
            ]
            qrels = fanfuse.read_qrels(str(mtrag_dir / "qrels" / domain / "dev.tsv"))
            full = fused_lines(runs, tmp_path / "full.trec", top_k=None)
            expected = means(tmp_path / "full.trec", qrels, metrics)
            for top_k in (10, 20):
                cut = fused_lines(runs, tmp_path / "cut.trec", top_k=top_k)
                assert cut == {q: lines[:top_k] for q, lines in full.items()}, (retriever, domain, top_k)
                assert means(tmp_path / "cut.trec", qrels, metrics) == expected, (retriever, domain, top_k)


def test_tie_break_is_refused_for_run_fusion(tmp_path: Path) -> None:
    run = tmp_path / "run.trec"
    run.write_text("q Q0 a 1 2 t\n")
    with pytest.raises(fanfuse.FusionError, match=r"tie_break applies to fanfuse\.fuse"):
        fanfuse.fuse_files([str(run)], str(tmp_path / "out.trec"), tie_break="id")
    assert not (tmp_path / "out.trec").exists()
    with pytest.raises(fanfuse.FusionError, match="docid descending"):
        fanfuse.fuse_runs([fanfuse.read_run(str(run))], tie_break="id")


def test_a_tie_group_larger_than_the_kernels_room_is_cut_in_evaluation_order() -> None:
    # Forty one-document runs: forty documents with one RRF score. The kernel's first picks (earlier
    # runs first) are d00, d01, ...; evaluation order is d39, d38, ...
    docids = [f"d{i:02d}" for i in range(40)]
    runs = [fanfuse.Run.from_columns(["q"], [d], [1.0]) for d in docids]
    full = fanfuse.fuse_runs(runs, top_k=None).columns()[1]
    assert full == sorted(docids, reverse=True)
    for top_k in (1, 5, 16, 17, 20, 39, 40, 41):
        assert fanfuse.fuse_runs(runs, top_k=top_k).columns()[1] == full[:top_k], top_k
