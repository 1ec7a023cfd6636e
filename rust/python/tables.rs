//! Arrow tables in: runs and qrels read from any Arrow table, and run tables fused in one call of
//! the core (the capsules in and out are `arrow.rs`'s).

use pyo3::prelude::*;
use pyo3::types::PyDict;

use super::args::{name_arg, outer_items, rank_from_arg, run_column_arg, strings};
use super::arrow::{table_source, PyArrowBatch};
use super::options::{check_thread_variable, run_params, threads_arg};
use super::runs::{PyQrels, PyRun};
use super::{interruptible, to_py_err};
use crate::runs::read::table::{self, TableSpec};
use crate::runs::RankFrom;

#[doc = stub_doc!("runs_from_table")]
#[pyfunction]
#[pyo3(signature = (table, /, *, name = "table", run_column = None, runs = None, rank_from = "score"))]
pub(super) fn runs_from_table(
    py: Python<'_>,
    table: &Bound<'_, PyAny>,
    #[pyo3(from_py_with = name_arg)] name: &str,
    #[pyo3(from_py_with = run_column_arg)] run_column: Option<&str>,
    runs: Option<&Bound<'_, PyAny>>,
    #[pyo3(from_py_with = rank_from_arg)] rank_from: &str,
) -> PyResult<Vec<PyRun>> {
    let rank_from: RankFrom = rank_from.parse().map_err(to_py_err)?;
    let labels = runs.map(|r| strings(r, "runs")).transpose()?.unwrap_or_default();
    let source = table_source(table, name)?;
    let spec = TableSpec { name, run_column, runs: &labels, rank_from, first_row: 0 };
    let read = interruptible(py, move || table::runs_from_table(source, &spec))?;
    Ok(read.into_iter().map(PyRun::from).collect())
}

#[doc = stub_doc!("fuse_tables")]
#[pyfunction]
#[pyo3(signature = (tables, /, *, names, run_column = None, runs = None, rank_from = "score", options = None,
    threads = None, **kwargs))]
pub(super) fn fuse_tables(
    py: Python<'_>,
    tables: &Bound<'_, PyAny>,
    names: &Bound<'_, PyAny>,
    #[pyo3(from_py_with = run_column_arg)] run_column: Option<&str>,
    runs: Option<&Bound<'_, PyAny>>,
    #[pyo3(from_py_with = rank_from_arg)] rank_from: &str,
    options: Option<&Bound<'_, PyAny>>,
    #[pyo3(from_py_with = threads_arg)] threads: Option<usize>,
    kwargs: Option<&Bound<'_, PyDict>>,
) -> PyResult<PyArrowBatch> {
    let params = run_params("fuse_tables", options, kwargs, None)?;
    let rank_from: RankFrom = rank_from.parse().map_err(to_py_err)?;
    let labels = runs.map(|r| strings(r, "runs")).transpose()?.unwrap_or_default();
    let names = strings(names, "names")?;
    let items = outer_items(tables, "tables", crate::arrow::TABLES)?;
    table::check_table_names(items.len(), &names).map_err(to_py_err)?;
    check_thread_variable(py, threads)?;
    let sources = items.iter().zip(&names).map(|(t, n)| table_source(t, n)).collect::<PyResult<Vec<_>>>()?;
    let shape = TableSpec { name: "", run_column, runs: &labels, rank_from, first_row: 0 };
    let tables = sources.into_iter().zip(names.iter().map(String::as_str)).collect();
    let fused = interruptible(py, || crate::runs::fuse::rows::fuse_tables(tables, &shape, &params, threads))?;
    Ok(PyArrowBatch::new(fused))
}

#[doc = stub_doc!("qrels_from_table")]
#[pyfunction]
#[pyo3(signature = (table, /, *, name = "qrels"))]
pub(super) fn qrels_from_table(
    py: Python<'_>,
    table: &Bound<'_, PyAny>,
    #[pyo3(from_py_with = name_arg)] name: &str,
) -> PyResult<PyQrels> {
    let source = table_source(table, name)?;
    interruptible(py, move || table::qrels_from_table(source, name)).map(PyQrels::from)
}
