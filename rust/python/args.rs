//! Argument readers shared by every entry point: ordered sequences, numbers, ints in a range, strs,
//! 1-D buffers. Every number argument is read here (a whole int argument by a reader [`int_arg!`]
//! declares, for pyo3's `from_py_with`), so a bad value gets fanfuse's message naming it, never
//! pyo3's `OverflowError` or an unnamed `TypeError`. A bool is refused wherever a number is expected.
//! The ranges and the messages are the core's (`crate::args`); these test types and read values.

use std::fmt;

use pyo3::buffer::PyBuffer;
use pyo3::exceptions::PyOverflowError;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyBytes, PyDict, PyFloat, PyFrozenSet, PyInt, PyIterator, PyList, PySet, PyString, PyTuple};
use pyo3::PyClass;

use super::to_py_err;
use crate::args;

pub(super) fn type_name(obj: &Bound<'_, PyAny>) -> String {
    obj.get_type().name().map_or_else(|_| "?".into(), |n| n.to_string())
}

pub(super) fn outer_items<'py>(
    obj: &Bound<'py, PyAny>,
    name: impl fmt::Display,
    what: &str,
) -> PyResult<Vec<Bound<'py, PyAny>>> {
    if obj.is_instance_of::<PyString>() || obj.is_instance_of::<PyBytes>() {
        return Err(to_py_err(args::not_a_sequence(name, what, &type_name(obj))));
    }
    if obj.is_instance_of::<PySet>() || obj.is_instance_of::<PyFrozenSet>() || obj.is_instance_of::<PyDict>() {
        return Err(to_py_err(args::unordered(name, what, &type_name(obj))));
    }
    if let Ok(list) = obj.cast::<PyList>() {
        return Ok(list.iter().collect());
    }
    if let Ok(tuple) = obj.cast::<PyTuple>() {
        return Ok(tuple.iter().collect());
    }
    iterate(obj, || args::not_a_sequence(name, what, &type_name(obj)))?.collect()
}

/// `obj`'s iterator. Where its type defines none, `refusal` says what the argument must be; an
/// error its own `__iter__` raises (a cursor that fails, a bug) passes through as raised.
pub(super) fn iterate<'py>(
    obj: &Bound<'py, PyAny>,
    refusal: impl FnOnce() -> crate::error::FusionError,
) -> PyResult<Bound<'py, PyIterator>> {
    obj.try_iter().map_err(|error| {
        let kind = obj.get_type();
        let iterable = kind.hasattr("__iter__").unwrap_or(false) || kind.hasattr("__getitem__").unwrap_or(false);
        if iterable {
            error
        } else {
            to_py_err(refusal())
        }
    })
}

pub(super) fn read_1d<T: pyo3::buffer::Element + Copy>(
    py: Python<'_>,
    buf: &PyBuffer<T>,
    path: impl fmt::Display,
) -> PyResult<Vec<T>> {
    args::check_1d(path, buf.shape()).map_err(to_py_err)?;
    buf.to_vec(py)
}

/// A number: a Python int or float, or anything with `__float__` (NumPy scalars); not a str, not a
/// bool (NumPy's included). An int too large for a float reads as ±inf, which the range check that
/// follows refuses.
pub(super) fn number(value: &Bound<'_, PyAny>, name: impl FnOnce() -> String) -> PyResult<f64> {
    if let Ok(float) = value.cast::<PyFloat>() {
        return Ok(float.value());
    }
    let not_a_number = || to_py_err(args::not_a_number(name(), &type_name(value)));
    if value.is_instance_of::<PyBool>() || value.is_instance_of::<PyString>() {
        return Err(not_a_number());
    }
    if is_numpy_bool(value) {
        return Err(not_a_number());
    }
    match value.extract::<f64>() {
        Ok(v) => Ok(v),
        Err(error) if error.is_instance_of::<PyOverflowError>(value.py()) => {
            Ok(if value.lt(0)? { f64::NEG_INFINITY } else { f64::INFINITY })
        }
        Err(_) => Err(not_a_number()),
    }
}

/// Whether `value` is NumPy's bool scalar (`numpy.bool`, `bool_` before NumPy 2), which converts to
/// a float as Python's bool does not. A Python int is answered without looking its type's names up.
pub(super) fn is_numpy_bool(value: &Bound<'_, PyAny>) -> bool {
    if value.is_instance_of::<PyInt>() {
        return false;
    }
    let kind = value.get_type();
    kind.name().is_ok_and(|n| n == "bool" || n == "bool_") && kind.module().is_ok_and(|m| m == "numpy")
}

