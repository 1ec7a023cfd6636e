//! Arrow through the PyCapsule protocol, both ways: any object with `__arrow_c_stream__` or
//! `__arrow_c_array__` is taken over as Arrow C structs ([`table_source`]) and read by the core
//! (`crate::arrow`) with the GIL released; a batch the core built goes out as capsules ([`export`]):
//! [`PyArrowBatch`] (the results of `tables` and `rows`) and a `Run`'s columns.

use std::ffi::CStr;
use std::sync::Arc;

use pyo3::prelude::*;
use pyo3::types::{PyCapsule, PyTuple};

use super::args::type_name;
use super::to_py_err;
use crate::arrow::export::ExportBatch;
use crate::arrow::ffi::{ArrowArray, ArrowArrayStream, ArrowSchema, OwnedArray, OwnedSchema, OwnedStream};
use crate::arrow::{self, TableSource};

#[doc = stub_doc!("ArrowBatch")]
#[pyclass(frozen, module = "fanfuse", name = "ArrowBatch")]
pub struct PyArrowBatch {
    inner: Arc<ExportBatch>,
}

/// The exported structs, owned by their capsule until a consumer moves them out.
struct Exported<T>(T);

// SAFETY: the structs point to buffers shared through `Arc`s and to heap data only their release
// callback frees; the interface lets them move to, and be released on, any thread.
unsafe impl<T> Send for Exported<T> {}

/// The release callback of a struct of the Arrow C data interface: None once released or moved out.
type Release<T> = Option<unsafe extern "C" fn(*mut T)>;

/// A capsule named `name` owning `exported`; when the capsule goes, the struct is released unless a
/// consumer moved it out (which leaves `release` of it None).
fn capsule<'py, T: 'static>(
    py: Python<'py>,
    name: &'static CStr,
    exported: T,
    release: fn(&T) -> Release<T>,
) -> PyResult<Bound<'py, PyCapsule>> {
    let destructor = move |mut exported: Exported<T>, _| {
        if let Some(release) = release(&exported.0) {
            // SAFETY: not moved out by a consumer (else `release` would be None): released once here.
            unsafe { release(&raw mut exported.0) };
        }
    };
    PyCapsule::new_with_value_and_destructor(py, Exported(exported), name, destructor)
}

/// The PyCapsule protocol's (schema, array) capsules of `batch`, exported anew.
pub(super) fn export<'py>(py: Python<'py>, batch: &Arc<ExportBatch>) -> PyResult<Bound<'py, PyTuple>> {
    let (schema, array) = batch.export();
    let schema = capsule(py, c"arrow_schema", schema, |schema| schema.release)?;
    let array = capsule(py, c"arrow_array", array, |array| array.release)?;
    PyTuple::new(py, [schema, array])
}

#[pymethods]
impl PyArrowBatch {
    #[doc = stub_doc!("ArrowBatch.__arrow_c_array__")]
    #[pyo3(signature = (requested_schema = None))]
    fn __arrow_c_array__<'py>(
        &self,
        py: Python<'py>,
        requested_schema: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyTuple>> {
        let _ = requested_schema; // the batch has one schema; the consumer casts if it wants another
        export(py, &self.inner)
    }

    fn __len__(&self) -> usize {
        self.inner.rows()
    }

    fn __repr__(&self) -> String {
        self.inner.describe()
    }
}

impl PyArrowBatch {
    pub(super) fn new(batch: ExportBatch) -> Self {
        Self { inner: Arc::new(batch) }
    }
}

/// The pointer a capsule of the PyCapsule protocol holds, checked by its name.
fn capsule_pointer<T>(capsule: &Bound<'_, PyAny>, name: &CStr, what: &str) -> PyResult<*mut T> {
    let capsule =
        capsule.cast::<PyCapsule>().map_err(|_| to_py_err(arrow::not_a_capsule(what, &type_name(capsule))))?;
    Ok(capsule.pointer_checked(Some(name))?.as_ptr().cast())
}

/// Takes the Arrow data of `table` over (the producer's structs are marked released; the core
/// releases them when done). `name` is the argument in errors.
pub(super) fn table_source(table: &Bound<'_, PyAny>, name: &str) -> PyResult<TableSource> {
    let py = table.py();
    if table.hasattr(pyo3::intern!(py, "__arrow_c_stream__"))? {
        let capsule = table.call_method0(pyo3::intern!(py, "__arrow_c_stream__"))?;
        let pointer = capsule_pointer::<ArrowArrayStream>(&capsule, c"arrow_array_stream", "__arrow_c_stream__")?;
        // SAFETY: the capsule holds a valid stream; `take` marks it released, so the capsule's
        // destructor leaves it to us.
        return Ok(TableSource::Stream(unsafe { OwnedStream::take(pointer) }));
    }
    if table.hasattr(pyo3::intern!(py, "__arrow_c_array__"))? {
        let pair = table.call_method0(pyo3::intern!(py, "__arrow_c_array__"))?;
        let pair = pair.cast::<PyTuple>().map_err(|_| to_py_err(arrow::not_a_capsule_pair()))?;
        let schema = capsule_pointer::<ArrowSchema>(&pair.get_item(0)?, c"arrow_schema", "__arrow_c_array__")?;
        let array = capsule_pointer::<ArrowArray>(&pair.get_item(1)?, c"arrow_array", "__arrow_c_array__")?;
        // SAFETY: as above, for each of the two structs.
        return Ok(unsafe { TableSource::Batch(OwnedSchema::take(schema), OwnedArray::take(array)) });
    }
    Err(to_py_err(arrow::not_a_table_object(name, &type_name(table))))
}
