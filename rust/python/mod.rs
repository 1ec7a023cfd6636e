//! The Python binding: the only code that imports pyo3 (`make lint` checks it), and only a boundary.
//! It converts Python values to Rust and back and maps errors; the checks, loops and messages of
//! substance are the core's, so that the Rust code behind a Python call is the code a test of the
//! core runs.
//!
//! Every entry point follows one pattern: read the Python inputs into owned Rust values while holding
//! the GIL (`args` the arguments, `ids` the ranked lists), release the GIL and run the core
//! ([`interruptible`]: a signal stops any loop of the core, see `crate::interrupt`), then build the
//! Python result. Errors from the core map to Python in one place ([`to_py_err`]).
//!
//! One file per exposed area: `options` the keyword options shared by the fusion entry points,
//! `fused` the fusion result, `fuse` (one query) / `batch` (many) / `runs` / `eval` the functions,
//! `trained` the trained model, `tables` Arrow tables in and record batches out, `rows` the private
//! submodule `_core._rows` (runs as Arrow rows, for the distributed engine), `files` the output
//! guard and the line reader.

mod args;
mod batch;
mod eval;
mod files;
mod fuse;
mod fused;
mod ids;
mod options;
mod rows;
mod runs;
mod tables;
mod trained;

use std::cell::RefCell;

use pyo3::exceptions::{PyBrokenPipeError, PyKeyboardInterrupt, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyTuple};

use crate::error::FusionError as CoreError;

pyo3::create_exception!(
    fanfuse,
    FusionError,
    PyValueError,
    "Invalid fusion input: the message names the argument (or file:line) and what is accepted."
);

// The package's family of refused input other than fusion input, defined here so that the core's
// output refusals are raised as their own class without the binding importing the package;
// `fanfuse.errors` re-exports both and derives its other classes from `InputError`.
pyo3::create_exception!(
    fanfuse,
    InputError,
    PyValueError,
    "Input other than fusion input refused: the message names the argument and what it accepts."
);
pyo3::create_exception!(
    fanfuse,
    InvalidOutput,
    InputError,
    "An output path (a file or a folder to write) that cannot be written, or that names an input\n\
     or another output however spelled: the message names the path and, from a command, the flag."
);

/// The one mapping from core errors to Python exceptions.
fn to_py_err(error: CoreError) -> PyErr {
    match error {
        CoreError::InvalidArgument(message) => FusionError::new_err(message),
        CoreError::WrongType(message) => PyTypeError::new_err(message),
        // Malformed files and unreadable paths are bad input too: same family, message keeps file:line.
        error @ (CoreError::Input { .. } | CoreError::Io { .. }) => FusionError::new_err(error.to_string()),
        // An output is no fusion input, whichever writer meets the refusal.
        error @ CoreError::Output { .. } => InvalidOutput::new_err(error.to_string()),
        // Python's own exception for it, which the command line ends quietly on (`cmd | head`).
        error @ CoreError::ClosedPipe { .. } => PyBrokenPipeError::new_err(error.to_string()),
        // Only `interruptible` stops work, and it raises the signal handler's own exception instead.
        CoreError::Interrupted => PyKeyboardInterrupt::new_err("interrupted"),
    }
}

thread_local! {
    /// The exception a signal handler (or a progress callback) raised while this thread's work polled.
    static RAISED: RefCell<Option<PyErr>> = const { RefCell::new(None) };
}

