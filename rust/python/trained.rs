//! The `FusionModel` that `train_fusion` returns (`train.rs`): its fields, JSON in and out.

use std::io::Write;
use std::sync::Arc;

use pyo3::prelude::*;

use super::{interruptible, to_py_err, FusionError};
use crate::fusion::TrainedModel;

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
    fn load(py: Python<'_>, path: &str) -> PyResult<Self> {
        let text = interruptible(py, || crate::runs::read::source::read_small_file(path))?;
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
