//! `Fused`, the result of one fusion: a core [`FusedList`] that builds Python values on access.

use std::convert::Infallible;

use pyo3::exceptions::{PyIndexError, PyOverflowError};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyList, PyString, PyTuple, PyType};

use super::args::type_name;
use super::to_py_err;
use crate::fused::{self, FusedIds, FusedList, Id};
use crate::fusion;

/// The result of one fusion as the entry points return it; it becomes a [`PyFused`] on its way out.
pub struct Fused(pub(super) FusedList);

// A result holds no Python object and is not tracked by Python's garbage collector (pyo3 makes
// every class a collected type; [`Fused`] untracks each result): tracked results that outlive their
// batch make the collector's full passes walk every input list (ten 10k-query batches kept: 1.2x the
// time with the collector on, 1.0x untracked; `benches/fused_result_cost.py`).
#[doc = stub_doc!("Fused")]
#[pyclass(frozen, module = "fanfuse", name = "Fused", sequence)]
pub struct PyFused(FusedList);

impl<'py> IntoPyObject<'py> for Fused {
    type Target = PyFused;
    type Output = Bound<'py, PyFused>;
    type Error = PyErr;

    fn into_pyobject(self, py: Python<'py>) -> PyResult<Self::Output> {
        let fused = Bound::new(py, PyFused(self.0))?;
        // SAFETY: a live object of a GC type; untracking is what CPython does for its own objects
        // that cannot be part of a cycle (tuples of atomic values), and a `PyFused` refers to nothing.
        unsafe { pyo3::ffi::PyObject_GC_UnTrack(fused.as_ptr().cast()) };
        Ok(fused)
    }
}

impl<'py> IntoPyObject<'py> for Id<'_> {
    type Target = PyAny;
    type Output = Bound<'py, PyAny>;
    type Error = Infallible;

    fn into_pyobject(self, py: Python<'py>) -> Result<Self::Output, Infallible> {
        Ok(match self {
            Id::Str(text) => PyString::new(py, text).into_any(),
            Id::Int(int) => int.into_pyobject(py)?.into_any(),
        })
    }
}

/// `fanfuse.Contribution`, a Python record (not a class of the binding): built only on reading `explain`.
static CONTRIBUTION: PyOnceLock<Py<PyType>> = PyOnceLock::new();

#[pymethods]
impl PyFused {
    #[doc = stub_doc!("Fused.ids")]
    #[getter]
    fn ids<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        match &self.0.ids {
            FusedIds::Str(texts) => PyList::new(py, texts.iter()),
            FusedIds::Int(ints) => PyList::new(py, ints),
        }
    }

    #[doc = stub_doc!("Fused.scores")]
    #[getter]
    fn scores<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        PyList::new(py, &self.0.scores)
    }

    #[doc = stub_doc!("Fused.explain")]
    #[getter]
    fn explain<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyList>>> {
        let Some(explain) = &self.0.explain else { return Ok(None) };
        let contribution = CONTRIBUTION.import(py, "fanfuse._contribution", "Contribution")?;
        let to_py = |c: &fusion::Contribution| {
            contribution.call1((c.list, c.rank, c.item.map(|i| explain.ids.get(i)), c.score, c.contribution))
        };
        let rows = explain
            .hits
            .iter()
            .map(|parts| PyList::new(py, parts.iter().map(to_py).collect::<PyResult<Vec<_>>>()?))
            .collect::<PyResult<Vec<_>>>()?;
        PyList::new(py, rows).map(Some)
    }

    fn __len__(&self) -> usize {
        self.0.len()
    }

    fn __getitem__<'py>(&self, py: Python<'py>, index: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyTuple>> {
        // As for a list: an index beyond the machine's integers is out of range, not an OverflowError.
        let index_value = match index.extract::<isize>() {
            Ok(i) => Some(i),
            Err(error) if error.is_instance_of::<PyOverflowError>(py) => None,
            Err(_) => return Err(to_py_err(fused::index_not_an_int(&type_name(index)))),
        };
        let Some(at) = self.0.position(index_value) else {
            return Err(PyIndexError::new_err(fused::index_out_of_range(index.str()?, self.0.len())));
        };
        (self.0.ids.get(at), self.0.scores[at]).into_pyobject(py)
    }

    fn __iter__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let zip = py.import("builtins")?.getattr("zip")?;
        zip.call1((self.ids(py)?, self.scores(py)?))
    }

    fn __eq__(&self, other: &Bound<'_, PyAny>) -> bool {
        other.cast::<PyFused>().is_ok_and(|other| self.0 == other.get().0)
    }

    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        self.0.repr(|id| Ok(id.into_pyobject(py)?.repr()?.to_string()))
    }
}
