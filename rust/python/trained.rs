//! The `FusionModel` that `train_fusion` (in `runs.rs`) returns: its fields, JSON in and out.

use std::sync::Arc;

use pyo3::prelude::*;

use super::args::{path_arg, typed_arg};
use super::{interruptible, to_py_err};
use crate::fusion::TrainedModel;

typed_arg!(text_arg("text") -> str);

#[doc = stub_doc!("FusionModel")]
#[pyclass(frozen, eq, module = "fanfuse", name = "FusionModel")]
#[derive(PartialEq)]
pub struct PyFusionModel {
    pub(super) inner: Arc<TrainedModel>,
}

#[pymethods]
impl PyFusionModel {
    #[doc = stub_doc!("FusionModel.method")]
    #[getter]
    fn method(&self) -> &'static str {
        self.inner.method.name()
    }

    #[doc = stub_doc!("FusionModel.runs")]
    #[getter]
    fn runs(&self) -> usize {
        self.inner.tables.len()
    }

    #[doc = stub_doc!("FusionModel.segments")]
    #[getter]
    fn segments(&self) -> Option<usize> {
        self.inner.segments
    }

    #[doc = stub_doc!("FusionModel.window")]
    #[getter]
    fn window(&self) -> Option<usize> {
        self.inner.window
    }

    #[doc = stub_doc!("FusionModel.tables")]
    #[getter]
    fn tables(&self) -> Vec<Vec<f64>> {
        self.inner.tables.clone()
    }

    #[doc = stub_doc!("FusionModel.to_json")]
    fn to_json(&self) -> String {
        self.inner.to_json()
    }

    #[doc = stub_doc!("FusionModel.from_json")]
    #[staticmethod]
    #[pyo3(signature = (text, /))]
    fn from_json(#[pyo3(from_py_with = text_arg)] text: &str) -> PyResult<Self> {
        Ok(Self { inner: Arc::new(TrainedModel::from_json(text).map_err(to_py_err)?) })
    }

    #[doc = stub_doc!("FusionModel.save")]
    #[pyo3(signature = (path, /))]
    fn save(&self, py: Python<'_>, #[pyo3(from_py_with = path_arg)] path: String) -> PyResult<()> {
        interruptible(py, || crate::train::save_model(&self.inner, &path))
    }

    #[doc = stub_doc!("FusionModel.load")]
    #[staticmethod]
    #[pyo3(signature = (path, /))]
    fn load(py: Python<'_>, #[pyo3(from_py_with = path_arg)] path: String) -> PyResult<Self> {
        Ok(Self { inner: Arc::new(interruptible(py, || crate::train::load_model(&path))?) })
    }

    fn __repr__(&self) -> String {
        self.inner.describe()
    }
}
