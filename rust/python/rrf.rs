//! `rrf` and `rrf_batch`: Reciprocal Rank Fusion of ranked id lists, one query or many.

use std::fmt;
use std::sync::mpsc::RecvTimeoutError;
use std::sync::Arc;

use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use pyo3::types::PyDict;

use super::args::outer_items;
use super::fused::Fused;
use super::ids::{ListPath, OwnedIds};
use super::options::{call_options, check_query_weights, check_thread_variable, threads_arg, PyFusionOptions};
use super::{interruptible, to_py_err};
use crate::batch;
use crate::error::FusionError as CoreError;
use crate::rrf::{FusedEntry, RrfParams};

/// Weighted Reciprocal Rank Fusion of ranked id lists. See `_core.pyi` for the documentation.
#[pyfunction]
#[pyo3(signature = (lists, /, *, options = None, **kwargs))]
pub(super) fn rrf(
    py: Python<'_>,
    lists: &Bound<'_, PyAny>,
    options: Option<&Bound<'_, PyFusionOptions>>,
    kwargs: Option<&Bound<'_, PyDict>>,
) -> PyResult<Fused> {
    let params = rrf_params("rrf", options, kwargs)?;
    let mut ids = OwnedIds::new();
    for (i, list) in outer_items(lists, "lists", "ranked id lists")?.iter().enumerate() {
        ids.push_list(list, ListPath { root: "lists", query: None, list: i })?;
    }
    let entries = interruptible(py, || ids.fuse(&ids.bounds, &params))?;
    Ok(Fused::build(py, &ids, &entries))
}

/// The options of Reciprocal Rank Fusion, checked now: a bad one fails even for an empty batch.
fn rrf_params(
    entry: &str,
    options: Option<&Bound<'_, PyFusionOptions>>,
    kwargs: Option<&Bound<'_, PyDict>>,
) -> PyResult<RrfParams> {
    let options = call_options(entry, options, kwargs, |name| crate::fusion::RRF_OPTIONS.contains(&name))?;
    let params = options.rrf_params().map_err(to_py_err)?;
    params.validate(params.weights.as_ref().map_or(0, Vec::len)).map_err(to_py_err)?;
    Ok(params)
}

/// A batch copied into Rust: all ids, and per query the window of `ids.bounds` holding its lists.
pub(super) struct OwnedBatch {
    ids: OwnedIds,
    /// Query q's lists are delimited by `ids.bounds[query_lists[q]..=query_lists[q + 1]]`.
    query_lists: Vec<usize>,
}

impl OwnedBatch {
    fn new() -> Self {
        Self { ids: OwnedIds::new(), query_lists: vec![0] }
    }

    /// An empty chunk that continues this one: the same id kind is required.
    fn next_chunk(&self) -> Self {
        let mut next = Self::new();
        next.ids.kind.clone_from(&self.ids.kind);
        next
    }

    /// Replaces the contents with `queries` (a slice of the whole batch that starts at query number
    /// `first`), reusing the buffers: fresh ones per chunk cost a page fault every 4 KiB.
    fn refill(&mut self, queries: &[Bound<'_, PyAny>], first: usize, params: &RrfParams) -> PyResult<()> {
        let Self { ids, query_lists } = self;
        ids.clear();
        query_lists.clear();
        query_lists.push(0);
        for (q, query) in (first..).zip(queries) {
            let lists = outer_items(query, QueryPath(q), "ranked id lists")?;
            check_query_weights(params.weights.as_deref(), q, lists.len(), "list")?;
            for (i, list) in lists.iter().enumerate() {
                ids.push_list(list, ListPath { root: "queries", query: Some(q), list: i })?;
            }
            query_lists.push(ids.bounds.len() - 1);
        }
        Ok(())
    }

    fn query_bounds(&self, q: usize) -> &[usize] {
        &self.ids.bounds[self.query_lists[q]..=self.query_lists[q + 1]]
    }

    fn len(&self) -> usize {
        self.query_lists.len() - 1
    }

    /// Every query fused, in order, with the GIL released by the caller.
    fn fuse(&self, params: &RrfParams, threads: Option<usize>) -> Result<Vec<Vec<FusedEntry>>, CoreError> {
        let queries: Vec<usize> = (0..self.len()).collect();
        batch::map_queries(&queries, threads, |&q| self.ids.fuse(self.query_bounds(q), params))?.into_iter().collect()
    }
}

/// A chunk of a batch, and its fused queries.
pub(super) type FusedChunk = (OwnedBatch, Result<Vec<Vec<FusedEntry>>, CoreError>);

/// `queries[q]` in error messages, formatted only when an error needs it.
pub(super) struct QueryPath(usize);

impl fmt::Display for QueryPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "queries[{}]", self.0)
    }
}