/// An int: a Python int or anything with `__index__` (NumPy integers); not a bool (NumPy's included),
/// not a float.
/// One beyond `i128` is read as its text, for the range check that follows to refuse; `accepted`
/// says what is.
pub(super) fn int(value: &Bound<'_, PyAny>, name: &str, accepted: &str) -> PyResult<args::ReadInt> {
    let wrong_type = || to_py_err(args::not_an_int(name, accepted, &type_name(value)));
    if value.is_instance_of::<PyBool>() || value.is_instance_of::<PyFloat>() {
        return Err(wrong_type());
    }
    // NumPy's bool has `__index__` before NumPy 2.3 (deprecated).
    if is_numpy_bool(value) {
        return Err(wrong_type());
    }
    let index = if value.is_instance_of::<PyInt>() {
        value.clone()
    } else {
        value.call_method0(pyo3::intern!(value.py(), "__index__")).map_err(|_| wrong_type())?
    };
    Ok(match index.extract::<i128>() {
        Ok(v) => Ok(v),
        Err(_) => Err(index.str()?.to_string()),
    })
}

/// An int setting within `range` ([`int`], then the core's range check). Errors read
/// `{name} must be {accepted} (got ...)`.
pub(super) fn setting_int_in<T: TryFrom<i128>>(
    value: &Bound<'_, PyAny>,
    name: &str,
    accepted: &str,
    range: std::ops::RangeInclusive<i128>,
) -> PyResult<T> {
    args::setting_int_in(int(value, name, accepted)?, name, accepted, range).map_err(to_py_err)
}

/// Declares the reader of one int setting for pyo3's `from_py_with`, in one line: the reader, the
/// argument's name, its type and the ints it accepts, which the message states: `low..` (to the
/// type's largest) reads `an int >= low`, `low..=high` reads `an int from low to high` unless the
/// words are given after it. With `Option<T>`, None passes as None. A value outside reads
/// `{name} must be {accepted} (got ...)`, the message [`setting_int_in`] gives.
macro_rules! int_arg {
    ($vis:vis $reader:ident($name:literal) -> Option<$ty:ty>: $($accepted:tt)+) => {
        $vis fn $reader(value: &pyo3::Bound<'_, pyo3::PyAny>) -> pyo3::PyResult<Option<$ty>> {
            $crate::python::args::int_arg!(read($name) -> $ty: $($accepted)+);
            if value.is_none() { Ok(None) } else { read(value).map(Some) }
        }
    };
    ($vis:vis $reader:ident($name:literal) -> $ty:ty: $low:literal..) => {
        $crate::python::args::int_arg!(
            $vis $reader($name) -> $ty: $low..=<$ty>::MAX, concat!("an int >= ", $low)
        );
    };
    ($vis:vis $reader:ident($name:literal) -> $ty:ty: $low:literal..=$high:expr) => {
        $crate::python::args::int_arg!(
            $vis $reader($name) -> $ty: $low..=$high, &format!("an int from {} to {}", $low, $high)
        );
    };
    ($vis:vis $reader:ident($name:literal) -> $ty:ty: $low:literal..=$high:expr, $accepted:expr) => {
        $vis fn $reader(value: &pyo3::Bound<'_, pyo3::PyAny>) -> pyo3::PyResult<$ty> {
            use $crate::{args::widen, python::args::setting_int_in};
            setting_int_in(value, $name, $accepted, $low..=widen($high))
        }
    };
}
pub(super) use int_arg;

/// A str argument's text, borrowed from it; anything else is refused naming the argument (pyo3's own
/// refusal names only the types, and the argument only in a note that Python 3.10 drops).
pub(super) fn text<'a>(value: &'a Bound<'_, PyAny>, name: &str) -> PyResult<&'a str> {
    let text = value.cast::<PyString>().map_err(|_| to_py_err(args::not_a_str(name, &type_name(value))))?;
    text.to_str().map_err(|_| to_py_err(args::not_utf8(name)))
}

