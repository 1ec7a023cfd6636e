"""Finite scores and weights whose fused score leaves the float range (inf, or NaN from inf / inf) are
refused with the document named, by the core and by the executable spec alike; weights whose total
is not finite are refused up front (only their ratios matter). A fused score is never inf or NaN."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import fanfuse
import pytest
from fanfuse import FusionError, reference
from fanfuse.cli import main
from hypothesis import given
from hypothesis import strategies as st
from rrf_strategies import examples
from test_fusion_methods import fuse_calls

HUGE_SCORES = st.sampled_from([1e308, -1e308, 1.7e308, 0.5, -2.0, 0.0])
HUGE_RUNS = st.lists(st.lists(st.tuples(st.sampled_from("abc"), HUGE_SCORES), max_size=5), max_size=4)
HUGE_WEIGHTS = [st.lists(st.sampled_from([0.0, 1.0, 1e308]), min_size=n, max_size=n) for n in range(5)]


def outcome(fuse: Any, runs: Any, options: dict[str, Any]) -> Any:
    try:
        ids, scores = fuse(runs, **options)
    except FusionError:
        return "refused"
    assert all(math.isfinite(s) for s in scores)
    return ids, scores


@examples(0.1)  # share of the Hypothesis profile (CI=true: 25k examples)
@given(fuse_calls(HUGE_RUNS, HUGE_WEIGHTS))
def test_core_and_reference_refuse_the_same_calls(call: tuple[list[Any], dict[str, Any]]) -> None:
    runs, options = call

    def core(runs: Any, **options: Any) -> tuple[list[Any], list[float]]:
        fused = fanfuse.fuse(runs, **options)
        return fused.ids, fused.scores

    assert outcome(core, runs, options) == outcome(reference.fuse, runs, options)


@pytest.mark.parametrize(
    ("runs", "options", "message"),
    [
        # A sum of scores (combsum, wsum, combmnz, mixed, ...).
        ([[("a", 1e308)], [("b", 1.0), ("a", 1e308)]], {"method": "combsum", "norm": "none"}, '"a" is inf'),
        ([[("a", 1e308)], [("a", 1.0)]], {"method": "wsum", "norm": "none", "weights": [2.0, 1.0]}, "is inf"),
        ([[("a", 1e308)], [("a", 1.0)]], {"method": "combmnz", "norm": "none"}, "is inf"),
        # A normalisation whose range overflows: (max - min) is inf, the top score inf / inf.
        ([[("a", 1e308), ("b", -1e308)]], {"method": "combsum"}, '"a" is NaN'),
        ([[("a", 1e308), ("b", -1e308)]], {"method": "relative_score"}, '"a" is NaN'),
        ([[("a", 1e308), ("b", 1e308), ("c", 0.0)]], {"method": "combsum", "norm": "zmuv"}, "is NaN"),
        # A sum of scores that overflows: sum - n * min is inf - inf, which no floor may hide.
        ([[("a", 1e308), ("b", 1e308)]], {"method": "combmax", "norm": "sum"}, '"a" is NaN'),
        # ... which a median (or max, min) over the lists must not hide.
        (
            [[("a", 1e308), ("b", 1e308)], [("a", 0.5), ("b", 1e308)]],
            {"method": "combmed", "norm": "sum"},
            '"a" is NaN under norm',
        ),
        # A power: n ** gamma is inf for a document in two lists, times a score of 0 is NaN.
        (
            [[("a", 1.0)], [("a", 0.0)]],
            {"method": "combgmnz", "norm": "none", "gamma": 2000.0},
            "is NaN under method 'combgmnz': its terms overflow the range of a float (about 1.8e308); "
            "lower gamma",
        ),
        # Rank methods: Borda points times a huge weight; RRF terms of a repeated id added up.
        ([["a", "b", "c"], ["c"]], {"method": "bordafuse", "weights": [1e308, 1.0]}, '"a" is inf'),
        ([["a", "a", "a"]], {"weights": [1e308], "k": 1e-9, "duplicates": "sum"}, "under method 'rrf'"),
    ],
)
def test_an_overflowing_score_is_refused_and_named(
    runs: list[Any], options: dict[str, Any], message: str
) -> None:
    with pytest.raises(FusionError, match=r"the (fused|normalised) score of id ") as info:
        fanfuse.fuse(runs, **options)
    assert message in str(info.value)
    assert "scale the " in str(info.value)
    with pytest.raises(FusionError, match=r"queries\[0\]: the (fused|normalised) score of id "):
        fanfuse.fuse_batch([runs], **options)
    with pytest.raises(FusionError):
        reference.fuse(runs, **options)


@pytest.mark.parametrize("call", [fanfuse.rrf, fanfuse.fuse, reference.rrf, reference.fuse])
def test_weights_whose_total_overflows_are_refused(call: Any) -> None:
    # Refused even where no document is in both lists: the rule stays simple, and a finite total
    # proves that no RRF score can overflow.
    with pytest.raises(FusionError, match=r"weights sum to inf, beyond the largest float; only their ratios"):
        call([["a"], ["b"]], weights=[1e308, 1e308])
    with pytest.raises(FusionError, match=r"weights sum to inf"):
        fanfuse.rrf_batch([[["a"], ["b"]]], weights=[1e308, 1e308])


def huge_runs(tmp_path: Path) -> list[str]:
    paths = []
    for name in ("a", "b"):
        path = tmp_path / f"{name}.trec"
        path.write_text(f"q1 Q0 d1 1 1e308 {name}\nq1 Q0 d2 2 1.0 {name}\nq2 Q0 d1 1 1.0 {name}\n")
        paths.append(str(path))
    return paths


def test_run_fusion_names_the_query(tmp_path: Path) -> None:
    paths = huge_runs(tmp_path)
    runs = [fanfuse.read_run(p) for p in paths]
    with pytest.raises(
        FusionError, match=r'^query q1: the fused score of id "d1" is inf under method .combsum.'
    ):
        fanfuse.fuse_runs(runs, method="combsum", norm="none")
    with pytest.raises(FusionError, match=r"^query q1: the fused score of id \"d1\" is inf"):
        fanfuse.fuse_files(paths, str(tmp_path / "out.trec"), method="combsum", norm="none")
    assert not (tmp_path / "out.trec").exists()


def test_fuse_command_refuses_an_overflow_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out.trec"
    argv = ["fuse", *huge_runs(tmp_path), "-o", str(out), "--method", "combsum", "--norm", "none"]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith('fanfuse fuse: error: query q1: the fused score of id "d1" is inf')
    assert err.count("\n") == 1
    assert not out.exists()