/// RRF of many queries in one call. See `_core.pyi` for the documentation.
#[pyfunction]
#[pyo3(signature = (queries, /, *, options = None, threads = None, **kwargs))]
pub(super) fn rrf_batch(
    py: Python<'_>,
    queries: &Bound<'_, PyAny>,
    options: Option<&Bound<'_, PyFusionOptions>>,
    #[pyo3(from_py_with = threads_arg)] threads: Option<usize>,
    kwargs: Option<&Bound<'_, PyDict>>,
) -> PyResult<Vec<Fused>> {
    let params = rrf_params("rrf_batch", options, kwargs)?;
    check_thread_variable(py, threads)?;
    let queries = outer_items(queries, "queries", "queries (each a sequence of ranked id lists)")?;
    let mut fused = Vec::with_capacity(queries.len());
    let Some(pool) = batch::pool_for(threads, queries.len()) else {
        // Chunk by chunk, so that the ids copied out of Python are fused while still in cache.
        let mut owned = OwnedBatch::new();
        for (c, chunk) in queries.chunks(batch::CHUNK).enumerate() {
            // Each chunk is short: the signal is looked for between them, where Python holds the GIL.
            py.check_signals()?;
            owned.refill(chunk, c * batch::CHUNK, &params)?;
            let entries = interruptible(py, || owned.fuse(&params, Some(1)))?;
            fused.extend(entries.iter().map(|e| Fused::build(py, &owned.ids, e)));
        }
        return Ok(fused);
    };
    // A pipeline: this thread copies chunk c + 1 out of Python (that needs the GIL) while the pool
    // fuses chunk c; then it releases the GIL until every chunk is done.
    let params = Arc::new(params);
    let (sender, receiver) = std::sync::mpsc::channel();
    let mut n_chunks = 0;
    let mut owned = OwnedBatch::new();
    for (c, chunk) in queries.chunks(batch::CHUNK).enumerate() {
        py.check_signals()?; // the copy of a huge batch takes seconds too
        owned.refill(chunk, c * batch::CHUNK, &params)?;
        let next = owned.next_chunk(); // the pool takes `owned`; `next` keeps its id kind
        let (sender, params) = (sender.clone(), Arc::clone(&params));
        pool.spawn(move || {
            let entries = owned.fuse(&params, Some(1));
            drop(sender.send((c, owned, entries))); // fails only if the call already returned an error
        });
        owned = next;
        n_chunks += 1;
    }
    drop(sender);
    let mut done: Vec<Option<FusedChunk>> = (0..n_chunks).map(|_| None).collect();
    let slots = &mut done;
    interruptible(py, move || {
        let mut waiting = n_chunks;
        while waiting > 0 {
            match receiver.recv_timeout(crate::interrupt::POLL_INTERVAL) {
                Ok((c, owned, entries)) => {
                    slots[c] = Some((owned, entries));
                    waiting -= 1;
                }
                Err(RecvTimeoutError::Timeout) => crate::interrupt::checkpoint()?,
                Err(RecvTimeoutError::Disconnected) => break, // a worker failed: reported below
            }
        }
        Ok(())
    })?;
    for chunk in done {
        let (owned, entries) = chunk.ok_or_else(|| PyRuntimeError::new_err("a fanfuse worker thread failed"))?;
        fused.extend(entries.map_err(to_py_err)?.iter().map(|e| Fused::build(py, &owned.ids, e)));
    }
    Ok(fused)
}

/// Seconds the bare kernel takes for the batch on one thread: no copying out of Python, no result
/// objects. Like `rrf_batch`, it copies 64 queries at a time, then times the kernel on that chunk
/// (best of `repeat`, so with warm caches, as `rrf_batch` sees them) and sums over the chunks.
/// The benchmarks compare `rrf_batch` with it. Not public API.
#[pyfunction]
#[pyo3(signature = (queries, /, *, options = None, repeat = 1, **kwargs))]
pub(super) fn _kernel_seconds(
    py: Python<'_>,
    queries: &Bound<'_, PyAny>,
    options: Option<&Bound<'_, PyFusionOptions>>,
    repeat: usize,
    kwargs: Option<&Bound<'_, PyDict>>,
) -> PyResult<f64> {
    let params = rrf_params("_kernel_seconds", options, kwargs)?;
    let queries = outer_items(queries, "queries", "queries (each a sequence of ranked id lists)")?;
    let mut total = 0.0;
    let mut owned = OwnedBatch::new();
    for (c, chunk) in queries.chunks(batch::CHUNK).enumerate() {
        py.check_signals()?; // the copy of a huge batch takes seconds too
        owned.refill(chunk, c * batch::CHUNK, &params)?;
        total += interruptible(py, || {
            let mut best = f64::INFINITY;
            for _ in 0..repeat.max(1) {
                let start = std::time::Instant::now();
                let fused = owned.fuse(&params, Some(1))?;
                best = best.min(start.elapsed().as_secs_f64());
                drop(std::hint::black_box(fused));
            }
            Ok(best)
        })?;
    }
    Ok(total)
}

/// Threads a batch uses by default (`FANFUSE_NUM_THREADS`, else 1; always 1 in a forked child).
#[pyfunction]
pub(super) fn default_threads(py: Python<'_>) -> PyResult<usize> {
    check_thread_variable(py, None)?;
    Ok(if batch::in_forked_child() { 1 } else { batch::default_threads() })
}
