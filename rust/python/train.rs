//! `train_fusion`: a fusion method trained on runs and qrels, returned as a `FusionModel`.

use std::sync::Arc;

use pyo3::prelude::*;

use super::args::int_in;
use super::runs::{PyQrels, PyRun};
use super::trained::PyFusionModel;
use super::{interruptible, to_py_err};
use crate::fusion::TrainedMethod;
use crate::runs::train::{self, TrainSizes};

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
    let model = interruptible(py, || {
        let refs: Vec<&crate::runs::Run> = owned.iter().map(AsRef::as_ref).collect();
        train::train(method, &refs, &qrels, sizes)
    })?;
    Ok(PyFusionModel { inner: Arc::new(model) })
}