/// Releases the GIL around `work` (which only sees owned Rust data), maps its error, and polls
/// Python for signals from this thread while it runs (see `crate::interrupt`), so that a handler
/// that raises (Ctrl-C's `KeyboardInterrupt`, the CLI's SIGTERM handler) stops any loop of the
/// core, and its exception is what the call raises. The one way the binding runs the core.
fn interruptible<T, F>(py: Python<'_>, work: F) -> PyResult<T>
where
    T: Send,
    F: FnOnce() -> Result<T, CoreError> + Send,
{
    interruptible_reporting(py, |_| Ok(()), work)
}

/// [`interruptible`], also calling `report` with the GIL at every poll (about every 50 ms, and when
/// the work asks for a last poll before committing its output): how a progress callback sees counters
/// the work updates. An exception from `report` stops the work like a signal does.
fn interruptible_reporting<T, F, R>(py: Python<'_>, report: R, work: F) -> PyResult<T>
where
    T: Send,
    F: FnOnce() -> Result<T, CoreError> + Send,
    R: Fn(Python<'_>) -> PyResult<()> + Send + Sync + 'static,
{
    // The poll runs on this thread (the GIL is released, the thread stays), so a thread-local slot
    // carries its exception back; the closure captures only `report` (nothing to allocate for the
    // plain case, which every call of the core takes).
    let result = py.detach(move || {
        let poll = move || match Python::attach(|py| py.check_signals().and_then(|()| report(py))) {
            Ok(()) => false,
            Err(error) => {
                RAISED.with(|slot| *slot.borrow_mut() = Some(error));
                true
            }
        };
        crate::interrupt::run_polling(Box::new(poll), work)
    });
    if let Some(error) = RAISED.with(|slot| slot.borrow_mut().take()) {
        return Err(error);
    }
    result.map_err(to_py_err)
}

/// The names each option accepts, as tuples, and the tables of names by key, as dicts of tuples,
/// from the core's tables (see `crate::published`).
fn add_name_lists(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add("RUN_FILE_TOP_K", crate::fusion::RUN_FILE_TOP_K)?;
    for (attribute, names) in crate::published::name_lists() {
        m.add(attribute, PyTuple::new(py, names)?)?;
    }
    for (attribute, table) in crate::published::name_maps() {
        let by_key = PyDict::new(py);
        for (key, names) in table {
            by_key.set_item(key, PyTuple::new(py, names)?)?;
        }
        m.add(attribute, by_key)?;
    }
    Ok(())
}

#[pymodule(gil_used = false)]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let error_type = m.py().get_type::<FusionError>();
    // Set on an instance raised for a fusion option: the option's name.
    error_type.setattr("option", m.py().None())?;
    m.add("FusionError", error_type)?;
    m.add("InputError", m.py().get_type::<InputError>())?;
    m.add("InvalidOutput", m.py().get_type::<InvalidOutput>())?;
    add_name_lists(m)?;
    m.add_class::<options::PyFusionOptions>()?;
    m.add_class::<fused::PyFused>()?;
    m.add_function(wrap_pyfunction!(fuse::rrf, m)?)?;
    m.add_function(wrap_pyfunction!(batch::rrf_batch, m)?)?;
    m.add_function(wrap_pyfunction!(batch::default_threads, m)?)?;
    m.add_function(wrap_pyfunction!(batch::_kernel_seconds, m)?)?;
    m.add_function(wrap_pyfunction!(fuse::fuse, m)?)?;
    m.add_function(wrap_pyfunction!(batch::fuse_batch, m)?)?;
    m.add_class::<runs::PyRun>()?;
    m.add_class::<runs::PyQrels>()?;
    m.add_function(wrap_pyfunction!(runs::read_run, m)?)?;
    m.add_function(wrap_pyfunction!(runs::read_qrels, m)?)?;
    m.add_function(wrap_pyfunction!(runs::fuse_runs, m)?)?;
    m.add_function(wrap_pyfunction!(runs::fuse_files, m)?)?;
    m.add_function(wrap_pyfunction!(tables::runs_from_table, m)?)?;
    m.add_function(wrap_pyfunction!(tables::qrels_from_table, m)?)?;
    m.add_function(wrap_pyfunction!(tables::run_buffers, m)?)?;
    m.add_function(wrap_pyfunction!(tables::fuse_tables, m)?)?;
    m.add_class::<tables::PyArrowBatch>()?;
    rows::add_submodule(m)?;
    m.add_class::<trained::PyFusionModel>()?;
    m.add_function(wrap_pyfunction!(runs::train_fusion, m)?)?;
    m.add_function(wrap_pyfunction!(eval::evaluate, m)?)?;
    m.add_function(wrap_pyfunction!(eval::metric_depth, m)?)?;
    m.add_function(wrap_pyfunction!(eval::randomization_test, m)?)?;
    m.add_function(wrap_pyfunction!(eval::paired_t_test, m)?)?;
    m.add_function(wrap_pyfunction!(eval::paired_t, m)?)?;
    m.add_function(wrap_pyfunction!(eval::wilcoxon_test, m)?)?;
    m.add_function(wrap_pyfunction!(eval::tukey_hsd, m)?)?;
    m.add_class::<files::Output>()?;
    m.add_class::<files::StagedDirectory>()?;
    m.add_class::<files::Lines>()?;
    m.add_function(wrap_pyfunction!(files::check_paths, m)?)?;
    m.add_function(wrap_pyfunction!(files::retire_directory, m)?)?;
    m.add_function(wrap_pyfunction!(files::sync_directory, m)?)?;
    m.add_function(wrap_pyfunction!(files::read_lines, m)?)?;
    files::add_reader_limits(m)?;
    Ok(())
}
