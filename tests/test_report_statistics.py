"""The statistics of comparison reports equal scipy's and statsmodels': the Wilcoxon signed-rank test
and the paired t statistic (scipy.stats), Tukey's HSD (statsmodels' pairwise_tukeyhsd), the Bonferroni
and Holm corrections (statsmodels' multipletests); and fanfuse.compare puts each where it belongs."""

from __future__ import annotations

import math
import random
import warnings
from pathlib import Path

import fanfuse
import pytest
from fanfuse.report import adjust
from generated_runs import generated_qrels, generated_runs, write_beir_qrels, write_trec
from run_reports import scipy_wilcoxon

stats = pytest.importorskip("scipy.stats")
multitest = pytest.importorskip("statsmodels.stats.multitest")
multicomp = pytest.importorskip("statsmodels.stats.multicomp")


def metric_like(rng: random.Random, n: int, *, continuous: bool) -> tuple[list[float], list[float]]:
    """Per-query scores in [0, 1]: continuous (no ties, no zero differences) or, as recall and nDCG
    are, full of ties, zeros and equal pairs."""
    if continuous:
        return [rng.random() for _ in range(n)], [rng.random() for _ in range(n)]
    pool = [0.0, 0.25, 0.5, 1.0]
    a = [rng.choice([*pool, rng.random()]) for _ in range(n)]
    b = [x if rng.random() < 0.3 else rng.choice([*pool, rng.random()]) for x in a]
    return a, b


# Every null distribution scipy picks: exact (<= 50 untied pairs), every sign flip (<= 13 pairs with
# ties or zeros), the normal approximation (14-50 with ties or zeros, and above 50).
@pytest.mark.parametrize("n", [2, 5, 9, 13, 14, 30, 50, 51, 208, 1000])
@pytest.mark.parametrize("continuous", [True, False])
def test_wilcoxon_equals_scipy(n: int, continuous: bool) -> None:
    rng = random.Random(n * 2 + continuous)
    # scipy counts every sign flip in Python (3 s for one sample of 13): one sample there.
    for _ in range(1 if 9 < n <= 13 and not continuous else 8):
        a, b = metric_like(rng, n, continuous=continuous)
        if a == b:
            continue
        expected = scipy_wilcoxon(a, b)
        statistic, p = fanfuse.wilcoxon_test(a, b)
        assert statistic == pytest.approx(float(expected.statistic), rel=1e-12, abs=1e-12)
        assert p == pytest.approx(float(expected.pvalue), rel=1e-9, abs=1e-15), (a, b)


def test_wilcoxon_edge_cases() -> None:
    # All differences zero: scipy gives NaN, the report "identical systems".
    assert fanfuse.wilcoxon_test([0.5, 0.25, 1.0], [0.5, 0.25, 1.0]) == (0.0, 1.0)
    # A shift of the whole sample far out in the normal tail keeps relative precision.
    a = [0.9 + 0.001 * i for i in range(200)]
    b = [0.1 + 0.0013 * (i % 7) for i in range(200)]
    assert fanfuse.wilcoxon_test(a, b)[1] == pytest.approx(float(scipy_wilcoxon(a, b).pvalue), rel=1e-9)
    with pytest.raises(fanfuse.FusionError, match=r"wilcoxon_test: b\[1\] is NaN"):
        fanfuse.wilcoxon_test([0.1, 0.2], [0.3, math.nan])


@pytest.mark.parametrize("n", [2, 3, 30, 208])
def test_paired_t_statistic_equals_scipy(n: int) -> None:
    rng = random.Random(n)
    for _ in range(10):
        a, b = metric_like(rng, n, continuous=False)
        if a == b:
            continue
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # scipy on equal differences
            expected = stats.ttest_rel(a, b)
        t, p = fanfuse.paired_t(a, b)
        assert t == pytest.approx(float(expected.statistic), rel=1e-10)
        assert p == pytest.approx(float(expected.pvalue), rel=1e-9, abs=1e-14)
    assert fanfuse.paired_t([0.5, 0.75], [0.25, 0.5]) == (math.inf, 0.0)
    assert fanfuse.paired_t([0.25, 0.5], [0.5, 0.75]) == (-math.inf, 0.0)


