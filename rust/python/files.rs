//! The core's output guard (`crate::output`) and line reader (`crate::runs::read::source`) as thin
//! handles over str paths. Their Python faces hold the rest: `fanfuse.output_guard` (path
//! arguments, the context managers) and `fanfuse.corpus` (the corpus reader).

use std::os::fd::{IntoRawFd, RawFd};
use std::path::Path;
use std::sync::{Mutex, PoisonError};

use pyo3::prelude::*;
use pyo3::types::IntoPyDict;

use super::{interruptible, to_py_err};
use crate::output::directory::{self, StagedDir};
use crate::output::held::Held;
use crate::output::separate::{check_separate, Named};
use crate::output::OutputFile as CoreOutput;
use crate::runs::read::fields::MAX_FIELD_BYTES;
use crate::runs::read::source::{LineSource, MAX_LINE_BYTES};

#[doc = stub_doc!("_Output")]
#[pyclass(frozen, module = "fanfuse._core._internal", name = "_Output")]
pub struct Output(Held<CoreOutput>);

#[pymethods]
impl Output {
    #[new]
    #[pyo3(signature = (path, inputs, /))]
    fn new(py: Python<'_>, path: String, inputs: Vec<String>) -> PyResult<Self> {
        // Interruptible: a FIFO without a reader is waited for.
        let output = interruptible(py, || CoreOutput::create(&path, &inputs))?;
        Ok(Self(Held::new(&path, output)))
    }

    fn is_stdout(&self) -> PyResult<bool> {
        self.0.with(None, |output| Ok(output.is_stdout())).map_err(to_py_err)
    }

    // The core's writes are unbuffered, so what the caller writes to the descriptor lands in order.
    #[doc = stub_doc!("_Output.fileno")]
    fn fileno(&self) -> PyResult<RawFd> {
        Ok(self.0.with(None, |output| output.descriptor()).map_err(to_py_err)?.into_raw_fd())
    }

    fn commit(&self, py: Python<'_>) -> PyResult<()> {
        let output = self.0.take().map_err(to_py_err)?;
        interruptible(py, || output.commit())
    }

    #[doc = stub_doc!("_Output.discard")]
    fn discard(&self) {
        self.0.discard();
    }
}

#[doc = stub_doc!("_StagedDirectory")]
#[pyclass(frozen, module = "fanfuse._core._internal", name = "_StagedDirectory")]
pub struct StagedDirectory {
    #[pyo3(get)]
    path: String,
    staged: Held<StagedDir>,
}

#[pymethods]
impl StagedDirectory {
    #[new]
    #[pyo3(signature = (target, /))]
    fn new(target: &str) -> PyResult<Self> {
        let staged = StagedDir::beside(Path::new(target)).map_err(to_py_err)?;
        let path = staged.path().to_string_lossy().into_owned();
        Ok(Self { path, staged: Held::new(target, staged) })
    }

    #[getter]
    fn published(&self) -> bool {
        self.staged.finished_or(StagedDir::is_published)
    }

    #[pyo3(signature = (target, /))]
    fn publish(&self, target: &str) -> PyResult<()> {
        self.staged.with(Some(target), |staged| staged.publish(Path::new(target))).map_err(to_py_err)
    }

    fn discard(&self) {
        self.staged.discard();
    }
}

#[pyfunction]
#[pyo3(name = "_retire_directory", signature = (path, /))]
pub(super) fn retire_directory(path: &str) -> PyResult<()> {
    directory::retire_directory(Path::new(path)).map_err(to_py_err)
}

#[pyfunction]
#[pyo3(name = "_sync_directory", signature = (path, /))]
pub(super) fn sync_directory(path: &str) -> PyResult<()> {
    directory::sync_directory(Path::new(path)).map_err(to_py_err)
}

fn named(pairs: &[(String, String)]) -> Vec<Named<'_>> {
    pairs.iter().map(|(option, path)| Named { option, path }).collect()
}

/// A command's paths checked against each other (`crate::output::separate`), as (option, path) pairs.
#[pyfunction]
#[pyo3(name = "_check_paths", signature = (outputs, output_directories, inputs, /))]
pub(super) fn check_paths(
    outputs: Vec<(String, String)>,
    output_directories: Vec<(String, String)>,
    inputs: Vec<(String, String)>,
) -> PyResult<()> {
    check_separate(&named(&outputs), &named(&output_directories), &named(&inputs)).map_err(to_py_err)
}

#[doc = stub_doc!("_Lines")]
#[pyclass(frozen, module = "fanfuse._core._internal", name = "_Lines")]
pub struct Lines {
    source: Mutex<LineSource>,
}

#[pymethods]
impl Lines {
    #[new]
    #[pyo3(signature = (path, /))]
    fn new(py: Python<'_>, path: &str) -> PyResult<Self> {
        // Interruptible, and without the GIL: a FIFO without a writer is waited for.
        Ok(Self { source: Mutex::new(interruptible(py, || LineSource::open(path))?) })
    }

    fn __iter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    fn __next__(&self, py: Python<'_>) -> PyResult<Option<(u64, String)>> {
        let mut guard = self.source.lock().unwrap_or_else(PoisonError::into_inner);
        let source: &mut LineSource = &mut guard;
        let line = py.detach(|| source.next_line().map(|line| line.map(str::to_owned))).map_err(to_py_err)?;
        Ok(line.map(|text| (source.line, text)))
    }
}

/// The bounds of the readers, for messages and tests: `{"line": bytes, "field": bytes}`.
pub(super) fn add_reader_limits(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("READER_LIMITS", [("line", MAX_LINE_BYTES), ("field", MAX_FIELD_BYTES)].into_py_dict(m.py())?)
}
