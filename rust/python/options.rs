//! The fusion options every entry point takes, read from Python and parsed by the core
//! (`crate::fusion::FusionOptions`), held by `_FusionOptions`: the base of `fanfuse.FusionOptions`
//! (python/fanfuse/options.py); also `threads`, which the batch entry points share.

use std::ffi::CString;

use pyo3::exceptions::PyRuntimeWarning;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyString};
use pyo3::IntoPyObjectExt;

use super::args::{int, int_arg, number, numbers, type_name};
use super::to_py_err;
use crate::args;
use crate::batch;
use crate::fusion::{self, Kind, Value};

#[doc = stub_doc!("_FusionOptions")]
#[pyclass(subclass, frozen, eq, module = "fanfuse._core", name = "_FusionOptions")]
#[derive(PartialEq)]
pub struct PyFusionOptions {
    pub(super) inner: fusion::FusionOptions,
}

/// One option's value read from Python as the core's table says it is given.
fn read_value(name: &str, kind: Kind, nullable: bool, value: &Bound<'_, PyAny>) -> PyResult<Value> {
    if nullable && value.is_none() {
        return Ok(Value::None);
    }
    Ok(match kind {
        Kind::Number => Value::Number(number(value, || name.to_owned())?),
        Kind::Count => Value::Count(args::count(int(value, name, args::COUNT_ACCEPTED)?, name).map_err(to_py_err)?),
        Kind::Numbers => Value::Numbers(numbers(value, name, "numbers (one per list)")?),
        Kind::Name => match value.cast::<PyString>() {
            Ok(text) => Value::Name(text.to_str()?.to_owned()),
            Err(_) => return Err(to_py_err(args::not_a_str(name, &type_name(value)))),
        },
        Kind::Flag => match value.cast::<PyBool>() {
            Ok(flag) => Value::Flag(flag.is_true()),
            Err(_) => return Err(to_py_err(args::not_a_bool(name, &type_name(value)))),
        },
    })
}

/// The options given as keywords, parsed by the core; `entry` names the callable in errors.
fn parse(entry: &str, keywords: Option<&Bound<'_, PyDict>>) -> PyResult<fusion::FusionOptions> {
    let mut values = Vec::new();
    for (key, value) in keywords.into_iter().flatten() {
        let key = key.cast_into::<PyString>()?;
        let (name, kind, nullable) = fusion::option_named(entry, key.to_str()?).map_err(to_py_err)?;
        values.push((name, read_value(name, kind, nullable, &value).map_err(|e| naming(e, name))?));
    }
    fusion::FusionOptions::parse(values).map_err(refused)
}

/// A refused option as a Python exception whose `option` names it, for a caller that names it its
/// own way (a flag, a request field).
pub(super) fn refused(refused: fusion::OptionError) -> PyErr {
    naming(to_py_err(refused.error), refused.option)
}

/// `error` with its `option` set: the option it refuses.
pub(super) fn naming(error: PyErr, option: &str) -> PyErr {
    Python::attach(|py| error.value(py).setattr("option", option).map(|()| error)).unwrap_or_else(|e| e)
}

/// The options of a call to `entry`: `options=` (a `FusionOptions`, which pyo3's own refusal would
/// name by its private base) or the option keywords (not both), every option given one that `entry` `reads`.
pub(super) fn call_options(
    entry: &str,
    options: Option<&Bound<'_, PyAny>>,
    keywords: Option<&Bound<'_, PyDict>>,
    reads: impl Fn(&str) -> bool,
) -> PyResult<fusion::FusionOptions> {
    let in_value = options.is_some();
    let options = match options {
        Some(_) if keywords.is_some_and(|k| !k.is_empty()) => return Err(to_py_err(fusion::given_twice(entry))),
        Some(options) => match options.cast::<PyFusionOptions>() {
            Ok(options) => options.get().inner.clone(),
            Err(_) => return Err(to_py_err(fusion::not_options(entry, &type_name(options)))),
        },
        None => parse(entry, keywords)?,
    };
    options.check_read_by(entry, reads, in_value).map_err(to_py_err)?;
    Ok(options)
}

/// The options of a run fusion called as `entry`, with its trained `model` if any.
pub(super) fn run_params(
    entry: &str,
    options: Option<&Bound<'_, PyAny>>,
    keywords: Option<&Bound<'_, PyDict>>,
    model: Option<&super::trained::PyFusionModel>,
) -> PyResult<fusion::FuseParams> {
    let options = call_options(entry, options, keywords, |name| !fusion::NOT_FOR_RUNS.contains(&name))?;
    options.run_params(model.map(|m| &m.inner)).map_err(refused)
}

#[pymethods]
impl PyFusionOptions {
    #[new]
    #[pyo3(signature = (**options))]
    fn new(options: Option<&Bound<'_, PyDict>>) -> PyResult<Self> {
        Ok(Self { inner: parse("FusionOptions", options)? })
    }

    #[doc = stub_doc!("_FusionOptions.given")]
    fn given<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let given = PyDict::new(py);
        for name in self.inner.given() {
            given.set_item(name, to_python(py, self.inner.value(name))?)?;
        }
        Ok(given)
    }

    /// What the property `name` of the face returns (see `FusionOptions::property` in the core).
    #[pyo3(signature = (name, /))]
    fn _value(&self, py: Python<'_>, name: &str) -> PyResult<Py<PyAny>> {
        to_python(py, self.inner.property(name))
    }
}

/// An option's value as a Python value.
fn to_python(py: Python<'_>, value: Option<Value>) -> PyResult<Py<PyAny>> {
    match value {
        None | Some(Value::None) => Ok(py.None()),
        Some(Value::Name(text)) => text.into_py_any(py),
        Some(Value::Number(x)) => x.into_py_any(py),
        Some(Value::Numbers(xs)) => xs.into_py_any(py),
        Some(Value::Count(n)) => n.into_py_any(py),
        Some(Value::Flag(flag)) => flag.into_py_any(py),
    }
}

// The one reader of `threads`: None (`FANFUSE_NUM_THREADS`, else 1) or an int from 1 to 1024.
int_arg!(pub(super) threads_arg("threads") -> Option<usize>: 1..=batch::MAX_THREADS, &batch::threads_accepted());

/// With `threads=None` the default comes from `FANFUSE_NUM_THREADS`: when that holds anything but
/// an int from 1 to 1024, warn (`RuntimeWarning`, naming the variable) that 1 thread is used.
pub(super) fn check_thread_variable(py: Python<'_>, threads: Option<usize>) -> PyResult<()> {
    match (threads, batch::threads_from_env()) {
        // The value is escaped (`escape_debug`), so the message holds no NUL byte.
        (None, Err(message)) => PyErr::warn(py, &py.get_type::<PyRuntimeWarning>(), &CString::new(message)?, 1),
        _ => Ok(()),
    }
}
