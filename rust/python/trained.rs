//! Trained fusion: `train_fusion` and the `FusionModel` it returns (JSON in and out).

use std::io::Write;
use std::sync::Arc;

use pyo3::prelude::*;

use super::args::int_in;
use super::runs::{PyQrels, PyRun};
use super::{detached, interruptible, to_py_err, FusionError};
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

    /// How many runs the model fuses (one table each, in training order).
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

    /// Writes the model's JSON to `path` atomically (a temporary file renamed into place).
    #[pyo3(signature = (path, /))]
    fn save(&self, py: Python<'_>, path: &str) -> PyResult<()> {
        let text = self.inner.to_json();
        interruptible(py, || {
            let mut out = crate::output::OutputFile::create(path, &[])?;
            out.writer()
                .write_all(text.as_bytes())
                .and_then(|()| out.writer().write_all(b"\n"))
                .map_err(|e| out.io_error(&e))?;
            out.commit()
        })
    }

    #[staticmethod]
    #[pyo3(signature = (path, /))]
    fn load(path: &str) -> PyResult<Self> {
        let text = std::fs::read_to_string(path).map_err(|e| FusionError::new_err(format!("{path}: {e}")))?;
        TrainedModel::from_json(&text)
            .map(|m| Self { inner: Arc::new(m) })
            .map_err(|e| FusionError::new_err(format!("{path}: {e}")))
    }

    fn __repr__(&self) -> String {
        let sizes = match (self.inner.segments, self.inner.window) {
            (Some(s), _) => format!(", segments={s}"),
            (_, Some(w)) => format!(", window={w}"),
            _ => String::new(),
        };
        format!("FusionModel(method={:?}, runs={}{sizes})", self.method(), self.runs())
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
        value
            .map(|v| {
                let accepted = format!("an int from {low} to {}", crate::fusion::MAX_SIZE);
                let top = i128::try_from(crate::fusion::MAX_SIZE).unwrap_or(i128::MAX);
                let v: usize = int_in(&v, what, &accepted, i128::try_from(low).unwrap_or(0)..=top)?;
                train::check_size(what, v, low).map_err(to_py_err)
            })
            .transpose()
    };
    let sizes = TrainSizes { segments: size("segments", segments, 1)?, window: size("window", window, 0)? };
    let owned: Vec<Arc<crate::runs::Run>> = runs.iter().map(|r| Arc::clone(&r.inner)).collect();
    let qrels = Arc::clone(&qrels.inner);
    let model = detached(py, || {
        let refs: Vec<&crate::runs::Run> = owned.iter().map(AsRef::as_ref).collect();
        train::train(method, &refs, &qrels, sizes)
    })?;
    Ok(PyFusionModel { inner: Arc::new(model) })
}
