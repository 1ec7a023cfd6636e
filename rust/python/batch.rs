//! Many queries in one call (`rrf_batch`, `fuse_batch`): copied out of Python a chunk at a time
//! and fused by the core, on a thread pool with `threads` > 1.

use pyo3::prelude::*;
use pyo3::types::PyDict;

use super::args::{int_arg, outer_items};
use super::fuse::shape_params;
use super::fused::Fused;
use super::options::{check_thread_variable, threads_arg};
use super::{interruptible, to_py_err};
use crate::batch;
use crate::fused::ChunkFusion;
use crate::fusion::{check_query_weights, FuseParams};
use crate::owned_ids::{ListPath, OwnedBatch, QueryPath, Shape, LISTS, RUNS};

/// Copies `queries` out of Python a chunk of [`batch::CHUNK`] at a time into one reused buffer (fresh
/// ones per chunk cost a page fault every 4 KiB), and hands each chunk to `each`.
fn each_chunk(
    py: Python<'_>,
    queries: &[Bound<'_, PyAny>],
    shape: &Shape,
    params: &FuseParams,
    mut each: impl FnMut(&mut OwnedBatch) -> PyResult<()>,
) -> PyResult<()> {
    let mut owned = OwnedBatch::new();
    for (c, chunk) in queries.chunks(batch::CHUNK).enumerate() {
        // Each chunk is short: the signal is looked for between them, where Python holds the GIL
        // (the copy of a huge batch takes seconds too).
        py.check_signals()?;
        owned.restart(c * batch::CHUNK);
        for (q, query) in (c * batch::CHUNK..).zip(chunk) {
            let lists = outer_items(query, QueryPath(q), shape.what)?;
            check_query_weights(params.weights.as_deref(), q, lists.len(), shape.noun).map_err(to_py_err)?;
            for (i, list) in lists.iter().enumerate() {
                owned.runs.push_run(list, ListPath::of_query(q, i), shape.scored)?;
            }
            owned.end_query();
        }
        each(&mut owned)?;
    }
    Ok(())
}

/// Fuses every query of `queries`, each a sequence of lists shaped as `shape` says.
fn fuse_queries(
    py: Python<'_>,
    queries: &Bound<'_, PyAny>,
    shape: &Shape,
    params: &FuseParams,
    threads: Option<usize>,
) -> PyResult<Vec<Fused>> {
    check_thread_variable(py, threads)?;
    let queries = outer_items(queries, "queries", shape.batch_what)?;
    let mut fusion = ChunkFusion::new(params, threads, queries.len());
    each_chunk(py, &queries, shape, params, |owned| interruptible(py, || fusion.take(owned)))?;
    // With a pool, the GIL is released until every chunk is done.
    Ok(interruptible(py, || fusion.finish())?.into_iter().map(Fused).collect())
}

#[doc = stub_doc!("rrf_batch")]
#[pyfunction]
#[pyo3(signature = (queries, /, *, options = None, threads = None, **kwargs))]
pub(super) fn rrf_batch(
    py: Python<'_>,
    queries: &Bound<'_, PyAny>,
    options: Option<&Bound<'_, PyAny>>,
    #[pyo3(from_py_with = threads_arg)] threads: Option<usize>,
    kwargs: Option<&Bound<'_, PyDict>>,
) -> PyResult<Vec<Fused>> {
    fuse_queries(py, queries, &LISTS, &shape_params("rrf_batch", &LISTS, options, kwargs)?, threads)
}

#[doc = stub_doc!("fuse_batch")]
#[pyfunction]
#[pyo3(signature = (queries, /, *, options = None, threads = None, **kwargs))]
pub(super) fn fuse_batch(
    py: Python<'_>,
    queries: &Bound<'_, PyAny>,
    options: Option<&Bound<'_, PyAny>>,
    #[pyo3(from_py_with = threads_arg)] threads: Option<usize>,
    kwargs: Option<&Bound<'_, PyDict>>,
) -> PyResult<Vec<Fused>> {
    fuse_queries(py, queries, &RUNS, &shape_params("fuse_batch", &RUNS, options, kwargs)?, threads)
}

int_arg!(repeat_arg("repeat") -> usize: 1..);

#[doc = stub_doc!("_kernel_seconds")]
#[pyfunction]
#[pyo3(signature = (queries, /, *, options = None, repeat = 1, **kwargs))]
pub(super) fn _kernel_seconds(
    py: Python<'_>,
    queries: &Bound<'_, PyAny>,
    options: Option<&Bound<'_, PyAny>>,
    #[pyo3(from_py_with = repeat_arg)] repeat: usize,
    kwargs: Option<&Bound<'_, PyDict>>,
) -> PyResult<f64> {
    let params = shape_params("_kernel_seconds", &LISTS, options, kwargs)?;
    let queries = outer_items(queries, "queries", LISTS.batch_what)?;
    let mut total = 0.0;
    each_chunk(py, &queries, &LISTS, &params, |owned| {
        total += interruptible(py, || owned.fuse_seconds(&params, repeat))?;
        Ok(())
    })?;
    Ok(total)
}

#[doc = stub_doc!("default_threads")]
#[pyfunction]
pub(super) fn default_threads(py: Python<'_>) -> PyResult<usize> {
    check_thread_variable(py, None)?;
    Ok(batch::threads_in_effect())
}