/// An argument of a class of the binding, as [`text`] reads a str: `fanfuse.Run` for a `PyRun`.
pub(super) fn instance<'py, T: PyClass>(value: &Bound<'py, PyAny>, name: &str) -> PyResult<PyRef<'py, T>> {
    let class = || format!("fanfuse.{}", T::NAME);
    Ok(value.cast::<T>().map_err(|_| to_py_err(args::not_an_instance(name, &class(), &type_name(value))))?.borrow())
}

/// Declares the reader of one argument for pyo3's `from_py_with`, in one line: a str ([`text`]), or
/// an instance of a class of the binding ([`instance`]); with `Option`, None passes as None.
macro_rules! typed_arg {
    ($vis:vis $reader:ident($name:literal) -> str) => {
        $vis fn $reader<'a>(value: &'a pyo3::Bound<'_, pyo3::PyAny>) -> pyo3::PyResult<&'a str> {
            $crate::python::args::text(value, $name)
        }
    };
    ($vis:vis $reader:ident($name:literal) -> Option<str>) => {
        $vis fn $reader<'a>(value: &'a pyo3::Bound<'_, pyo3::PyAny>) -> pyo3::PyResult<Option<&'a str>> {
            if value.is_none() { Ok(None) } else { $crate::python::args::text(value, $name).map(Some) }
        }
    };
    ($vis:vis $reader:ident($name:literal) -> $class:ty) => {
        $vis fn $reader<'py>(value: &pyo3::Bound<'py, pyo3::PyAny>) -> pyo3::PyResult<pyo3::PyRef<'py, $class>> {
            $crate::python::args::instance(value, $name)
        }
    };
}
pub(super) use typed_arg;

// The str arguments that several entry points take.
typed_arg!(pub(super) rank_from_arg("rank_from") -> str);
typed_arg!(pub(super) name_arg("name") -> str);
typed_arg!(pub(super) run_column_arg("run_column") -> Option<str>);

/// The float64 buffer of `values` (a NumPy array, `array.array("d")`, a memoryview), if it has one.
/// A list or tuple is not asked: its refusal raises an exception, which cost a fifth of the time of
/// `rrf(lists, weights=[1.0, 2.0])`.
pub(super) fn float_buffer(values: &Bound<'_, PyAny>) -> Option<PyBuffer<f64>> {
    if values.is_instance_of::<PyList>() || values.is_instance_of::<PyTuple>() {
        return None;
    }
    PyBuffer::<f64>::get(values).ok()
}

/// A sequence of numbers (a list, a tuple or a 1-D float64 array), each read by [`number`]; `what`
/// names them in the message for anything else (`numbers`, `numbers (one per list)`).
pub(super) fn numbers(values: &Bound<'_, PyAny>, name: &str, what: &str) -> PyResult<Vec<f64>> {
    if let Some(buf) = float_buffer(values) {
        return read_1d(values.py(), &buf, name);
    }
    let items = outer_items(values, name, what)?;
    items.iter().enumerate().map(|(i, v)| number(v, || format!("{name}[{i}]"))).collect()
}

/// A path: a str, or an `os.PathLike` naming a str path (`pathlib.Path`), as the core takes it (UTF-8).
pub(super) fn path(value: &Bound<'_, PyAny>, name: &str) -> PyResult<String> {
    let not_a_path = || to_py_err(args::not_a_path(name, &type_name(value)));
    let named = if value.is_instance_of::<PyString>() {
        value.clone()
    } else {
        value.call_method0(pyo3::intern!(value.py(), "__fspath__")).map_err(|_| not_a_path())?
    };
    let text = named.cast::<PyString>().map_err(|_| not_a_path())?;
    Ok(text.to_str().map_err(|_| to_py_err(args::not_utf8(name)))?.to_owned())
}

/// The reader of an argument `path`, for pyo3's `from_py_with`.
pub(super) fn path_arg(value: &Bound<'_, PyAny>) -> PyResult<String> {
    path(value, "path")
}

/// A sequence of str (a single str is refused, not read as its characters).
pub(super) fn strings(values: &Bound<'_, PyAny>, name: &str) -> PyResult<Vec<String>> {
    let items = outer_items(values, name, "str")?;
    items
        .iter()
        .enumerate()
        .map(|(i, v)| {
            let text =
                v.cast::<PyString>().map_err(|_| to_py_err(args::not_a_str(format!("{name}[{i}]"), &type_name(v))))?;
            let text = text.to_str().map_err(|_| to_py_err(args::not_utf8(format!("{name}[{i}]"))))?;
            Ok(text.to_owned())
        })
        .collect()
}
