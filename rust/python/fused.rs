//! The result types: `Fused` (ids and scores, best first) and `Contribution` (explain).

use pyo3::exceptions::{PyIndexError, PyOverflowError, PyTypeError};
use pyo3::prelude::*;
use pyo3::types::{PyList, PyString, PyTuple};

use super::args::type_name;
use super::ids::{IdKind, OwnedIds};
use crate::fusion;
use crate::rrf::FusedEntry;

/// Fused ids, owned: str ids as the Python strs returned, int ids as plain integers.
pub(super) enum FusedIds {
    Str(Vec<Py<PyString>>),
    Int(Vec<i64>),
}

/// The result of one fusion: fused ids and their scores, aligned, best first.
///
/// It keeps Rust vectors, not Python lists, and is not tracked by Python's garbage collector: with
/// two lists per result, a 10k-query batch created 20k tracked containers, which triggered full
/// collections walking every input list (~15% of the batch). `ids`, `scores` and `explain` build fresh lists.
#[pyclass(frozen, module = "fanfuse", name = "Fused", sequence)]
pub struct Fused {
    ids: FusedIds,
    scores: Vec<f64>,
    /// Per-hit contributions (`fuse(..., explain=True)`), else None.
    explain: Option<Explained>,
}

impl Fused {
    /// `entries` index the ids of `ids` (as [`OwnedIds::fuse`] returns them).
    fn build(py: Python<'_>, ids: &OwnedIds, entries: &[FusedEntry]) -> Self {
        let fused_ids = if ids.kind_is(IdKind::Str) {
            FusedIds::Str(entries.iter().map(|e| PyString::new(py, ids.str_at(e.item)).unbind()).collect())
        } else {
            FusedIds::Int(entries.iter().map(|e| ids.ints[e.item]).collect())
        };
        Self { ids: fused_ids, scores: entries.iter().map(|e| e.score).collect(), explain: None }
    }

    fn id<'py>(&self, py: Python<'py>, at: usize) -> PyResult<Bound<'py, PyAny>> {
        Ok(match &self.ids {
            FusedIds::Str(strs) => strs[at].bind(py).clone().into_any(),
            FusedIds::Int(ints) => ints[at].into_pyobject(py)?.into_any(),
        })
    }
}

#[pymethods]
impl Fused {
    /// Fused ids, best first (str or int, like the input).
    #[getter]
    fn ids<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        match &self.ids {
            FusedIds::Str(strs) => PyList::new(py, strs.iter().map(|s| s.bind(py))),
            FusedIds::Int(ints) => PyList::new(py, ints),
        }
    }

    /// Fused scores, aligned with `ids`.
    #[getter]
    fn scores<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        PyList::new(py, &self.scores)
    }

    /// With `fuse(..., explain=True)`: one list of `Contribution`s per hit, aligned with `ids`; else None.
    #[getter]
    fn explain<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyList>>> {
        let Some(explain) = &self.explain else { return Ok(None) };
        let rows =
            explain.iter().map(|row| PyList::new(py, row.iter().map(|c| c.bind(py)))).collect::<PyResult<Vec<_>>>()?;
        PyList::new(py, rows).map(Some)
    }

    fn __len__(&self) -> usize {
        self.scores.len()
    }

    fn __getitem__<'py>(&self, py: Python<'py>, index: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyTuple>> {
        let len = self.__len__();
        // As for a list: an index beyond the machine's integers is out of range, not an OverflowError.
        let at = match index.extract::<isize>() {
            Ok(i) if i < 0 => len.checked_sub(i.unsigned_abs()),
            Ok(i) => Some(i.unsigned_abs()),
            Err(error) if error.is_instance_of::<PyOverflowError>(py) => None,
            Err(_) => {
                return Err(PyTypeError::new_err(format!("Fused indices must be integers, not {}", type_name(index))))
            }
        };
        let Some(at) = at.filter(|&at| at < len) else {
            return Err(PyIndexError::new_err(format!("Fused index {} out of range for {len} hits", index.str()?)));
        };
        PyTuple::new(py, [self.id(py, at)?, self.scores[at].into_pyobject(py)?.into_any()])
    }

    fn __iter__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let zip = py.import("builtins")?.getattr("zip")?;
        zip.call1((self.ids(py)?, self.scores(py)?))
    }

    #[allow(clippy::float_cmp)] // equal results have bit-identical scores (the contract sums in one order)
    fn __eq__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<bool> {
        let Ok(other) = other.cast::<Fused>() else { return Ok(false) };
        let other = other.get();
        if self.scores != other.scores {
            return Ok(false);
        }
        match (&self.ids, &other.ids) {
            (FusedIds::Int(a), FusedIds::Int(b)) => Ok(a == b),
            (FusedIds::Str(a), FusedIds::Str(b)) => {
                for (x, y) in a.iter().zip(b) {
                    if !x.bind(py).as_any().eq(y.bind(py))? {
                        return Ok(false);
                    }
                }
                Ok(true)
            }
            // An empty result has no id kind: [] == [] whatever the input was.
            _ => Ok(self.scores.is_empty()),
        }
    }

    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        let shown = self.__len__().min(5);
        let mut pairs = Vec::with_capacity(shown);
        for i in 0..shown {
            pairs.push(format!("({}, {:.6})", self.id(py, i)?.repr()?, self.scores[i]));
        }
        let more = self.__len__() - shown;
        let tail = if more > 0 { format!(", … {more} more") } else { String::new() };
        Ok(format!("Fused([{}{tail}])", pairs.join(", ")))
    }
}

