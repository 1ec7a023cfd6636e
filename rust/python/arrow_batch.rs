//! Arrow record batches the core built, handed to Python through the Arrow PyCapsule protocol: the
//! result type of the Arrow entry points (`tables`, `rows`).

use std::sync::Arc;

use pyo3::prelude::*;
use pyo3::types::{PyCapsule, PyTuple};

use crate::arrow::export::ExportBatch;
use crate::arrow::ffi::{ArrowArray, ArrowSchema};

/// A record batch built by the core, readable by any Arrow library (`pyarrow.record_batch(batch)`).
#[pyclass(frozen, module = "fanfuse", name = "ArrowBatch")]
pub struct PyArrowBatch {
    inner: Arc<ExportBatch>,
}

/// The exported structs, owned by their capsule until a consumer moves them out.
struct Exported<T>(T);

// SAFETY: the structs point to buffers shared through `Arc`s and to heap data only their release
// callback frees; the interface lets them move to, and be released on, any thread.
unsafe impl<T> Send for Exported<T> {}

#[pymethods]
impl PyArrowBatch {
    /// The PyCapsule protocol: (schema, array) capsules of this batch; each call exports it anew.
    #[pyo3(signature = (requested_schema = None))]
    fn __arrow_c_array__<'py>(
        &self,
        py: Python<'py>,
        requested_schema: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyTuple>> {
        let _ = requested_schema; // the batch has one schema; the consumer casts if it wants another
        let (schema, array) = self.inner.export();
        let release_schema = |mut exported: Exported<ArrowSchema>, _| {
            if let Some(release) = exported.0.release {
                // SAFETY: not moved out by a consumer (else `release` would be None): released once here.
                unsafe { release(&raw mut exported.0) };
            }
        };
        let release_array = |mut exported: Exported<ArrowArray>, _| {
            if let Some(release) = exported.0.release {
                // SAFETY: as for the schema.
                unsafe { release(&raw mut exported.0) };
            }
        };
        let schema = PyCapsule::new_with_value_and_destructor(py, Exported(schema), c"arrow_schema", release_schema)?;
        let array = PyCapsule::new_with_value_and_destructor(py, Exported(array), c"arrow_array", release_array)?;
        PyTuple::new(py, [schema, array])
    }

    fn __len__(&self) -> usize {
        self.inner.rows()
    }

    fn __repr__(&self) -> String {
        format!("ArrowBatch(rows={})", self.inner.rows())
    }
}

impl PyArrowBatch {
    pub(super) fn new(batch: ExportBatch) -> Self {
        Self { inner: Arc::new(batch) }
    }
}