# (groups, values per group): the degrees of freedom N - k run from 3 to about 8000.
@pytest.mark.parametrize(("k", "n"), [(2, 3), (2, 40), (3, 2), (3, 30), (4, 7), (5, 208), (7, 1000)])
def test_tukey_hsd_equals_scipy(k: int, n: int) -> None:
    rng = random.Random(k * 100 + n)
    # Each pair of groups costs one double integral (~0.1 s in the debug build): one shift for many groups.
    for shift in (0.0, 0.05, 0.3) if k < 5 else (0.05,):
        # Unequal group sizes too (the last group one shorter), metric-like values.
        groups = [metric_like(rng, n - (g == k - 1 and n > 2), continuous=shift > 0)[0] for g in range(k)]
        groups = [[min(1.0, v + shift * g) for v in group] for g, group in enumerate(groups)]
        expected = stats.tukey_hsd(*groups)
        ours = fanfuse.tukey_hsd(groups)
        for i in range(k):
            for j in range(k):
                difference, p = ours[i][j]
                assert difference == pytest.approx(float(expected.statistic[i, j]), rel=1e-12, abs=1e-15)
                assert p == pytest.approx(float(expected.pvalue[i, j]), rel=1e-7, abs=1e-11), (i, j)


def test_tukey_hsd_refuses_what_has_no_answer() -> None:
    with pytest.raises(fanfuse.FusionError, match=r"tukey_hsd needs at least 2 groups \(got 1\)"):
        fanfuse.tukey_hsd([[0.1, 0.2]])
    with pytest.raises(fanfuse.FusionError, match=r"groups\[1\]\[0\] is inf"):
        fanfuse.tukey_hsd([[0.1, 0.2], [math.inf]])
    with pytest.raises(TypeError, match="groups must be a sequence"):
        fanfuse.tukey_hsd("ab")  # type: ignore[arg-type]
    # Constant groups: no variance; equal means are not different, unequal ones are.
    assert fanfuse.tukey_hsd([[0.5, 0.5], [0.5, 0.5], [0.25, 0.25]])[0][1:] == [(0.0, 1.0), (0.25, 0.0)]


@pytest.mark.parametrize("method", ["bonferroni", "holm"])
def test_corrections_equal_statsmodels(method: str) -> None:
    rng = random.Random(7)
    for size in (1, 2, 5, 24, 100):
        p_values = [rng.choice([rng.random() * 0.05, rng.random(), 0.01, 0.01]) for _ in range(size)]
        reject, expected, *_ = multitest.multipletests(p_values, alpha=0.05, method=method)
        ours = adjust(p_values, method)
        assert ours == pytest.approx(list(expected), rel=1e-12, abs=0)
        assert [q <= 0.05 for q in ours] == list(reject)
    assert adjust([0.2, 0.01], "none") == [0.2, 0.01]


@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory) -> tuple[list[str], str]:
    """Four generated runs (tied scores, some queries missing) and graded qrels over 80 queries."""
    rng = random.Random(12)
    directory: Path = tmp_path_factory.mktemp("report-runs")
    runs = generated_runs(rng, runs=4, queries=80)
    paths = [
        write_trec(directory / f"run{i}.trec", run, rng, interleaved=False) for i, run in enumerate(runs)
    ]
    qrels = write_beir_qrels(directory / "qrels.tsv", generated_qrels(rng, runs))
    return paths, qrels


METRICS = ["ndcg@5", "recall@10", "mrr"]


def per_query(path: str, qrels: str) -> dict[str, dict[str, float]]:
    qids, values = fanfuse.evaluate(fanfuse.read_run(path), fanfuse.read_qrels(qrels), metrics=METRICS)
    return {m: dict(zip(qids, values[m], strict=True)) for m in METRICS}


