//! The core's file guard (`crate::output`) and line reader (`crate::runs::read::source`) for the Python
//! layer: every file and directory fanfuse writes from Python (reports, plots, saved models, Parquet
//! runs, dense vectors and caches, index manifests and versions) goes through [`PyOutputFile`] or
//! [`PyStagedDirectory`]; a command's paths are checked against each other by [`check_paths`]; a
//! corpus is read by [`PyLines`], with the run readers' rules and bounds.

use std::os::fd::{AsFd, IntoRawFd};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard, PoisonError};

use pyo3::exceptions::{PyBrokenPipeError, PyOSError, PyTypeError};
use pyo3::prelude::*;
use pyo3::types::PyDict;

use super::args::{outer_items, type_name};
use super::{interruptible, to_py_err, FusionError};
use crate::output::directory::{self, StagedDir};
use crate::output::separate::{check_separate, Named};
use crate::output::OutputFile as CoreOutput;
use crate::runs::read::source::LineSource;

/// A path argument: a str or an `os.PathLike` naming a str path.
fn path_arg(value: &Bound<'_, PyAny>, name: &str) -> PyResult<String> {
    let path: PathBuf = value.extract().map_err(|_| {
        PyTypeError::new_err(format!("{name} must be a path (str or os.PathLike), not {}", type_name(value)))
    })?;
    path.into_os_string()
        .into_string()
        .map_err(|raw| FusionError::new_err(format!("{name} {raw:?} is not valid UTF-8; give a UTF-8 path")))
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// A file written through `crate::output`. See `_core.pyi`.
#[pyclass(frozen, module = "fanfuse._core", name = "OutputFile")]
pub struct PyOutputFile {
    path: String,
    output: Mutex<Option<CoreOutput>>,
    stream: Mutex<Option<Py<PyAny>>>,
}

#[pymethods]
impl PyOutputFile {
    #[new]
    #[pyo3(signature = (path, /, *, inputs = None))]
    fn new(py: Python<'_>, path: &Bound<'_, PyAny>, inputs: Option<&Bound<'_, PyAny>>) -> PyResult<Self> {
        let path = path_arg(path, "path")?;
        let inputs = match inputs {
            Some(inputs) => outer_items(inputs, "inputs", "paths")?
                .iter()
                .enumerate()
                .map(|(i, item)| path_arg(item, &format!("inputs[{i}]")))
                .collect::<PyResult<Vec<_>>>()?,
            None => Vec::new(),
        };
        // Interruptible: a FIFO without a reader is waited for.
        let output = interruptible(py, || CoreOutput::create(&path, &inputs))?;
        Ok(Self { path, output: Mutex::new(Some(output)), stream: Mutex::new(None) })
    }

    /// A binary file object over a descriptor of the output of its own (unbuffered by the core).
    fn __enter__(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        let descriptor = {
            let guard = lock(&self.output);
            let output =
                guard.as_ref().ok_or_else(|| FusionError::new_err(format!("{}: already written", self.path)))?;
            if output.is_stdout() {
                // What Python printed before goes out before what is written here.
                py.import("sys")?.getattr("stdout")?.call_method0("flush")?;
            }
            output.file().as_fd().try_clone_to_owned().map_err(|e| to_py_err(crate::FusionError::io(&self.path, &e)))?
        };
        let stream = py.import("os")?.call_method1("fdopen", (descriptor.into_raw_fd(), "wb"))?.unbind();
        *lock(&self.stream) = Some(stream.clone_ref(py));
        Ok(stream)
    }

    #[pyo3(signature = (exc_type, exc, _traceback))]
    fn __exit__(
        &self,
        py: Python<'_>,
        exc_type: Option<&Bound<'_, PyAny>>,
        exc: Option<&Bound<'_, PyAny>>,
        _traceback: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<bool> {
        let stream = lock(&self.stream).take();
        let closed = stream.map_or(Ok(()), |s| s.bind(py).call_method0("close").map(drop));
        let output = lock(&self.output).take();
        let written = match (exc_type, exc) {
            (Some(_), Some(raised)) => Err(PyErr::from_value(raised.clone())),
            _ => closed,
        };
        match written {
            Ok(()) => {
                let output = output.ok_or_else(|| FusionError::new_err(format!("{}: already written", self.path)))?;
                interruptible(py, || output.commit())?;
                Ok(false)
            }
            Err(error) => {
                drop(output); // removes the temporary: the previous file stays
                if error.is_instance_of::<PyOSError>(py) && !error.is_instance_of::<PyBrokenPipeError>(py) {
                    let reason = error.value(py).getattr("strerror").ok().filter(|s| !s.is_none());
                    let reason = reason.map_or_else(|| error.value(py).to_string(), |s| s.to_string());
                    let replaced = FusionError::new_err(format!("{}: {reason}", self.path));
                    replaced.set_cause(py, Some(error));
                    return Err(replaced);
                }
                if exc_type.is_some() {
                    return Ok(false);
                }
                Err(error)
            }
        }
    }
}

/// A directory that appears complete or not at all (`crate::output::directory`). See `_core.pyi`.
#[pyclass(frozen, module = "fanfuse._core", name = "StagedDirectory")]
pub struct PyStagedDirectory {
    target: String,
    path: String,
    staged: Mutex<Option<StagedDir>>,
}

#[pymethods]
impl PyStagedDirectory {
    #[new]
    #[pyo3(signature = (target, /))]
    fn new(target: &Bound<'_, PyAny>) -> PyResult<Self> {
        let target = path_arg(target, "target")?;
        let staged = StagedDir::beside(Path::new(&target)).map_err(to_py_err)?;
        let path = staged.path().to_string_lossy().into_owned();
        Ok(Self { target, path, staged: Mutex::new(Some(staged)) })
    }

    #[getter]
    fn path(&self) -> &str {
        &self.path
    }

    #[pyo3(signature = (target = None, /))]
    fn publish(&self, target: Option<&Bound<'_, PyAny>>) -> PyResult<()> {
        let target = target.map(|t| path_arg(t, "target")).transpose()?.unwrap_or_else(|| self.target.clone());
        let mut guard = lock(&self.staged);
        let staged =
            guard.as_mut().ok_or_else(|| FusionError::new_err(format!("{}: already published", self.target)))?;
        staged.publish(Path::new(&target)).map_err(to_py_err)
    }

    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    #[pyo3(signature = (exc_type, _exc, _traceback))]
    fn __exit__(
        &self,
        exc_type: Option<&Bound<'_, PyAny>>,
        _exc: Option<&Bound<'_, PyAny>>,
        _traceback: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<bool> {
        let mut staged = lock(&self.staged).take();
        if exc_type.is_none() {
            if let Some(staged) = staged.as_mut().filter(|s| !s.is_published()) {
                staged.publish(Path::new(&self.target)).map_err(to_py_err)?;
            }
        }
        Ok(false) // dropping an unpublished staging removes it
    }
}

/// Removes a directory whole (renamed away, then deleted). See `_core.pyi`.
#[pyfunction]
#[pyo3(signature = (path, /))]
pub(super) fn retire_directory(path: &Bound<'_, PyAny>) -> PyResult<()> {
    directory::retire_directory(Path::new(&path_arg(path, "path")?)).map_err(to_py_err)
}

/// Makes the renames inside a directory durable. See `_core.pyi`.
#[pyfunction]
#[pyo3(signature = (path, /))]
pub(super) fn sync_directory(path: &Bound<'_, PyAny>) -> PyResult<()> {
    directory::sync_directory(Path::new(&path_arg(path, "path")?)).map_err(to_py_err)
}

/// `(option, path)` pairs, for messages that name the option.
fn named_paths(value: Option<&Bound<'_, PyAny>>, name: &str) -> PyResult<Vec<(String, String)>> {
    let Some(value) = value else { return Ok(Vec::new()) };
    outer_items(value, name, "(option, path) pairs")?
        .iter()
        .enumerate()
        .map(|(i, item)| {
            let (option, path): (String, Bound<'_, PyAny>) = item.extract().map_err(|_| {
                PyTypeError::new_err(format!("{name}[{i}] must be an (option, path) pair, not {}", type_name(item)))
            })?;
            Ok((option, path_arg(&path, &format!("{name}[{i}]"))?))
        })
        .collect()
}

fn named(pairs: &[(String, String)]) -> Vec<Named<'_>> {
    pairs.iter().map(|(option, path)| Named { option, path }).collect()
}

/// A command's paths checked against each other (`crate::output::separate`). See `_core.pyi`.
#[pyfunction]
#[pyo3(signature = (*, outputs = None, output_directories = None, inputs = None))]
pub(super) fn check_paths(
    outputs: Option<&Bound<'_, PyAny>>,
    output_directories: Option<&Bound<'_, PyAny>>,
    inputs: Option<&Bound<'_, PyAny>>,
) -> PyResult<()> {
    let (outputs, directories, inputs) = (
        named_paths(outputs, "outputs")?,
        named_paths(output_directories, "output_directories")?,
        named_paths(inputs, "inputs")?,
    );
    check_separate(&named(&outputs), &named(&directories), &named(&inputs)).map_err(to_py_err)
}

/// The numbered lines of a text file, read by `crate::runs::read::source`. See `_core.pyi`.
#[pyclass(frozen, module = "fanfuse._core", name = "Lines")]
pub struct PyLines {
    source: Mutex<LineSource>,
}

#[pymethods]
impl PyLines {
    fn __iter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    fn __next__(&self, py: Python<'_>) -> PyResult<Option<(u64, String)>> {
        let mut guard = lock(&self.source);
        let source: &mut LineSource = &mut guard;
        let line = py.detach(|| source.next_line().map(|line| line.map(str::to_owned))).map_err(to_py_err)?;
        Ok(line.map(|text| (source.line, text)))
    }
}

/// Opens a text file as [`PyLines`]. See `_core.pyi`.
#[pyfunction]
#[pyo3(signature = (path, /))]
pub(super) fn read_lines(path: &Bound<'_, PyAny>) -> PyResult<PyLines> {
    let source = LineSource::open(&path_arg(path, "path")?).map_err(to_py_err)?;
    Ok(PyLines { source: Mutex::new(source) })
}

/// The bounds of the readers, for messages and tests: `{"line": bytes, "field": bytes}`.
pub(super) fn add_reader_limits(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let limits = PyDict::new(m.py());
    limits.set_item("line", crate::runs::read::source::MAX_LINE_BYTES)?;
    limits.set_item("field", crate::runs::read::fields::MAX_FIELD_BYTES)?;
    m.add("READER_LIMITS", limits)
}
