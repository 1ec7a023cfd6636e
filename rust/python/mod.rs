//! The Python binding: the only code that imports pyo3 (`make lint` checks it), and only a boundary.
//! It converts Python values to Rust and back and maps errors; the checks, loops and messages of
//! substance are the core's, so that the Rust code behind a Python call is the code a test of the
//! core runs.
//!
//! Every entry point follows one pattern: read the Python inputs into owned Rust values while holding
//! the GIL (`args` the arguments, `ids` the ranked lists), release the GIL and run the core
//! ([`interruptible`]: a signal stops any loop of the core, see `crate::interrupt`), then build the
//! Python result. Errors from the core map to Python in one place ([`to_py_err`]). The docstrings are
//! the stubs' (`python/fanfuse/_core.pyi`, [`stub_doc!`]).
//!
//! One file per exposed area: `options` the keyword options shared by the fusion entry points,
//! `fused` the fusion result, `fuse` (one query) / `batch` (many) / `runs` / `eval` the functions,
//! `trained` the trained model, `arrow` Arrow data in and out through capsules, `tables` the entry
//! points over Arrow tables, `rows` runs as Arrow rows for the distributed engine, `files` the
//! output guard and the line reader. The entry points only the package's own layers call (`rows`,
//! `files`, the benches' kernel timer) are in the private submodule `_core._internal`.

// The entry points mirror their Python signatures, data plus keyword arguments, and pyo3 hands
// every argument over as an owned value.
#![allow(clippy::too_many_arguments, clippy::needless_pass_by_value)]

/// The docstring of `name` (`fuse`, `Run`, `Run.write`) in the core's stubs, which build.rs writes
/// out: the one text of it that `help()` and an editor show.
macro_rules! stub_doc {
    ($name:literal) => {
        include_str!(concat!(env!("OUT_DIR"), "/stub_docs/", $name, ".txt"))
    };
}

mod args;
mod arrow;
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
use pyo3::types::{IntoPyDict, PyTuple};

use crate::error::FusionError as CoreError;

pyo3::create_exception!(fanfuse, FusionError, PyValueError, stub_doc!("FusionError"));

// The package's family of refused input other than fusion input, defined here so that the core's
// refusals of outputs and settings are raised as their own classes without the binding importing
// the package; `fanfuse.errors` re-exports them and derives its other classes from `InputError`.
pyo3::create_exception!(fanfuse, InputError, PyValueError, stub_doc!("InputError"));
pyo3::create_exception!(fanfuse, InvalidOutput, InputError, stub_doc!("InvalidOutput"));
pyo3::create_exception!(fanfuse, InvalidSetting, InputError, stub_doc!("InvalidSetting"));
pyo3::create_exception!(fanfuse, OutOfRange, InputError, stub_doc!("OutOfRange"));

/// The one mapping from core errors to Python exceptions.
fn to_py_err(error: CoreError) -> PyErr {
    match error {
        CoreError::InvalidArgument(message) => FusionError::new_err(message),
        CoreError::InvalidOption { option, message } => options::naming(FusionError::new_err(message), option),
        CoreError::InvalidSetting(message) => InvalidSetting::new_err(message),
        CoreError::OutOfRange(message) => OutOfRange::new_err(message),
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
        let by_key = table.into_iter().map(|(key, names)| Ok((key, PyTuple::new(py, names)?)));
        m.add(attribute, by_key.collect::<PyResult<Vec<_>>>()?.into_py_dict(py)?)?;
    }
    Ok(())
}

/// The module `fanfuse._core`: the classes and functions of the files above, the exceptions, the
/// name lists, and the private submodule `_internal`.
#[pymodule(gil_used = false)]
mod _core {
    #[pymodule_export]
    use super::{
        arrow::PyArrowBatch,
        batch::{default_threads, fuse_batch, rrf_batch},
        eval::{evaluate, metric_depth, paired_t, randomization_test, tukey_hsd, wilcoxon_test},
        fuse::{fuse, rrf},
        fused::PyFused,
        options::PyFusionOptions,
        runs::{fuse_files, fuse_runs, read_qrels, read_run, train_fusion, PyQrels, PyRun},
        tables::{fuse_tables, qrels_from_table, runs_from_table},
        trained::PyFusionModel,
        FusionError, InputError, InvalidOutput, InvalidSetting, OutOfRange,
    };
    use pyo3::prelude::*;

    #[pymodule_init]
    fn init(m: &Bound<'_, PyModule>) -> PyResult<()> {
        // Set on an instance raised for a fusion option: the option's name.
        m.py().get_type::<super::FusionError>().setattr("option", m.py().None())?;
        // What the benches' machine line states, so a timing of a debug build says it is one.
        m.add("_BUILD", if cfg!(debug_assertions) { "debug" } else { "release" })?;
        super::add_name_lists(m)?;
        super::files::add_reader_limits(m)
    }

    /// `fanfuse._core._internal`: the entry points only the package's own layers call (see the top).
    #[pymodule(gil_used = false, module = "fanfuse._core")]
    mod _internal {
        #[pymodule_export]
        use crate::python::{
            batch::_kernel_seconds,
            files::{check_paths, retire_directory, sync_directory, Lines, Output, StagedDirectory},
            rows::{file_blocks, fuse_rows, read_run_block, read_table_block, run_from_rows, write_run_text},
        };
        use pyo3::prelude::*;

        #[pymodule_init]
        fn init(m: &Bound<'_, PyModule>) -> PyResult<()> {
            // An extension's submodule is found by `import` only through `sys.modules`.
            m.py().import("sys")?.getattr("modules")?.set_item(m.name()?, m)
        }
    }
}
