//! `fuse` and `fuse_batch`: every fusion method over ranked or scored runs.

use pyo3::buffer::PyBuffer;
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyInt, PyList, PyString, PyTuple};

use super::args::{number, outer_items, read_1d, type_name};
use super::fused::{fused_to_py, Fused};
use super::ids::{IdsView, ListPath, OwnedIds};
use super::options::{call_options, check_query_weights, check_thread_variable, threads_arg, PyFusionOptions};
use super::{interruptible, to_py_err, FusionError};
use crate::batch;
use crate::error::FusionError as CoreError;
use crate::fusion;
use crate::lists::RankedLists;

/// Runs copied out of Python: the ids (as for `rrf`) and one score per id, NaN where a run has none.
pub(super) struct OwnedRuns {
    ids: OwnedIds,
    scores: Vec<f64>,
}

impl OwnedRuns {
    fn new() -> Self {
        Self { ids: OwnedIds::new(), scores: Vec::new() }
    }

    /// Appends one run: ids best first, `(id, score)` pairs, or an `(ids, scores)` pair of sequences.
    fn push_run(&mut self, run: &Bound<'_, PyAny>, path: ListPath) -> PyResult<()> {
        if let Some((ids, scores)) = as_ids_and_scores(run)? {
            self.ids.push_list(&ids, path)?;
            let expected = self.ids.len() - self.scores.len();
            self.push_scores(&scores, path, expected)?;
        } else if starts_with_pair(run) {
            for (pos, pair) in outer_items(run, path.to_string(), "(id, score) pairs")?.iter().enumerate() {
                let pair = pair.cast::<PyTuple>().ok().filter(|t| t.len() == 2).ok_or_else(|| {
                    PyTypeError::new_err(format!(
                        "{path}[{pos}] is a {} but the run started with (id, score) pairs; give every hit as a pair",
                        type_name(pair)
                    ))
                })?;
                self.ids.push_id(&pair.get_item(0)?, path, pos)?;
                self.scores.push(parse_score(&pair.get_item(1)?, || format!("{path}[{pos}][1]"))?);
            }
            self.ids.bounds.push(self.ids.len());
        } else {
            self.ids.push_list(run, path)?;
            self.scores.resize(self.ids.len(), f64::NAN);
        }
        Ok(())
    }

    fn push_scores(&mut self, scores: &Bound<'_, PyAny>, path: ListPath, expected: usize) -> PyResult<()> {
        let before = self.scores.len();
        if let Ok(buf) = PyBuffer::<f64>::get(scores) {
            let values = read_1d(scores.py(), &buf, path)?;
            for (pos, v) in values.into_iter().enumerate() {
                self.scores.push(check_score(v, || format!("{path} scores[{pos}]"))?);
            }
        } else {
            let items = outer_items(scores, format!("{path} scores"), "numbers (one per id)")?;
            for (pos, v) in items.iter().enumerate() {
                self.scores.push(parse_score(v, || format!("{path} scores[{pos}]"))?);
            }
        }
        let got = self.scores.len() - before;
        if got != expected {
            return Err(FusionError::new_err(format!(
                "{path} has {expected} ids but {got} scores; give one score per id"
            )));
        }
        Ok(())
    }

    /// Scores for the kernel: `None` when no run has any, so rank methods never look at them.
    fn scores(&self) -> Option<&[f64]> {
        self.scores.iter().any(|s| !s.is_nan()).then_some(self.scores.as_slice())
    }
}

/// `(ids, scores)`: a 2-tuple whose first element is itself a sequence or array (not an id).
pub(super) fn as_ids_and_scores<'py>(
    run: &Bound<'py, PyAny>,
) -> PyResult<Option<(Bound<'py, PyAny>, Bound<'py, PyAny>)>> {
    let Ok(tuple) = run.cast::<PyTuple>() else { return Ok(None) };
    if tuple.len() != 2 {
        return Ok(None);
    }
    let first = tuple.get_item(0)?;
    // NumPy arrays have `__index__` too (it raises); an id scalar has no length.
    let is_id = first.is_instance_of::<PyString>()
        || first.is_instance_of::<PyInt>()
        || (first.hasattr("__index__")? && first.len().is_err());
    if is_id || first.is_instance_of::<PyTuple>() {
        return Ok(None);
    }
    Ok(Some((first, tuple.get_item(1)?)))
}

/// A list or tuple whose first element is a tuple: a run of `(id, score)` pairs.
pub(super) fn starts_with_pair(run: &Bound<'_, PyAny>) -> bool {
    let first = if let Ok(list) = run.cast::<PyList>() {
        list.iter().next()
    } else if let Ok(tuple) = run.cast::<PyTuple>() {
        tuple.iter().next()
    } else {
        None
    };
    first.is_some_and(|f| f.is_instance_of::<PyTuple>())
}

pub(super) fn parse_score(value: &Bound<'_, PyAny>, path: impl Fn() -> String) -> PyResult<f64> {
    check_score(number(value, &path)?, path)
}

pub(super) fn check_score(v: f64, path: impl FnOnce() -> String) -> PyResult<f64> {
    if v.is_finite() {
        Ok(v)
    } else {
        Err(FusionError::new_err(format!(
            "{} is {v}; scores must be finite numbers (drop the hit or give it a real score)",
            path()
        )))
    }
}

