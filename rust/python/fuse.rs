//! `rrf` and `fuse`: the lists or runs of one query read out of Python (ids, and scores where given),
//! fused by the core.

use pyo3::prelude::*;
use pyo3::types::{PyDict, PyInt, PyList, PyString, PyTuple};

use super::args::{float_buffer, number, outer_items, read_1d, type_name};
use super::fused::Fused;
use super::options::{call_options, refused};
use super::{interruptible, to_py_err};
use crate::fusion;
use crate::owned_ids::{ListPath, OwnedIds, OwnedRuns, Shape, LISTS, RUNS};

impl OwnedRuns {
    /// Appends one run: ids best first, or (`scored`) also `(id, score)` pairs or an `(ids, scores)`
    /// pair of sequences.
    pub(super) fn push_run(&mut self, run: &Bound<'_, PyAny>, path: ListPath, scored: bool) -> PyResult<()> {
        if !scored {
            // Lists without scores keep `scores` empty: nothing to fill, nothing to scan.
            return self.ids.push_list(run, path);
        }
        if let Some((ids, scores)) = as_ids_and_scores(run)? {
            self.ids.push_list(&ids, path)?;
            self.push_py_scores(&scores, path)?;
            self.check_last_run_scores(path).map_err(to_py_err)?;
        } else if starts_with_pair(run) {
            for (pos, pair) in outer_items(run, path.to_string(), "(id, score) pairs")?.iter().enumerate() {
                let Some(pair) = pair.cast::<PyTuple>().ok().filter(|t| t.len() == 2) else {
                    return Err(to_py_err(path.not_a_pair(pos, &type_name(pair))));
                };
                self.ids.push_id(&pair.get_item(0)?, path, pos)?;
                self.push_py_score(&pair.get_item(1)?, || format!("{path}[{pos}][1]"))?;
            }
            self.ids.bounds.push(self.ids.len());
        } else {
            self.ids.push_list(run, path)?;
            self.scores.resize(self.ids.len(), f64::NAN);
        }
        Ok(())
    }

    fn push_py_scores(&mut self, scores: &Bound<'_, PyAny>, path: ListPath) -> PyResult<()> {
        if let Some(buf) = float_buffer(scores) {
            self.push_scores(&read_1d(scores.py(), &buf, path)?, path).map_err(to_py_err)?;
        } else {
            let items = outer_items(scores, format!("{path} scores"), "numbers (one per id)")?;
            for (pos, v) in items.iter().enumerate() {
                self.push_py_score(v, || format!("{path} scores[{pos}]"))?;
            }
        }
        Ok(())
    }

    fn push_py_score(&mut self, value: &Bound<'_, PyAny>, path: impl Fn() -> String) -> PyResult<()> {
        self.push_score(number(value, &path)?, path).map_err(to_py_err)
    }
}

/// `(ids, scores)`: a 2-tuple whose first element is itself a sequence or array (not an id).
fn as_ids_and_scores<'py>(run: &Bound<'py, PyAny>) -> PyResult<Option<(Bound<'py, PyAny>, Bound<'py, PyAny>)>> {
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
fn starts_with_pair(run: &Bound<'_, PyAny>) -> bool {
    let first = if let Ok(list) = run.cast::<PyList>() {
        list.iter().next()
    } else if let Ok(tuple) = run.cast::<PyTuple>() {
        tuple.iter().next()
    } else {
        None
    };
    first.is_some_and(|f| f.is_instance_of::<PyTuple>())
}

/// Content keys copied out of `content_keys=`: one key list per run, aligned with its ids.
fn parse_content_keys(keys: &Bound<'_, PyAny>, runs: &OwnedRuns) -> PyResult<OwnedIds> {
    let lists = outer_items(keys, "content_keys", "key lists (one per run, aligned with its ids)")?;
    runs.check_key_lists(lists.len()).map_err(to_py_err)?;
    let mut owned = OwnedIds::new();
    for (i, list) in lists.iter().enumerate() {
        owned.push_list(list, ListPath::of_call("content_keys", i))?;
        runs.check_key_list(&owned, i).map_err(to_py_err)?;
    }
    Ok(owned)
}

/// Fuses the lists of one query (`content_keys`: one key list per run, aligned with its ids).
fn fuse_one(
    py: Python<'_>,
    runs: &Bound<'_, PyAny>,
    shape: &Shape,
    content_keys: Option<&Bound<'_, PyAny>>,
    params: &fusion::FuseParams,
) -> PyResult<Fused> {
    let mut owned = OwnedRuns::new();
    for (i, run) in outer_items(runs, shape.root, shape.what)?.iter().enumerate() {
        owned.push_run(run, ListPath::of_call(shape.root, i), shape.scored)?;
    }
    let keys = content_keys.map(|keys| parse_content_keys(keys, &owned)).transpose()?;
    Ok(Fused(interruptible(py, || owned.fuse_list(keys.as_ref(), params, shape.noun))?))
}

/// The options of a call to `entry` over lists of `shape`, checked now: a bad one fails even for an
/// empty batch.
pub(super) fn shape_params(
    entry: &str,
    shape: &Shape,
    options: Option<&Bound<'_, PyAny>>,
    kwargs: Option<&Bound<'_, PyDict>>,
) -> PyResult<fusion::FuseParams> {
    call_options(entry, options, kwargs, |name| shape.reads(name))?.fuse_params().map_err(refused)
}

#[doc = stub_doc!("rrf")]
#[pyfunction]
#[pyo3(signature = (lists, /, *, options = None, **kwargs))]
pub(super) fn rrf(
    py: Python<'_>,
    lists: &Bound<'_, PyAny>,
    options: Option<&Bound<'_, PyAny>>,
    kwargs: Option<&Bound<'_, PyDict>>,
) -> PyResult<Fused> {
    fuse_one(py, lists, &LISTS, None, &shape_params("rrf", &LISTS, options, kwargs)?)
}

#[doc = stub_doc!("fuse")]
#[pyfunction]
#[pyo3(signature = (runs, /, *, options = None, content_keys = None, **kwargs))]
pub(super) fn fuse(
    py: Python<'_>,
    runs: &Bound<'_, PyAny>,
    options: Option<&Bound<'_, PyAny>>,
    content_keys: Option<&Bound<'_, PyAny>>,
    kwargs: Option<&Bound<'_, PyDict>>,
) -> PyResult<Fused> {
    fuse_one(py, runs, &RUNS, content_keys, &shape_params("fuse", &RUNS, options, kwargs)?)
}