@pytest.mark.parametrize("test", ["t", "wilcoxon", "fisher"])
@pytest.mark.parametrize("correction", ["none", "bonferroni", "holm"])
def test_paired_reports_equal_scipy_on_the_shared_queries(
    generated: tuple[list[str], str], test: str, correction: str
) -> None:
    paths, qrels = generated
    report = fanfuse.compare(paths, qrels, METRICS, baseline=1, test=test, correction=correction, alpha=0.1)
    values = [per_query(p, qrels) for p in paths]
    names = [Path(p).name for p in paths]
    assert [c.run for c in report.comparisons] == [n for i, n in enumerate(names) if i != 1 for _ in METRICS]
    raw = []
    for c in report.comparisons:
        run, base = values[names.index(c.run)][c.metric], values[1][c.metric]
        shared = [q for q in run if q in base]
        a, b = [run[q] for q in shared], [base[q] for q in shared]
        assert (c.queries, c.wins, c.ties, c.losses) == (
            len(shared),
            sum(x > y for x, y in zip(a, b, strict=True)),
            sum(x == y for x, y in zip(a, b, strict=True)),
            sum(x < y for x, y in zip(a, b, strict=True)),
        )
        assert c.mean == pytest.approx(sum(run.values()) / len(run), rel=1e-12)
        if test == "t":
            expected = stats.ttest_rel(a, b)
            assert (c.statistic, c.p_value) == pytest.approx((expected.statistic, expected.pvalue), rel=1e-9)
        elif test == "wilcoxon":
            expected = scipy_wilcoxon(a, b)
            assert (c.statistic, c.p_value) == pytest.approx((expected.statistic, expected.pvalue), rel=1e-9)
        else:
            assert c.statistic == pytest.approx((sum(a) - sum(b)) / len(a), rel=1e-12)
            assert c.p_value == fanfuse.randomization_test(a, b)
        raw.append(c.p_value)
    if correction == "none":
        assert [c.adjusted_p_value for c in report.comparisons] == raw
    else:
        reject, expected_adjusted, *_ = multitest.multipletests(raw, alpha=0.1, method=correction)
        assert [c.adjusted_p_value for c in report.comparisons] == pytest.approx(list(expected_adjusted))
        assert [c.significant for c in report.comparisons] == list(reject)
    for c in report.comparisons:
        assert c.marker == ("" if not c.significant else "▲" if c.mean > c.baseline_mean else "▼")


def test_tukey_report_equals_statsmodels(generated: tuple[list[str], str]) -> None:
    paths, qrels = generated
    report = fanfuse.compare(paths, qrels, METRICS, baseline=2, test="tukey", correction="none")
    values = [per_query(p, qrels) for p in paths]
    for m in METRICS:
        common = sorted(set.intersection(*(set(v[m]) for v in values)))
        data = [v[m][q] for v in values for q in common]
        labels = [i for i in range(len(values)) for _ in common]
        result = multicomp.pairwise_tukeyhsd(data, labels)
        pairs = list(zip(result._multicomp.pairindices[0], result._multicomp.pairindices[1], strict=True))
        for i in (0, 1, 3):
            found = report.comparison(Path(paths[i]).name, m)
            assert found is not None
            k = pairs.index((min(i, 2), max(i, 2)))
            # statsmodels' meandiff is group2 - group1; the report's is run - baseline.
            expected_difference = result.meandiffs[k] * (1 if i > 2 else -1)
            assert found.statistic == pytest.approx(expected_difference, rel=1e-12)
            assert found.p_value == pytest.approx(float(result.pvalues[k]), rel=1e-6, abs=1e-12)


def test_bad_arguments_name_what_is_accepted(generated: tuple[list[str], str]) -> None:
    paths, qrels = generated
    for kwargs, error, message in [
        ({"test": "anova"}, fanfuse.InvalidSetting, "test must be one of t, fisher, wilcoxon, tukey"),
        ({"correction": "bh"}, fanfuse.InvalidSetting, "correction must be one of none, bonferroni, holm"),
        ({"baseline": 4}, fanfuse.OutOfRange, "baseline must be the index of a run, an int from 0 to 3"),
        ({"alpha": 1.5}, fanfuse.OutOfRange, "alpha must be a number in \\(0, 1\\)"),
    ]:
        with pytest.raises(error, match=message):
            fanfuse.compare(paths, qrels, METRICS, **kwargs)  # type: ignore[arg-type]
