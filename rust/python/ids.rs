//! Ids copied out of Python objects: lists, tuples, any iterable, 1-D integer buffers.

use std::fmt;

use pyo3::buffer::PyBuffer;
use pyo3::prelude::*;
use pyo3::types::{
    PyBool, PyByteArray, PyBytes, PyDict, PyFloat, PyFrozenSet, PyInt, PyList, PySet, PyString, PyTuple,
};

use super::args::{is_numpy_bool, iterate, read_1d, type_name};
use super::to_py_err;
use crate::owned_ids::{IdKind, ListPath, OwnedIds};

impl OwnedIds {
    /// Appends one ranked list: a list/tuple/sequence of str or int ids, or a 1-D integer array.
    pub(super) fn push_list(&mut self, list: &Bound<'_, PyAny>, path: ListPath) -> PyResult<()> {
        if let Ok(list) = list.cast::<PyList>() {
            self.push_py_list(list, path)?;
        } else if let Ok(tuple) = list.cast::<PyTuple>() {
            for (pos, item) in tuple.iter().enumerate() {
                self.push_id(&item, path, pos)?;
            }
        } else if list.is_instance_of::<PyString>()
            || list.is_instance_of::<PyBytes>()
            || list.is_instance_of::<PyByteArray>()
        {
            return Err(to_py_err(path.not_a_list(&type_name(list))));
        } else if list.is_instance_of::<PySet>()
            || list.is_instance_of::<PyFrozenSet>()
            || list.is_instance_of::<PyDict>()
        {
            return Err(to_py_err(path.unordered(&type_name(list))));
        } else if !self.push_int_buffer(list, path)? {
            let items = iterate(list, || path.not_iterable(&type_name(list)))?;
            for (pos, item) in items.enumerate() {
                self.push_id(&item?, path, pos)?;
            }
        }
        self.bounds.push(self.len());
        Ok(())
    }

    /// The items of a Python list. On GIL builds, str and int items are read through borrowed
    /// pointers, without a reference-count round trip and a PyO3 handle per item (half the
    /// extraction time of 4 × 100 str ids read with them); anything else goes through [`Self::push_id`].
    #[cfg(not(Py_GIL_DISABLED))]
    fn push_py_list(&mut self, list: &Bound<'_, PyList>, path: ListPath) -> PyResult<()> {
        let py = list.py();
        let raw = list.as_ptr();
        let mut at: pyo3::ffi::Py_ssize_t = 0;
        // SAFETY (every `unsafe` below): the GIL is held and `list` keeps the list alive. The length is
        // re-read on every step, and a borrowed item is used only while no Python code can run (str
        // bytes and int values are copied out at once) or after `from_borrowed_ptr` took a strong
        // reference: so even an `__index__` that mutates the list cannot make us read freed memory.
        while at < unsafe { pyo3::ffi::PyList_GET_SIZE(raw) } {
            let item = unsafe { pyo3::ffi::PyList_GET_ITEM(raw, at) };
            prefetch_item(raw, at + PREFETCH_AHEAD);
            let pos = at.unsigned_abs();
            if self.kind_is(IdKind::Str) && unsafe { pyo3::ffi::PyUnicode_Check(item) } != 0 {
                let mut size: pyo3::ffi::Py_ssize_t = 0;
                let data = unsafe { pyo3::ffi::PyUnicode_AsUTF8AndSize(item, &raw mut size) };
                if data.is_null() {
                    drop(PyErr::take(py));
                    return Err(to_py_err(path.not_utf8(pos)));
                }
                let bytes = unsafe { std::slice::from_raw_parts(data.cast::<u8>(), size.unsigned_abs()) };
                // CPython's UTF-8 form of a str is valid UTF-8 (it fails above on a lone surrogate).
                self.push_str(unsafe { std::str::from_utf8_unchecked(bytes) });
            } else if let Some(value) = self.kind_is(IdKind::Int).then(|| unsafe { exact_i64(item) }).flatten() {
                self.ints.push(value);
            } else {
                // Everything else, including the errors (a too-large int gets its message there).
                self.push_id(&unsafe { Bound::from_borrowed_ptr(py, item) }, path, pos)?;
            }
            at += 1;
        }
        Ok(())
    }

    /// Free-threaded builds: another thread may change the list meanwhile, so take each item as a
    /// strong reference.
    #[cfg(Py_GIL_DISABLED)]
    fn push_py_list(&mut self, list: &Bound<'_, PyList>, path: ListPath) -> PyResult<()> {
        for (pos, item) in list.iter().enumerate() {
            self.push_id(&item, path, pos)?;
        }
        Ok(())
    }