/// Content keys copied out of `content_keys=`: one key list per run, aligned with its ids.
pub(super) fn parse_content_keys(keys: &Bound<'_, PyAny>, runs: &OwnedRuns) -> PyResult<OwnedIds> {
    let lists = outer_items(keys, "content_keys", "key lists (one per run, aligned with its ids)")?;
    let n_runs = runs.ids.bounds.len() - 1;
    if lists.len() != n_runs {
        return Err(FusionError::new_err(format!(
            "content_keys has {} lists but there are {n_runs} runs; give one key list per run, aligned with its ids",
            lists.len()
        )));
    }
    let mut owned = OwnedIds::new();
    for (i, list) in lists.iter().enumerate() {
        owned.push_list(list, ListPath { root: "content_keys", query: None, list: i })?;
        let (want, got) = (runs.ids.bounds[i + 1] - runs.ids.bounds[i], owned.bounds[i + 1] - owned.bounds[i]);
        if want != got {
            return Err(FusionError::new_err(format!(
                "content_keys[{i}] has {got} keys but runs[{i}] has {want} ids; give one key per id"
            )));
        }
    }
    Ok(owned)
}

/// Runs the general kernel on `ids` (already canonicalised by content key where asked).
pub(super) fn fuse_ids<T: crate::keys::FusionKey>(
    ids: &[T],
    owned: &OwnedRuns,
    params: &fusion::FuseParams,
) -> Result<fusion::Fusion, CoreError> {
    fusion::fuse(&fusion::ScoredLists { ids: RankedLists::new(ids, &owned.ids.bounds), scores: owned.scores() }, params)
}

/// Fuses ids, merging ids of equal content key first when keys are given.
pub(super) fn fuse_keyed<T: crate::keys::FusionKey>(
    ids: &[T],
    keys: Option<&IdsView<'_>>,
    owned: &OwnedRuns,
    params: &fusion::FuseParams,
) -> Result<fusion::Fusion, CoreError> {
    match keys {
        None => fuse_ids(ids, owned, params),
        Some(IdsView::Str(k)) => fuse_ids(&fusion::canonical_ids(ids, k), owned, params),
        Some(IdsView::Int(k)) => fuse_ids(&fusion::canonical_ids(ids, k), owned, params),
    }
}

/// Every fusion method over ids with optional scores. See `_core.pyi` for the documentation.
#[pyfunction]
#[pyo3(signature = (runs, /, *, options = None, content_keys = None, **kwargs))]
pub(super) fn fuse(
    py: Python<'_>,
    runs: &Bound<'_, PyAny>,
    options: Option<&Bound<'_, PyFusionOptions>>,
    content_keys: Option<&Bound<'_, PyAny>>,
    kwargs: Option<&Bound<'_, PyDict>>,
) -> PyResult<Fused> {
    let params = call_options("fuse", options, kwargs, |_| true)?.fuse_params().map_err(to_py_err)?;
    let mut owned = OwnedRuns::new();
    for (i, run) in outer_items(runs, "runs", "runs (ranked id lists, or (id, score) pairs)")?.iter().enumerate() {
        owned.push_run(run, ListPath { root: "runs", query: None, list: i })?;
    }
    let keys = content_keys.map(|keys| parse_content_keys(keys, &owned)).transpose()?;
    let keys_view = keys.as_ref().map(OwnedIds::view);
    let view = owned.ids.view();
    let fusion = interruptible(py, || match &view {
        IdsView::Str(strs) => fuse_keyed(strs, keys_view.as_ref(), &owned, &params),
        IdsView::Int(ints) => fuse_keyed(ints, keys_view.as_ref(), &owned, &params),
    })?;
    fused_to_py(py, &owned.ids, &view, &fusion)
}

/// `fuse` over many queries in one call. See `_core.pyi` for the documentation.
#[pyfunction]
#[pyo3(signature = (queries, /, *, options = None, threads = None, **kwargs))]
pub(super) fn fuse_batch(
    py: Python<'_>,
    queries: &Bound<'_, PyAny>,
    options: Option<&Bound<'_, PyFusionOptions>>,
    #[pyo3(from_py_with = threads_arg)] threads: Option<usize>,
    kwargs: Option<&Bound<'_, PyDict>>,
) -> PyResult<Vec<Fused>> {
    let params = call_options("fuse_batch", options, kwargs, |_| true)?.fuse_params().map_err(to_py_err)?;
    check_thread_variable(py, threads)?;
    let mut owned = OwnedRuns::new();
    // query_lists[q]..=query_lists[q + 1] is the window of the bounds that holds query q's runs.
    let mut query_lists = vec![0_usize];
    for (q, query) in outer_items(queries, "queries", "queries (each a sequence of runs)")?.iter().enumerate() {
        let runs = outer_items(query, format!("queries[{q}]"), "runs")?;
        check_query_weights(params.weights.as_deref(), q, runs.len(), "run")?;
        for (i, run) in runs.iter().enumerate() {
            owned.push_run(run, ListPath { root: "queries", query: Some(q), list: i })?;
        }
        query_lists.push(owned.ids.bounds.len() - 1);
    }
    let view = owned.ids.view();
    let scores = owned.scores();
    let windows: Vec<(usize, &[usize])> =
        query_lists.windows(2).enumerate().map(|(q, w)| (q, &owned.ids.bounds[w[0]..=w[1]])).collect();
    let results = interruptible(py, || {
        let one = |&(q, bounds): &(usize, &[usize])| {
            let fused = match &view {
                IdsView::Str(strs) => {
                    fusion::fuse(&fusion::ScoredLists { ids: RankedLists::new(strs, bounds), scores }, &params)
                }
                IdsView::Int(ints) => {
                    fusion::fuse(&fusion::ScoredLists { ids: RankedLists::new(ints, bounds), scores }, &params)
                }
            };
            // Name the query in the message: the core only knows the run's index within it.
            fused.map_err(|e| CoreError::invalid(format!("queries[{q}]: {e}")))
        };
        batch::map_queries(&windows, threads, one)?.into_iter().collect::<Result<Vec<_>, _>>()
    })?;
    results.iter().map(|fusion| fused_to_py(py, &owned.ids, &view, fusion)).collect()
}