/// One list's part in one fused hit (`Fused.explain`); the fields are documented in `_core.pyi`.
#[pyclass(frozen, get_all, module = "fanfuse", name = "Contribution")]
pub struct PyContribution {
    list: usize,
    rank: Option<u32>,
    id: Option<Py<PyAny>>,
    score: Option<f64>,
    contribution: f64,
}

#[pymethods]
impl PyContribution {
    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        let id = match &self.id {
            Some(id) => id.bind(py).repr()?.to_string(),
            None => "None".into(),
        };
        let rank = self.rank.map_or_else(|| "None".into(), |r| r.to_string());
        let score = self.score.map_or_else(|| "None".into(), |s| s.to_string());
        Ok(format!(
            "Contribution(list={}, rank={rank}, id={id}, score={score}, contribution={})",
            self.list, self.contribution
        ))
    }
}

/// Per hit, its contributions as (immutable) Python objects; `Fused.explain` puts them in fresh lists.
pub(super) type Explained = Vec<Vec<Py<PyContribution>>>;

fn explain_to_py(py: Python<'_>, ids: &OwnedIds, explain: &[Vec<fusion::Contribution>]) -> PyResult<Explained> {
    let id_at = |item: usize| -> PyResult<Py<PyAny>> {
        Ok(if ids.kind_is(IdKind::Str) {
            PyString::new(py, ids.str_at(item)).into_any().unbind()
        } else {
            ids.ints[item].into_pyobject(py)?.into_any().unbind()
        })
    };
    explain
        .iter()
        .map(|parts| {
            parts
                .iter()
                .map(|c| {
                    let id = c.item.map(id_at).transpose()?;
                    let contribution = PyContribution {
                        list: c.list as usize,
                        rank: c.rank,
                        id,
                        score: c.score,
                        contribution: c.contribution,
                    };
                    Py::new(py, contribution)
                })
                .collect()
        })
        .collect()
}

/// Builds the Python result of one fusion whose entries index the ids of `ids`.
pub(super) fn fused_to_py(py: Python<'_>, ids: &OwnedIds, fusion: &fusion::Fusion) -> PyResult<Fused> {
    let mut fused = Fused::build(py, ids, &fusion.hits);
    fused.explain = fusion.explain.as_deref().map(|e| explain_to_py(py, ids, e)).transpose()?;
    Ok(fused)
}
