//! `train_fusion` and the `FusionModel` it returns: its fields, JSON in and out.

use std::sync::Arc;

use pyo3::prelude::*;

use super::args::int_in;
use super::runs::{PyQrels, PyRun};
use super::{interruptible, to_py_err};
use crate::fusion::{TrainedMethod, TrainedModel};
use crate::runs::train::{self, TrainSizes};

/// A fusion model trained on qrels; fuse with `fuse_runs(runs, model=model)`.
#[pyclass(frozen, eq, module = "fanfuse", name = "FusionModel")]
#[derive(PartialEq)]
pub struct PyFusionModel {
    pub(super) inner: Arc<TrainedModel>,
}

#[pymethods]
impl PyFusionModel {
    #[getter]
    fn method(&self) -> &'static str {
        self.inner.method.name()
    }

    #[getter]
    fn runs(&self) -> usize {
        self.inner.tables.len()
    }

    #[getter]
    fn segments(&self) -> Option<usize> {
        self.inner.segments
    }

    #[getter]
    fn window(&self) -> Option<usize> {
        self.inner.window
    }

    #[getter]
    fn tables(&self) -> Vec<Vec<f64>> {
        self.inner.tables.clone()
    }

    fn to_json(&self) -> String {
        self.inner.to_json()
    }

    #[staticmethod]
    #[pyo3(signature = (text, /))]
    fn from_json(text: &str) -> PyResult<Self> {
        Ok(Self { inner: Arc::new(TrainedModel::from_json(text).map_err(to_py_err)?) })
    }

    #[pyo3(signature = (path, /))]
    fn save(&self, py: Python<'_>, path: &str) -> PyResult<()> {
        interruptible(py, || self.inner.save(path))
    }

    #[staticmethod]
    #[pyo3(signature = (path, /))]
    fn load(py: Python<'_>, path: &str) -> PyResult<Self> {
        Ok(Self { inner: Arc::new(interruptible(py, || TrainedModel::load(path))?) })
    }

    fn __repr__(&self) -> String {
        self.inner.describe()
    }
}

/// Trains a fusion method on runs and qrels. See `_core.pyi`.
#[pyfunction]
#[pyo3(signature = (runs, qrels, /, *, method, segments = None, window = None))]
#[allow(clippy::needless_pass_by_value)] // pyo3 extracts arguments as owned values
pub(super) fn train_fusion(
    py: Python<'_>,
    runs: Vec<PyRef<'_, PyRun>>,
    qrels: PyRef<'_, PyQrels>,
    method: &str,
    segments: Option<Bound<'_, PyAny>>,
    window: Option<Bound<'_, PyAny>>,
) -> PyResult<PyFusionModel> {
    let method: TrainedMethod = method.parse().map_err(to_py_err)?;
    let size = |what: &str, value: Option<Bound<'_, PyAny>>, low: usize| -> PyResult<Option<usize>> {
        let (accepted, range) = train::size_accepted(low);
        let range = i128::try_from(*range.start()).unwrap_or(0)..=i128::try_from(*range.end()).unwrap_or(i128::MAX);
        value.map(|v| int_in(&v, what, &accepted, range)).transpose()
    };
    let sizes = TrainSizes { segments: size("segments", segments, 1)?, window: size("window", window, 0)? };
    let owned: Vec<Arc<crate::runs::Run>> = runs.iter().map(|r| Arc::clone(&r.inner)).collect();
    let qrels = Arc::clone(&qrels.inner);
    let model = interruptible(py, || train::train(method, &owned, &qrels, sizes))?;
    Ok(PyFusionModel { inner: Arc::new(model) })
}