    pub(super) fn push_id(&mut self, item: &Bound<'_, PyAny>, path: ListPath, pos: usize) -> PyResult<()> {
        if let Ok(text) = item.cast::<PyString>() {
            self.set_kind(IdKind::Str, || format!("{path}[{pos}]")).map_err(to_py_err)?;
            let text = text.to_str().map_err(|_| to_py_err(path.not_utf8(pos)))?;
            self.push_str(text);
            return Ok(());
        }
        if item.is_instance_of::<PyBool>() || item.is_instance_of::<PyFloat>() || is_numpy_bool(item) {
            return Err(to_py_err(path.not_an_id(pos, &type_name(item))));
        }
        // Python ints and anything with __index__ (NumPy integer scalars).
        if item.is_instance_of::<PyInt>() || item.hasattr(pyo3::intern!(item.py(), "__index__"))? {
            self.set_kind(IdKind::Int, || format!("{path}[{pos}]")).map_err(to_py_err)?;
            let value = item.extract::<i64>().map_err(|_| {
                to_py_err(path.too_large(pos, item.str().map_or_else(|_| "?".into(), |s| s.to_string())))
            })?;
            self.ints.push(value);
            return Ok(());
        }
        Err(to_py_err(path.not_an_id(pos, &type_name(item))))
    }

    /// Reads a 1-D integer buffer (NumPy array, `array.array`, memoryview) without a Python object per
    /// element. Returns false when `obj` does not support the buffer protocol.
    fn push_int_buffer(&mut self, obj: &Bound<'_, PyAny>, path: ListPath) -> PyResult<bool> {
        // SAFETY: PyObject_CheckBuffer only inspects the type slots of a live object.
        if unsafe { pyo3::ffi::PyObject_CheckBuffer(obj.as_ptr()) } == 0 {
            return Ok(false);
        }
        // Each integer element type in turn, int64 (NumPy's default) first.
        let readers: [IntBufferReader; 8] = [
            int_buffer::<i64>,
            int_buffer::<i32>,
            int_buffer::<i16>,
            int_buffer::<i8>,
            int_buffer::<u32>,
            int_buffer::<u16>,
            int_buffer::<u8>,
            int_buffer::<u64>,
        ];
        for read in readers {
            if read(self, obj, path)? {
                return Ok(true);
            }
        }
        let dtype = obj.getattr("dtype").and_then(|d| d.str().map(|s| s.to_string()));
        Err(to_py_err(path.not_integers(&type_name(obj), &dtype.unwrap_or_else(|_| "non-integer".into()))))
    }
}

/// How many list items ahead [`OwnedIds::push_py_list`] asks for the item's object. Ids of a large
/// batch built earlier are out of cache, and CPython's small-object allocator places a str of 49-64
/// bytes 48 bytes past a 64-byte boundary (after its pool header), so the str's flags and bytes sit on
/// the cache line after its type pointer: the flag load in `PyUnicode_AsUTF8AndSize` was 92% of
/// that function and a third of `rrf_batch` (a miss per id, one after the other). Requested ahead,
/// the misses overlap.
#[cfg(not(Py_GIL_DISABLED))]
const PREFETCH_AHEAD: pyo3::ffi::Py_ssize_t = 32;

/// Asks the CPU to start loading the object of `list[at]`: its first two cache lines (the header,
/// then a str's length, flags and first bytes). Nothing if `at` is past the end.
#[cfg(not(Py_GIL_DISABLED))]
#[inline]
fn prefetch_item(list: *mut pyo3::ffi::PyObject, at: pyo3::ffi::Py_ssize_t) {
    // SAFETY: the caller holds the GIL and a reference to `list`; the index is checked against the
    // current length, and a prefetch of any address is harmless (it never faults).
    #[cfg(target_arch = "x86_64")]
    unsafe {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        if at < pyo3::ffi::PyList_GET_SIZE(list) {
            let item = pyo3::ffi::PyList_GET_ITEM(list, at).cast::<i8>();
            _mm_prefetch::<_MM_HINT_T0>(item);
            _mm_prefetch::<_MM_HINT_T0>(item.wrapping_add(40));
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (list, at);
}

/// Appends the ids of a 1-D buffer of one integer type: false when `obj` is not one.
type IntBufferReader = fn(&mut OwnedIds, &Bound<'_, PyAny>, ListPath) -> PyResult<bool>;

/// The [`IntBufferReader`] of element type `T`.
fn int_buffer<T>(ids: &mut OwnedIds, obj: &Bound<'_, PyAny>, path: ListPath) -> PyResult<bool>
where
    T: pyo3::buffer::Element + Copy + fmt::Display,
    i64: TryFrom<T>,
{
    let Ok(buf) = PyBuffer::<T>::get(obj) else {
        return Ok(false);
    };
    ids.push_ints(&read_1d(obj.py(), &buf, path)?, path).map_err(to_py_err)?;
    Ok(true)
}

/// The value of an exact `int` (not a bool or subclass) that fits in `i64`.
///
/// # Safety
/// `item` must point to a live object and the caller must hold the GIL.
#[cfg(not(Py_GIL_DISABLED))]
unsafe fn exact_i64(item: *mut pyo3::ffi::PyObject) -> Option<i64> {
    if unsafe { pyo3::ffi::PyLong_CheckExact(item) } == 0 {
        return None;
    }
    let mut overflow = 0;
    // Cannot fail or run Python code for an exact int; `overflow` reports values beyond 64 bits.
    let value = unsafe { pyo3::ffi::PyLong_AsLongLongAndOverflow(item, &raw mut overflow) };
    (overflow == 0).then_some(value)
}
