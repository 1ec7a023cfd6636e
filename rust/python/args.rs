//! Argument readers shared by every entry point: ordered sequences, numbers, ints in a range, strs,
//! 1-D buffers. Every number argument is read here (a whole int argument by a reader [`int_arg!`]
//! declares, for pyo3's `from_py_with`), so a bad value gets fanfuse's message naming it, never
//! pyo3's `OverflowError` or an unnamed `TypeError`. A bool is refused wherever a number is expected.

use std::fmt;

use pyo3::buffer::PyBuffer;
use pyo3::exceptions::{PyOverflowError, PyTypeError};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyBytes, PyDict, PyFloat, PyFrozenSet, PyInt, PyList, PySet, PyString, PyTuple};

use super::FusionError;

pub(super) fn type_name(obj: &Bound<'_, PyAny>) -> String {
    obj.get_type().name().map_or_else(|_| "?".into(), |n| n.to_string())
}

pub(super) fn outer_items<'py>(
    obj: &Bound<'py, PyAny>,
    name: impl fmt::Display,
    what: &str,
) -> PyResult<Vec<Bound<'py, PyAny>>> {
    if obj.is_instance_of::<PyString>() || obj.is_instance_of::<PyBytes>() {
        return Err(PyTypeError::new_err(format!("{name} must be a sequence of {what}, not a {}", type_name(obj))));
    }
    if obj.is_instance_of::<PySet>() || obj.is_instance_of::<PyFrozenSet>() || obj.is_instance_of::<PyDict>() {
        // Order matters: weights and the rank tie-break follow list order.
        return Err(PyTypeError::new_err(format!(
            "{name} is a {} which has no order; pass a list or tuple of {what}",
            type_name(obj)
        )));
    }
    if let Ok(list) = obj.cast::<PyList>() {
        return Ok(list.iter().collect());
    }
    if let Ok(tuple) = obj.cast::<PyTuple>() {
        return Ok(tuple.iter().collect());
    }
    let iter = obj
        .try_iter()
        .map_err(|_| PyTypeError::new_err(format!("{name} must be a sequence of {what}, not a {}", type_name(obj))))?;
    iter.collect()
}

pub(super) fn read_1d<T: pyo3::buffer::Element + Copy>(
    py: Python<'_>,
    buf: &PyBuffer<T>,
    path: impl fmt::Display,
) -> PyResult<Vec<T>> {
    if buf.dimensions() != 1 {
        return Err(FusionError::new_err(format!(
            "{path} is a {}-D array of shape ({}); it must be 1-D",
            buf.dimensions(),
            buf.shape().iter().map(ToString::to_string).collect::<Vec<_>>().join(", ")
        )));
    }
    buf.to_vec(py)
}

/// A number: a Python int or float, or anything with `__float__` (NumPy scalars); not a str, not a
/// bool. An int too large for a float reads as ±inf, which the range check that follows refuses.
pub(super) fn number(value: &Bound<'_, PyAny>, name: impl FnOnce() -> String) -> PyResult<f64> {
    if let Ok(float) = value.cast::<PyFloat>() {
        return Ok(float.value());
    }
    let not_a_number = || PyTypeError::new_err(format!("{} must be a number (got {})", name(), type_name(value)));
    if value.is_instance_of::<PyBool>() || value.is_instance_of::<PyString>() {
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

/// An int within `range`: a Python int or anything with `__index__` (NumPy integers); not a bool,
/// not a float. Errors read `{name} must be {accepted} (got ...)`.
pub(super) fn int_in<T: TryFrom<i128>>(
    value: &Bound<'_, PyAny>,
    name: &str,
    accepted: &str,
    range: std::ops::RangeInclusive<i128>,
) -> PyResult<T> {
    let wrong_type = || PyTypeError::new_err(format!("{name} must be {accepted} (got {})", type_name(value)));
    if value.is_instance_of::<PyBool>() || value.is_instance_of::<PyFloat>() {
        return Err(wrong_type());
    }
    let index = if value.is_instance_of::<PyInt>() {
        value.clone()
    } else {
        value.call_method0(pyo3::intern!(value.py(), "__index__")).map_err(|_| wrong_type())?
    };
    let v = match index.extract::<i128>() {
        Ok(v) => v,
        Err(_) if index.lt(0)? => i128::MIN,
        Err(_) => i128::MAX,
    };
    match T::try_from(v).ok().filter(|_| range.contains(&v)) {
        Some(v) => Ok(v),
        None => Err(FusionError::new_err(format!("{name} must be {accepted} (got {})", index.str()?))),
    }
}

/// Declares the reader of one int argument for pyo3's `from_py_with`, in one line: the reader, the
/// argument's name, its type and the ints it accepts, which the message states: `low..` (to the
/// type's largest) reads `an int >= low`, `low..=high` reads `an int from low to high` unless the
/// words are given after it. With `Option<T>`, None passes as None. A value outside reads
/// `{name} must be {accepted} (got ...)`, the message [`int_in`] gives.
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
            use $crate::python::args::{int_in, widen};
            int_in(value, $name, $accepted, $low..=widen($high))
        }
    };
}
pub(super) use int_arg;

/// An int bound as [`int_in`] takes it (every bound a Rust int type has fits, but `u128`'s top).
pub(super) fn widen<T: TryInto<i128>>(bound: T) -> i128 {
    bound.try_into().unwrap_or(i128::MAX)
}

/// A sequence of numbers (a list, a tuple or a 1-D float64 array), each read by [`number`].
pub(super) fn numbers(values: &Bound<'_, PyAny>, name: &str) -> PyResult<Vec<f64>> {
    if let Ok(buf) = PyBuffer::<f64>::get(values) {
        return read_1d(values.py(), &buf, name);
    }
    let items = outer_items(values, name, "numbers")?;
    items.iter().enumerate().map(|(i, v)| number(v, || format!("{name}[{i}]"))).collect()
}

/// A sequence of str (a single str is refused, not read as its characters).
pub(super) fn strings(values: &Bound<'_, PyAny>, name: &str) -> PyResult<Vec<String>> {
    let items = outer_items(values, name, "str")?;
    items
        .iter()
        .enumerate()
        .map(|(i, v)| {
            let text = v
                .cast::<PyString>()
                .map_err(|_| PyTypeError::new_err(format!("{name}[{i}] must be a str (got {})", type_name(v))))?;
            let text = text.to_str().map_err(|_| {
                FusionError::new_err(format!(
                    "{name}[{i}] is not valid Unicode (a lone surrogate); it must encode as UTF-8"
                ))
            })?;
            Ok(text.to_owned())
        })
        .collect()
}
