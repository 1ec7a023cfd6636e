//! Evaluation of runs against qrels, and the paired significance tests.

use std::sync::Arc;

use pyo3::prelude::*;
use pyo3::types::{IntoPyDict, PyDict};

use super::args::{int_arg, numbers, outer_items, strings, typed_arg};
use super::runs::{qrels_arg, run_arg, PyQrels, PyRun};
use super::{interruptible, to_py_err};
use crate::eval::{self, Metric};

int_arg!(iterations_arg("iterations") -> u32: 1..=u32::MAX, eval::significance::ITERATIONS_ACCEPTED);
int_arg!(seed_arg("seed") -> u64: 0..=u64::MAX, eval::significance::SEED_ACCEPTED);
typed_arg!(metric_arg("metric") -> str);

#[doc = stub_doc!("evaluate")]
#[pyfunction]
#[pyo3(signature = (run, qrels, /, *, metrics))]
pub(super) fn evaluate<'py>(
    py: Python<'py>,
    #[pyo3(from_py_with = run_arg)] run: PyRef<'_, PyRun>,
    #[pyo3(from_py_with = qrels_arg)] qrels: PyRef<'_, PyQrels>,
    metrics: &Bound<'_, PyAny>,
) -> PyResult<(Vec<String>, Bound<'py, PyDict>)> {
    let metrics = strings(metrics, "metrics")?;
    let parsed = eval::parse_metrics(&metrics).map_err(to_py_err)?;
    let (run, qrels) = (Arc::clone(&run.inner), Arc::clone(&qrels.inner));
    let evaluation = interruptible(py, || eval::evaluate(&run, &qrels, &parsed))?;
    Ok((evaluation.qids, metrics.into_iter().zip(evaluation.values).into_py_dict(py)?))
}

#[doc = stub_doc!("metric_depth")]
#[pyfunction]
#[pyo3(signature = (metric, /))]
pub(super) fn metric_depth(#[pyo3(from_py_with = metric_arg)] metric: &str) -> PyResult<Option<usize>> {
    Ok(metric.parse::<Metric>().map_err(to_py_err)?.cut)
}

#[doc = stub_doc!("randomization_test")]
#[pyfunction]
#[pyo3(signature = (a, b, /, *, iterations = 10_000, seed = 0))]
pub(super) fn randomization_test(
    py: Python<'_>,
    a: &Bound<'_, PyAny>,
    b: &Bound<'_, PyAny>,
    #[pyo3(from_py_with = iterations_arg)] iterations: u32,
    #[pyo3(from_py_with = seed_arg)] seed: u64,
) -> PyResult<f64> {
    let (a, b) = (numbers(a, "a", "numbers")?, numbers(b, "b", "numbers")?);
    interruptible(py, || eval::significance::randomization_test(&a, &b, iterations, seed))
}

#[doc = stub_doc!("paired_t")]
#[pyfunction]
#[pyo3(signature = (a, b, /))]
pub(super) fn paired_t(a: &Bound<'_, PyAny>, b: &Bound<'_, PyAny>) -> PyResult<(f64, f64)> {
    eval::significance::paired_t(&numbers(a, "a", "numbers")?, &numbers(b, "b", "numbers")?).map_err(to_py_err)
}

#[doc = stub_doc!("wilcoxon_test")]
#[pyfunction]
#[pyo3(signature = (a, b, /))]
pub(super) fn wilcoxon_test(py: Python<'_>, a: &Bound<'_, PyAny>, b: &Bound<'_, PyAny>) -> PyResult<(f64, f64)> {
    let (a, b) = (numbers(a, "a", "numbers")?, numbers(b, "b", "numbers")?);
    interruptible(py, || eval::wilcoxon::wilcoxon_test(&a, &b))
}

#[doc = stub_doc!("tukey_hsd")]
#[pyfunction]
#[pyo3(signature = (groups, /))]
pub(super) fn tukey_hsd(py: Python<'_>, groups: &Bound<'_, PyAny>) -> PyResult<Vec<Vec<(f64, f64)>>> {
    let groups = outer_items(groups, "groups", eval::tukey::GROUPS)?
        .iter()
        .enumerate()
        .map(|(i, group)| numbers(group, &format!("groups[{i}]"), "numbers"))
        .collect::<PyResult<Vec<_>>>()?;
    interruptible(py, || eval::tukey::tukey_hsd(&groups))
}
