//! The Python binding, and the only file that imports pyo3.
//!
//! Every entry point follows one pattern: copy the Python inputs into owned Rust buffers while
//! holding the GIL ([`OwnedIds`]), release the GIL and run the core ([`detached`]), then build the
//! Python result. Errors from the core map to Python in one place ([`to_py_err`]).

use std::fmt;
use std::sync::Arc;

use pyo3::buffer::PyBuffer;
use pyo3::exceptions::{PyIndexError, PyRuntimeError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{
    PyBool, PyByteArray, PyBytes, PyDict, PyFloat, PyFrozenSet, PyInt, PyList, PySet, PyString, PyTuple,
};

use crate::batch;
use crate::error::FusionError as CoreError;
use crate::fusion;
use crate::lists::RankedLists;
use crate::rrf::{rrf as rrf_core, FusedEntry, RrfParams, TieBreak};
// Run files (issue 3).

use crate::bulk::{self, FuseFilesOptions};
use crate::eval::{self, Metric};
use crate::fusion::FuseParams;
use crate::runs::qrels::Qrels;
use crate::runs::write::OutFormat;
use crate::runs::{self, RankFrom, Run as CoreRun};

pyo3::create_exception!(
    fanfuse,
    FusionError,
    PyValueError,
    "Invalid fusion input: the message names the argument (or file:line) and what is accepted."
);

/// The one mapping from core errors to Python exceptions.
fn to_py_err(error: CoreError) -> PyErr {
    match error {
        CoreError::InvalidArgument(message) => FusionError::new_err(message),
        // Malformed files and unusable paths are bad input too: same family, message keeps file:line.
        error @ (CoreError::Input { .. } | CoreError::Io { .. }) => FusionError::new_err(error.to_string()),
    }
}

/// Releases the GIL around `work` (which only sees owned Rust data) and maps its error.
fn detached<T, F>(py: Python<'_>, work: F) -> PyResult<T>
where
    T: Send,
    F: FnOnce() -> Result<T, CoreError> + Send,
{
    py.detach(work).map_err(to_py_err)
}

// ---------------------------------------------------------------------------------------------
// Inputs: ids copied out of Python objects.

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum IdKind {
    Str,
    Int,
}

impl IdKind {
    fn article(self) -> &'static str {
        match self {
            Self::Str => "a str",
            Self::Int => "an int",
        }
    }
}

/// Where a list sits in the arguments, for error messages: `lists[2]` or `queries[7][2]`.
#[derive(Clone, Copy)]
struct ListPath {
    root: &'static str,
    query: Option<usize>,
    list: usize,
}

impl fmt::Display for ListPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.query {
            Some(q) => write!(f, "{}[{q}][{}]", self.root, self.list),
            None => write!(f, "{}[{}]", self.root, self.list),
        }
    }
}

/// All ids of a call (or of a whole batch), copied into two flat buffers: str ids as one UTF-8
/// arena plus end offsets, int ids as one `i64` vector. `bounds` delimits the lists.
struct OwnedIds {
    kind: Option<(IdKind, String)>,
    text: Vec<u8>,
    text_ends: Vec<usize>,
    ints: Vec<i64>,
    bounds: Vec<usize>,
}

impl OwnedIds {
    fn new() -> Self {
        Self { kind: None, text: Vec::new(), text_ends: Vec::new(), ints: Vec::new(), bounds: vec![0] }
    }

    /// Empties the buffers (keeping their memory) for the next chunk of a batch. The id kind stays:
    /// one batch is one call, all str or all int.
    fn clear(&mut self) {
        self.text.clear();
        self.text_ends.clear();
        self.ints.clear();
        self.bounds.clear();
        self.bounds.push(0);
    }

    fn len(&self) -> usize {
        self.text_ends.len() + self.ints.len()
    }

    fn set_kind(&mut self, kind: IdKind, path: impl FnOnce() -> String) -> PyResult<()> {
        match &self.kind {
            Some((seen, _)) if *seen == kind => Ok(()),
            Some((seen, first)) => Err(PyTypeError::new_err(format!(
                "{} is {}, but {first} is {}: all ids in one call must be str, or all int",
                path(),
                kind.article(),
                seen.article()
            ))),
            None => {
                self.kind = Some((kind, path()));
                Ok(())
            }
        }
    }

    /// Appends one ranked list: a list/tuple/sequence of str or int ids, or a 1-D integer array.
    fn push_list(&mut self, list: &Bound<'_, PyAny>, path: ListPath) -> PyResult<()> {
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
            return Err(PyTypeError::new_err(format!(
                "{path} is a {} but must be a ranked list of ids; wrap a single list in a list: [['a', 'b']]",
                type_name(list)
            )));
        } else if list.is_instance_of::<PySet>()
            || list.is_instance_of::<PyFrozenSet>()
            || list.is_instance_of::<PyDict>()
        {
            return Err(PyTypeError::new_err(format!(
                "{path} is a {} which has no rank order; pass a list, tuple or 1-D integer array",
                type_name(list)
            )));
        } else if !self.push_int_buffer(list, path)? {
            let items = list.try_iter().map_err(|_| {
                PyTypeError::new_err(format!(
                    "{path} is a {} but must be a ranked list of ids (list, tuple or 1-D integer array)",
                    type_name(list)
                ))
            })?;
            for (pos, item) in items.enumerate() {
                self.push_id(&item?, path, pos)?;
            }
        }
        self.bounds.push(self.len());
        Ok(())
    }

    fn kind_is(&self, kind: IdKind) -> bool {
        matches!(self.kind, Some((seen, _)) if seen == kind)
    }

    /// The items of a Python list. On GIL builds, str and int items are read through borrowed
    /// pointers, without a reference-count round trip and a PyO3 handle per item (this halved the
    /// extraction time of 4 × 100 str ids); anything else goes through [`Self::push_id`].
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
                    return Err(not_utf8(path, pos));
                }
                let bytes = unsafe { std::slice::from_raw_parts(data.cast::<u8>(), size.unsigned_abs()) };
                self.text.extend_from_slice(bytes);
                self.text_ends.push(self.text.len());
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

    fn push_id(&mut self, item: &Bound<'_, PyAny>, path: ListPath, pos: usize) -> PyResult<()> {
        if let Ok(text) = item.cast::<PyString>() {
            self.set_kind(IdKind::Str, || format!("{path}[{pos}]"))?;
            let text = text.to_str().map_err(|_| not_utf8(path, pos))?;
            self.text.extend_from_slice(text.as_bytes());
            self.text_ends.push(self.text.len());
            return Ok(());
        }
        if item.is_instance_of::<PyBool>() || item.is_instance_of::<PyFloat>() {
            return Err(not_an_id(item, path, pos));
        }
        // Python ints and anything with __index__ (NumPy integer scalars).
        if item.is_instance_of::<PyInt>() || item.hasattr(pyo3::intern!(item.py(), "__index__"))? {
            self.set_kind(IdKind::Int, || format!("{path}[{pos}]"))?;
            let value = item.extract::<i64>().map_err(|_| {
                FusionError::new_err(format!(
                    "{path}[{pos}] = {} does not fit in a signed 64-bit integer; int ids must be in [-2**63, 2**63 - 1]",
                    item.str().map_or_else(|_| "?".into(), |s| s.to_string())
                ))
            })?;
            self.ints.push(value);
            return Ok(());
        }
        Err(not_an_id(item, path, pos))
    }

    /// Reads a 1-D integer buffer (NumPy array, `array.array`, memoryview) without a Python object per
    /// element. Returns false when `obj` does not support the buffer protocol.
    fn push_int_buffer(&mut self, obj: &Bound<'_, PyAny>, path: ListPath) -> PyResult<bool> {
        // SAFETY: PyObject_CheckBuffer only inspects the type slots of a live object.
        if unsafe { pyo3::ffi::PyObject_CheckBuffer(obj.as_ptr()) } == 0 {
            return Ok(false);
        }
        let values = if let Ok(buf) = PyBuffer::<i64>::get(obj) {
            Some(read_1d(obj.py(), &buf, path)?)
        } else if let Ok(buf) = PyBuffer::<i32>::get(obj) {
            Some(widen(read_1d(obj.py(), &buf, path)?))
        } else if let Ok(buf) = PyBuffer::<i16>::get(obj) {
            Some(widen(read_1d(obj.py(), &buf, path)?))
        } else if let Ok(buf) = PyBuffer::<i8>::get(obj) {
            Some(widen(read_1d(obj.py(), &buf, path)?))
        } else if let Ok(buf) = PyBuffer::<u32>::get(obj) {
            Some(widen(read_1d(obj.py(), &buf, path)?))
        } else if let Ok(buf) = PyBuffer::<u16>::get(obj) {
            Some(widen(read_1d(obj.py(), &buf, path)?))
        } else if let Ok(buf) = PyBuffer::<u8>::get(obj) {
            Some(widen(read_1d(obj.py(), &buf, path)?))
        } else if let Ok(buf) = PyBuffer::<u64>::get(obj) {
            let raw = read_1d(obj.py(), &buf, path)?;
            let mut out = Vec::with_capacity(raw.len());
            for (pos, v) in raw.into_iter().enumerate() {
                out.push(i64::try_from(v).map_err(|_| {
                    FusionError::new_err(format!(
                        "{path}[{pos}] = {v} does not fit in a signed 64-bit integer; int ids must be in [-2**63, 2**63 - 1]"
                    ))
                })?);
            }
            Some(out)
        } else {
            None
        };
        let Some(values) = values else {
            let dtype = obj
                .getattr("dtype")
                .and_then(|d| d.str().map(|s| s.to_string()))
                .unwrap_or_else(|_| "non-integer".into());
            return Err(PyTypeError::new_err(format!(
                "{path} is a {} of dtype {dtype}; ranked lists must hold str or int ids (use an integer dtype)",
                type_name(obj)
            )));
        };
        if !values.is_empty() {
            self.set_kind(IdKind::Int, || format!("{path}[0]"))?;
        }
        self.ints.extend_from_slice(&values);
        Ok(true)
    }

    /// Str id number `i` (counting over all lists) of a str call.
    fn str_at(&self, i: usize) -> &str {
        let start = if i == 0 { 0 } else { self.text_ends[i - 1] };
        // SAFETY: the arena holds whole `&str`s back to back and `text_ends` marks their boundaries,
        // so every slice is valid UTF-8 (re-validating cost 15% of a call).
        unsafe { std::str::from_utf8_unchecked(&self.text[start..self.text_ends[i]]) }
    }

    /// Runs the kernel on the lists that `bounds` (a window of `self.bounds`) delimits. The entries
    /// index all ids of `self`. Str ids get a view of this query only, built here (on the worker
    /// thread in a batch), rather than one view of the whole batch: that view cost 16 bytes per id
    /// of memory traffic and was the largest single cost of a 10k-query batch.
    fn fuse(&self, bounds: &[usize], params: &RrfParams) -> Result<Vec<FusedEntry>, CoreError> {
        if !self.kind_is(IdKind::Str) {
            return rrf_core(RankedLists::new(&self.ints, bounds), params);
        }
        let (Some(&first), Some(&end)) = (bounds.first(), bounds.last()) else {
            return rrf_core(RankedLists::new(&[] as &[&str], &[]), params);
        };
        let strs: Vec<&str> = (first..end).map(|i| self.str_at(i)).collect();
        let local_bounds: Vec<usize> = bounds.iter().map(|b| b - first).collect();
        let mut entries = rrf_core(RankedLists::new(&strs, &local_bounds), params)?;
        for entry in &mut entries {
            entry.item += first;
        }
        Ok(entries)
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

fn read_1d<T: pyo3::buffer::Element + Copy>(py: Python<'_>, buf: &PyBuffer<T>, path: ListPath) -> PyResult<Vec<T>> {
    if buf.dimensions() != 1 {
        return Err(FusionError::new_err(format!(
            "{path} is a {}-D array of shape ({}); each ranked list must be 1-D",
            buf.dimensions(),
            buf.shape().iter().map(ToString::to_string).collect::<Vec<_>>().join(", ")
        )));
    }
    buf.to_vec(py)
}

fn widen<T: Into<i64>>(values: Vec<T>) -> Vec<i64> {
    values.into_iter().map(Into::into).collect()
}

fn type_name(obj: &Bound<'_, PyAny>) -> String {
    obj.get_type().name().map_or_else(|_| "?".into(), |n| n.to_string())
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

fn not_utf8(path: ListPath, pos: usize) -> PyErr {
    FusionError::new_err(format!("{path}[{pos}] is not valid Unicode (a lone surrogate); ids must encode as UTF-8"))
}

fn not_an_id(item: &Bound<'_, PyAny>, path: ListPath, pos: usize) -> PyErr {
    PyTypeError::new_err(format!(
        "{path}[{pos}] is a {}; ids must be str, or int (Python or NumPy integers)",
        type_name(item)
    ))
}

fn outer_items<'py>(obj: &Bound<'py, PyAny>, name: impl fmt::Display, what: &str) -> PyResult<Vec<Bound<'py, PyAny>>> {
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

// ---------------------------------------------------------------------------------------------
// Options.

fn parse_params(
    k: f64,
    weights: Option<&Bound<'_, PyAny>>,
    top_k: Option<&Bound<'_, PyAny>>,
    tie_break: &str,
) -> PyResult<RrfParams> {
    let tie_break: TieBreak = tie_break.parse().map_err(to_py_err)?;
    let weights = weights.map(parse_weights).transpose()?;
    let top_k = top_k.map(parse_top_k).transpose()?;
    Ok(RrfParams { k, weights, top_k, tie_break })
}

fn parse_weights(weights: &Bound<'_, PyAny>) -> PyResult<Vec<f64>> {
    let items = outer_items(weights, "weights", "numbers (one per list)")?;
    items
        .iter()
        .enumerate()
        .map(|(i, w)| {
            if w.is_instance_of::<PyString>() {
                return Err(PyTypeError::new_err(format!("weights[{i}] must be a number (got str)")));
            }
            w.extract::<f64>()
                .map_err(|_| PyTypeError::new_err(format!("weights[{i}] must be a number (got {})", type_name(w))))
        })
        .collect()
}

fn parse_top_k(top_k: &Bound<'_, PyAny>) -> PyResult<usize> {
    if top_k.is_instance_of::<PyBool>() || !top_k.is_instance_of::<PyInt>() && !top_k.hasattr("__index__")? {
        return Err(PyTypeError::new_err(format!("top_k must be None or an int >= 0 (got {})", type_name(top_k))));
    }
    let value: i128 = top_k.extract().unwrap_or(i128::MAX);
    if value < 0 {
        return Err(FusionError::new_err(format!("top_k must be None or an int >= 0 (got {value})")));
    }
    Ok(usize::try_from(value).unwrap_or(usize::MAX))
}

// ---------------------------------------------------------------------------------------------
// Output.

/// Fused ids, owned: str ids as the Python strs returned, int ids as plain integers.
enum FusedIds {
    Str(Vec<Py<PyString>>),
    Int(Vec<i64>),
}

/// The result of one fusion: fused ids and their scores, aligned, best first.
///
/// It keeps Rust vectors, not Python lists, and is not tracked by Python's garbage collector: with
/// two lists per result, a 10k-query batch created 20k tracked containers, which triggered full
/// collections walking every input list (~15% of the batch). `ids` and `scores` build fresh lists.
#[pyclass(frozen, module = "fanfuse", name = "Fused", sequence)]
pub struct Fused {
    ids: FusedIds,
    scores: Vec<f64>,
    /// Per-hit contributions (`fuse(..., explain=True)`), else None.
    explain: Option<Py<PyList>>,
}

impl Fused {
    /// `entries` index the ids of `ids` (as [`OwnedIds::fuse`] returns them).
    fn build(py: Python<'_>, ids: &OwnedIds, entries: &[FusedEntry]) -> Self {
        let fused_ids = if ids.kind_is(IdKind::Str) {
            FusedIds::Str(entries.iter().map(|e| PyString::new(py, ids.str_at(e.item)).unbind()).collect())
        } else {
            FusedIds::Int(entries.iter().map(|e| ids.ints[e.item]).collect())
        };
        Self { ids: fused_ids, scores: entries.iter().map(|e| e.score).collect(), explain: None }
    }

    fn id<'py>(&self, py: Python<'py>, at: usize) -> PyResult<Bound<'py, PyAny>> {
        Ok(match &self.ids {
            FusedIds::Str(strs) => strs[at].bind(py).clone().into_any(),
            FusedIds::Int(ints) => ints[at].into_pyobject(py)?.into_any(),
        })
    }
}

#[pymethods]
impl Fused {
    /// Fused ids, best first (str or int, like the input).
    #[getter]
    fn ids<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        match &self.ids {
            FusedIds::Str(strs) => PyList::new(py, strs.iter().map(|s| s.bind(py))),
            FusedIds::Int(ints) => PyList::new(py, ints),
        }
    }

    /// Fused scores, aligned with `ids`.
    #[getter]
    fn scores<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        PyList::new(py, &self.scores)
    }

    /// With `fuse(..., explain=True)`: one list of `Contribution`s per hit, aligned with `ids`; else None.
    #[getter]
    fn explain(&self, py: Python<'_>) -> Option<Py<PyList>> {
        self.explain.as_ref().map(|e| e.clone_ref(py))
    }

    fn __len__(&self) -> usize {
        self.scores.len()
    }

    fn __getitem__<'py>(&self, py: Python<'py>, index: isize) -> PyResult<Bound<'py, PyTuple>> {
        let len = self.__len__();
        let at = if index < 0 { len.checked_sub(index.unsigned_abs()) } else { Some(index.unsigned_abs()) };
        let Some(at) = at.filter(|&at| at < len) else {
            return Err(PyIndexError::new_err(format!("Fused index {index} out of range for {len} hits")));
        };
        PyTuple::new(py, [self.id(py, at)?, self.scores[at].into_pyobject(py)?.into_any()])
    }

    fn __iter__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let zip = py.import("builtins")?.getattr("zip")?;
        zip.call1((self.ids(py)?, self.scores(py)?))
    }

    #[allow(clippy::float_cmp)] // equal results have bit-identical scores (the contract sums in one order)
    fn __eq__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<bool> {
        let Ok(other) = other.cast::<Fused>() else { return Ok(false) };
        let other = other.get();
        if self.scores != other.scores {
            return Ok(false);
        }
        match (&self.ids, &other.ids) {
            (FusedIds::Int(a), FusedIds::Int(b)) => Ok(a == b),
            (FusedIds::Str(a), FusedIds::Str(b)) => {
                for (x, y) in a.iter().zip(b) {
                    if !x.bind(py).as_any().eq(y.bind(py))? {
                        return Ok(false);
                    }
                }
                Ok(true)
            }
            // An empty result has no id kind: [] == [] whatever the input was.
            _ => Ok(self.scores.is_empty()),
        }
    }

    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        let shown = self.__len__().min(5);
        let mut pairs = Vec::with_capacity(shown);
        for i in 0..shown {
            pairs.push(format!("({}, {:.6})", self.id(py, i)?.repr()?, self.scores[i]));
        }
        let more = self.__len__() - shown;
        let tail = if more > 0 { format!(", … {more} more") } else { String::new() };
        Ok(format!("Fused([{}{tail}])", pairs.join(", ")))
    }
}

// ---------------------------------------------------------------------------------------------
// Entry points.

/// Weighted Reciprocal Rank Fusion of ranked id lists. See `_core.pyi` for the documentation.
#[pyfunction]
#[pyo3(signature = (lists, /, *, k = 60.0, weights = None, top_k = None, tie_break = "rank"))]
fn rrf(
    py: Python<'_>,
    lists: &Bound<'_, PyAny>,
    k: f64,
    weights: Option<&Bound<'_, PyAny>>,
    top_k: Option<&Bound<'_, PyAny>>,
    tie_break: &str,
) -> PyResult<Fused> {
    let params = parse_params(k, weights, top_k, tie_break)?;
    let mut ids = OwnedIds::new();
    for (i, list) in outer_items(lists, "lists", "ranked id lists")?.iter().enumerate() {
        ids.push_list(list, ListPath { root: "lists", query: None, list: i })?;
    }
    let entries = detached(py, || ids.fuse(&ids.bounds, &params))?;
    Ok(Fused::build(py, &ids, &entries))
}

/// A batch copied into Rust: all ids, and per query the window of `ids.bounds` holding its lists.
struct OwnedBatch {
    ids: OwnedIds,
    /// Query q's lists are delimited by `ids.bounds[query_lists[q]..=query_lists[q + 1]]`.
    query_lists: Vec<usize>,
}

impl OwnedBatch {
    fn new() -> Self {
        Self { ids: OwnedIds::new(), query_lists: vec![0] }
    }

    /// An empty chunk that continues this one: the same id kind is required.
    fn next_chunk(&self) -> Self {
        let mut next = Self::new();
        next.ids.kind.clone_from(&self.ids.kind);
        next
    }

    /// Replaces the contents with `queries` (a slice of the whole batch that starts at query number
    /// `first`), reusing the buffers: fresh ones per chunk cost a page fault every 4 KiB.
    fn refill(&mut self, queries: &[Bound<'_, PyAny>], first: usize, params: &RrfParams) -> PyResult<()> {
        let Self { ids, query_lists } = self;
        ids.clear();
        query_lists.clear();
        query_lists.push(0);
        for (q, query) in (first..).zip(queries) {
            let lists = outer_items(query, QueryPath(q), "ranked id lists")?;
            if let Some(w) = &params.weights {
                if w.len() != lists.len() {
                    return Err(FusionError::new_err(format!(
                        "queries[{q}] has {} lists but weights has {} entries; every query needs one weight per list",
                        lists.len(),
                        w.len()
                    )));
                }
            }
            for (i, list) in lists.iter().enumerate() {
                ids.push_list(list, ListPath { root: "queries", query: Some(q), list: i })?;
            }
            query_lists.push(ids.bounds.len() - 1);
        }
        Ok(())
    }

    fn query_bounds(&self, q: usize) -> &[usize] {
        &self.ids.bounds[self.query_lists[q]..=self.query_lists[q + 1]]
    }

    fn len(&self) -> usize {
        self.query_lists.len() - 1
    }

    /// Every query fused, in order, with the GIL released by the caller.
    fn fuse(&self, params: &RrfParams, threads: Option<usize>) -> Result<Vec<Vec<FusedEntry>>, CoreError> {
        let queries: Vec<usize> = (0..self.len()).collect();
        batch::map_queries(&queries, threads, |&q| self.ids.fuse(self.query_bounds(q), params)).into_iter().collect()
    }
}

/// A chunk of a batch, and its fused queries.
type FusedChunk = (OwnedBatch, Result<Vec<Vec<FusedEntry>>, CoreError>);

/// `queries[q]` in error messages, formatted only when an error needs it.
struct QueryPath(usize);

impl fmt::Display for QueryPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "queries[{}]", self.0)
    }
}

fn check_threads(threads: Option<usize>) -> PyResult<()> {
    if threads == Some(0) {
        return Err(FusionError::new_err("threads must be None (FANFUSE_NUM_THREADS, else 1) or an int >= 1 (got 0)"));
    }
    Ok(())
}

/// RRF of many queries in one call. See `_core.pyi` for the documentation.
#[pyfunction]
#[pyo3(signature = (queries, /, *, k = 60.0, weights = None, top_k = None, tie_break = "rank", threads = None))]
#[allow(clippy::too_many_arguments)] // mirrors the Python signature: data plus keyword options
fn rrf_batch(
    py: Python<'_>,
    queries: &Bound<'_, PyAny>,
    k: f64,
    weights: Option<&Bound<'_, PyAny>>,
    top_k: Option<&Bound<'_, PyAny>>,
    tie_break: &str,
    threads: Option<usize>,
) -> PyResult<Vec<Fused>> {
    let params = parse_params(k, weights, top_k, tie_break)?;
    // Check k and the weight values now, so a bad option fails even for an empty batch.
    params.validate(params.weights.as_ref().map_or(0, Vec::len)).map_err(to_py_err)?;
    check_threads(threads)?;
    let queries = outer_items(queries, "queries", "queries (each a sequence of ranked id lists)")?;
    let mut fused = Vec::with_capacity(queries.len());
    let Some(pool) = batch::pool_for(threads, queries.len()) else {
        // Chunk by chunk, so that the ids copied out of Python are fused while still in cache.
        let mut owned = OwnedBatch::new();
        for (c, chunk) in queries.chunks(batch::CHUNK).enumerate() {
            owned.refill(chunk, c * batch::CHUNK, &params)?;
            let entries = detached(py, || owned.fuse(&params, Some(1)))?;
            fused.extend(entries.iter().map(|e| Fused::build(py, &owned.ids, e)));
        }
        return Ok(fused);
    };
    // A pipeline: this thread copies chunk c + 1 out of Python (that needs the GIL) while the pool
    // fuses chunk c; then it releases the GIL until every chunk is done.
    let params = Arc::new(params);
    let (sender, receiver) = std::sync::mpsc::channel();
    let mut n_chunks = 0;
    let mut owned = OwnedBatch::new();
    for (c, chunk) in queries.chunks(batch::CHUNK).enumerate() {
        owned.refill(chunk, c * batch::CHUNK, &params)?;
        let next = owned.next_chunk(); // the pool takes `owned`; `next` keeps its id kind
        let (sender, params) = (sender.clone(), Arc::clone(&params));
        pool.spawn(move || {
            let entries = owned.fuse(&params, Some(1));
            drop(sender.send((c, owned, entries))); // fails only if the call already returned an error
        });
        owned = next;
        n_chunks += 1;
    }
    drop(sender);
    let mut done: Vec<Option<FusedChunk>> = (0..n_chunks).map(|_| None).collect();
    py.detach(|| {
        for (c, owned, entries) in receiver {
            done[c] = Some((owned, entries));
        }
    });
    for chunk in done {
        let (owned, entries) = chunk.ok_or_else(|| PyRuntimeError::new_err("a fanfuse worker thread failed"))?;
        fused.extend(entries.map_err(to_py_err)?.iter().map(|e| Fused::build(py, &owned.ids, e)));
    }
    Ok(fused)
}

/// Seconds the bare kernel takes for the batch on one thread: no copying out of Python, no result
/// objects. Like `rrf_batch`, it copies 64 queries at a time, then times the kernel on that chunk
/// (best of `repeat`, so with warm caches, as `rrf_batch` sees them) and sums over the chunks.
/// The benchmarks compare `rrf_batch` with it. Not public API.
#[pyfunction]
#[pyo3(signature = (queries, /, *, top_k = None, repeat = 1))]
fn _kernel_seconds(
    py: Python<'_>,
    queries: &Bound<'_, PyAny>,
    top_k: Option<&Bound<'_, PyAny>>,
    repeat: usize,
) -> PyResult<f64> {
    let params = parse_params(crate::rrf::DEFAULT_K, None, top_k, "rank")?;
    let queries = outer_items(queries, "queries", "queries (each a sequence of ranked id lists)")?;
    let mut total = 0.0;
    let mut owned = OwnedBatch::new();
    for (c, chunk) in queries.chunks(batch::CHUNK).enumerate() {
        owned.refill(chunk, c * batch::CHUNK, &params)?;
        total += detached(py, || {
            let mut best = f64::INFINITY;
            for _ in 0..repeat.max(1) {
                let start = std::time::Instant::now();
                let fused = owned.fuse(&params, Some(1))?;
                best = best.min(start.elapsed().as_secs_f64());
                drop(std::hint::black_box(fused));
            }
            Ok(best)
        })?;
    }
    Ok(total)
}

/// Threads `rrf_batch` uses by default (`FANFUSE_NUM_THREADS`, else 1; always 1 in a forked child).
#[pyfunction]
fn default_threads() -> usize {
    if batch::in_forked_child() {
        1
    } else {
        batch::default_threads()
    }
}

// =============================================================================================
// General fusion (issue 6): `fuse` over scored runs, every method, duplicate policies, explain.

/// Borrowed views of all ids of a call, for the general kernel (which sees a whole call at once).
enum IdsView<'a> {
    Str(Vec<&'a str>),
    Int(&'a [i64]),
}

impl OwnedIds {
    fn view(&self) -> IdsView<'_> {
        if self.kind_is(IdKind::Str) {
            IdsView::Str((0..self.text_ends.len()).map(|i| self.str_at(i)).collect())
        } else {
            IdsView::Int(&self.ints)
        }
    }
}

/// Runs copied out of Python: the ids (as for `rrf`) and one score per id, NaN where a run has none.
struct OwnedRuns {
    ids: OwnedIds,
    scores: Vec<f64>,
}

impl OwnedRuns {
    fn new() -> Self {
        Self { ids: OwnedIds::new(), scores: Vec::new() }
    }

    /// Appends one run: ids best first, `(id, score)` pairs, or an `(ids, scores)` pair of sequences.
    fn push_run(&mut self, run: &Bound<'_, PyAny>, path: ListPath) -> PyResult<()> {
        if let Some((ids, scores)) = as_ids_and_scores(run)? {
            self.ids.push_list(&ids, path)?;
            let expected = self.ids.len() - self.scores.len();
            self.push_scores(&scores, path, expected)?;
        } else if starts_with_pair(run) {
            for (pos, pair) in outer_items(run, path.to_string(), "(id, score) pairs")?.iter().enumerate() {
                let pair = pair.cast::<PyTuple>().ok().filter(|t| t.len() == 2).ok_or_else(|| {
                    PyTypeError::new_err(format!(
                        "{path}[{pos}] is a {} but the run started with (id, score) pairs; give every hit as a pair",
                        type_name(pair)
                    ))
                })?;
                self.ids.push_id(&pair.get_item(0)?, path, pos)?;
                self.scores.push(parse_score(&pair.get_item(1)?, || format!("{path}[{pos}][1]"))?);
            }
            self.ids.bounds.push(self.ids.len());
        } else {
            self.ids.push_list(run, path)?;
            self.scores.resize(self.ids.len(), f64::NAN);
        }
        Ok(())
    }

    fn push_scores(&mut self, scores: &Bound<'_, PyAny>, path: ListPath, expected: usize) -> PyResult<()> {
        let before = self.scores.len();
        if let Ok(buf) = PyBuffer::<f64>::get(scores) {
            let values = read_1d(scores.py(), &buf, path)?;
            for (pos, v) in values.into_iter().enumerate() {
                self.scores.push(check_score(v, || format!("{path} scores[{pos}]"))?);
            }
        } else {
            let items = outer_items(scores, format!("{path} scores"), "numbers (one per id)")?;
            for (pos, v) in items.iter().enumerate() {
                self.scores.push(parse_score(v, || format!("{path} scores[{pos}]"))?);
            }
        }
        let got = self.scores.len() - before;
        if got != expected {
            return Err(FusionError::new_err(format!(
                "{path} has {expected} ids but {got} scores; give one score per id"
            )));
        }
        Ok(())
    }

    /// Scores for the kernel: `None` when no run has any, so rank methods never look at them.
    fn scores(&self) -> Option<&[f64]> {
        self.scores.iter().any(|s| !s.is_nan()).then_some(self.scores.as_slice())
    }
}

/// `(ids, scores)`: a 2-tuple whose first element is itself a sequence or array (not an id).
fn as_ids_and_scores<'py>(run: &Bound<'py, PyAny>) -> PyResult<Option<(Bound<'py, PyAny>, Bound<'py, PyAny>)>> {
    let Ok(tuple) = run.cast::<PyTuple>() else { return Ok(None) };
    if tuple.len() != 2 {
        return Ok(None);
    }
    let first = tuple.get_item(0)?;
    // NumPy arrays have `__index__` too (it raises); an id scalar has no length.
    let is_id = first.is_instance_of::<PyString>()
        || first.is_instance_of::<PyInt>()
        || (first.hasattr("__index__")? && first.len().is_err());
    if is_id || first.is_instance_of::<PyTuple>() {
        return Ok(None);
    }
    Ok(Some((first, tuple.get_item(1)?)))
}

/// A list or tuple whose first element is a tuple: a run of `(id, score)` pairs.
fn starts_with_pair(run: &Bound<'_, PyAny>) -> bool {
    let first = if let Ok(list) = run.cast::<PyList>() {
        list.iter().next()
    } else if let Ok(tuple) = run.cast::<PyTuple>() {
        tuple.iter().next()
    } else {
        None
    };
    first.is_some_and(|f| f.is_instance_of::<PyTuple>())
}

fn parse_score(value: &Bound<'_, PyAny>, path: impl FnOnce() -> String) -> PyResult<f64> {
    if value.is_instance_of::<PyString>() || value.is_instance_of::<PyBool>() {
        return Err(PyTypeError::new_err(format!("{} must be a number (got {})", path(), type_name(value))));
    }
    match value.extract::<f64>() {
        Ok(v) => check_score(v, path),
        Err(_) => Err(PyTypeError::new_err(format!("{} must be a number (got {})", path(), type_name(value)))),
    }
}

fn check_score(v: f64, path: impl FnOnce() -> String) -> PyResult<f64> {
    if v.is_finite() {
        Ok(v)
    } else {
        Err(FusionError::new_err(format!(
            "{} is {v}; scores must be finite numbers (drop the hit or give it a real score)",
            path()
        )))
    }
}

/// One list's part in one fused hit (`Fused.explain`).
#[pyclass(frozen, module = "fanfuse", name = "Contribution")]
pub struct PyContribution {
    list: usize,
    rank: Option<u32>,
    id: Option<Py<PyAny>>,
    score: Option<f64>,
    contribution: f64,
}

#[pymethods]
impl PyContribution {
    /// Index of the list (0-based).
    #[getter]
    fn list(&self) -> usize {
        self.list
    }

    /// 1-based rank of the hit in that list; None where the list does not contain it (Borda points).
    #[getter]
    fn rank(&self) -> Option<u32> {
        self.rank
    }

    /// The id the hit had in that list (differs from the fused id only with content keys).
    #[getter]
    fn id(&self, py: Python<'_>) -> Option<Py<PyAny>> {
        self.id.as_ref().map(|id| id.clone_ref(py))
    }

    /// The input score in that list, or None if the list had no scores.
    #[getter]
    fn score(&self) -> Option<f64> {
        self.score
    }

    /// That list's term in the fused score: a hit's contributions, summed in list order, are its score.
    #[getter]
    fn contribution(&self) -> f64 {
        self.contribution
    }

    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        let id = match &self.id {
            Some(id) => id.bind(py).repr()?.to_string(),
            None => "None".into(),
        };
        let rank = self.rank.map_or_else(|| "None".into(), |r| r.to_string());
        let score = self.score.map_or_else(|| "None".into(), |s| s.to_string());
        Ok(format!(
            "Contribution(list={}, rank={rank}, id={id}, score={score}, contribution={})",
            self.list, self.contribution
        ))
    }
}

fn explain_to_py(py: Python<'_>, ids: &IdsView<'_>, explain: &[Vec<fusion::Contribution>]) -> PyResult<Py<PyList>> {
    let id_at = |item: usize| -> PyResult<Py<PyAny>> {
        Ok(match ids {
            IdsView::Str(strs) => PyString::new(py, strs[item]).into_any().unbind(),
            IdsView::Int(ints) => ints[item].into_pyobject(py)?.into_any().unbind(),
        })
    };
    let hits = PyList::empty(py);
    for parts in explain {
        let row = PyList::empty(py);
        for c in parts {
            let id = c.item.map(id_at).transpose()?;
            row.append(PyContribution {
                list: c.list as usize,
                rank: c.rank,
                id,
                score: c.score,
                contribution: c.contribution,
            })?;
        }
        hits.append(row)?;
    }
    Ok(hits.unbind())
}

/// Content keys copied out of `content_keys=`: one key list per run, aligned with its ids.
fn parse_content_keys(keys: &Bound<'_, PyAny>, runs: &OwnedRuns) -> PyResult<OwnedIds> {
    let lists = outer_items(keys, "content_keys", "key lists (one per run, aligned with its ids)")?;
    let n_runs = runs.ids.bounds.len() - 1;
    if lists.len() != n_runs {
        return Err(FusionError::new_err(format!(
            "content_keys has {} lists but there are {n_runs} runs; give one key list per run, aligned with its ids",
            lists.len()
        )));
    }
    let mut owned = OwnedIds::new();
    for (i, list) in lists.iter().enumerate() {
        owned.push_list(list, ListPath { root: "content_keys", query: None, list: i })?;
        let (want, got) = (runs.ids.bounds[i + 1] - runs.ids.bounds[i], owned.bounds[i + 1] - owned.bounds[i]);
        if want != got {
            return Err(FusionError::new_err(format!(
                "content_keys[{i}] has {got} keys but runs[{i}] has {want} ids; give one key per id"
            )));
        }
    }
    Ok(owned)
}

/// Runs the general kernel on `ids` (already canonicalised by content key where asked).
fn fuse_ids<T: crate::lists::FusionKey>(
    ids: &[T],
    owned: &OwnedRuns,
    params: &fusion::FuseParams,
) -> Result<fusion::Fusion, CoreError> {
    fusion::fuse(&fusion::ScoredLists { ids: RankedLists::new(ids, &owned.ids.bounds), scores: owned.scores() }, params)
}

/// Fuses ids, merging ids of equal content key first when keys are given.
fn fuse_keyed<T: crate::lists::FusionKey>(
    ids: &[T],
    keys: Option<&IdsView<'_>>,
    owned: &OwnedRuns,
    params: &fusion::FuseParams,
) -> Result<fusion::Fusion, CoreError> {
    match keys {
        None => fuse_ids(ids, owned, params),
        Some(IdsView::Str(k)) => fuse_ids(&fusion::canonical_ids(ids, k), owned, params),
        Some(IdsView::Int(k)) => fuse_ids(&fusion::canonical_ids(ids, k), owned, params),
    }
}

/// The options of `fuse` and `fuse_batch`, parsed and checked.
#[allow(clippy::too_many_arguments)] // the keyword options of the Python signature
fn fuse_params(
    method: &str,
    norm: Option<&str>,
    k: f64,
    weights: Option<&Bound<'_, PyAny>>,
    top_k: Option<&Bound<'_, PyAny>>,
    tie_break: &str,
    duplicates: &str,
    explain: bool,
    phi: f64,
    sigma: f64,
    gamma: f64,
) -> PyResult<fusion::FuseParams> {
    let rrf_params = parse_params(k, weights, top_k, tie_break)?;
    let method_params = fusion::MethodParams { k, phi, sigma, gamma };
    let params = fusion::FuseParams {
        method: fusion::Method::from_name(method, method_params).map_err(to_py_err)?,
        norm: norm.map(str::parse).transpose().map_err(to_py_err)?,
        weights: rrf_params.weights,
        top_k: rrf_params.top_k,
        tie_break: rrf_params.tie_break,
        duplicates: duplicates.parse().map_err(to_py_err)?,
        explain,
    };
    // Check the options now, so a bad one fails even for an empty batch.
    params.validate(params.weights.as_ref().map_or(0, Vec::len)).map_err(to_py_err)?;
    Ok(params)
}

/// Builds the Python result of one fusion.
fn fused_to_py(py: Python<'_>, ids: &OwnedIds, view: &IdsView<'_>, fusion: &fusion::Fusion) -> PyResult<Fused> {
    let mut fused = Fused::build(py, ids, &fusion.hits);
    fused.explain = fusion.explain.as_deref().map(|e| explain_to_py(py, view, e)).transpose()?;
    Ok(fused)
}

/// Every fusion method over ids with optional scores. See `_core.pyi` for the documentation.
#[pyfunction]
#[pyo3(signature = (
    runs, /, *, method = "rrf", norm = None, k = 60.0, weights = None, top_k = None, tie_break = "rank",
    duplicates = "first", content_keys = None, explain = false, phi = 0.8, sigma = 0.01, gamma = 1.0,
))]
#[allow(clippy::too_many_arguments)] // mirrors the Python signature: data plus keyword options
fn fuse(
    py: Python<'_>,
    runs: &Bound<'_, PyAny>,
    method: &str,
    norm: Option<&str>,
    k: f64,
    weights: Option<&Bound<'_, PyAny>>,
    top_k: Option<&Bound<'_, PyAny>>,
    tie_break: &str,
    duplicates: &str,
    content_keys: Option<&Bound<'_, PyAny>>,
    explain: bool,
    phi: f64,
    sigma: f64,
    gamma: f64,
) -> PyResult<Fused> {
    let params = fuse_params(method, norm, k, weights, top_k, tie_break, duplicates, explain, phi, sigma, gamma)?;
    let mut owned = OwnedRuns::new();
    for (i, run) in outer_items(runs, "runs", "runs (ranked id lists, or (id, score) pairs)")?.iter().enumerate() {
        owned.push_run(run, ListPath { root: "runs", query: None, list: i })?;
    }
    let keys = content_keys.map(|keys| parse_content_keys(keys, &owned)).transpose()?;
    let keys_view = keys.as_ref().map(OwnedIds::view);
    let view = owned.ids.view();
    let fusion = detached(py, || match &view {
        IdsView::Str(strs) => fuse_keyed(strs, keys_view.as_ref(), &owned, &params),
        IdsView::Int(ints) => fuse_keyed(ints, keys_view.as_ref(), &owned, &params),
    })?;
    fused_to_py(py, &owned.ids, &view, &fusion)
}

/// `fuse` over many queries in one call. See `_core.pyi` for the documentation.
#[pyfunction]
#[pyo3(signature = (
    queries, /, *, method = "rrf", norm = None, k = 60.0, weights = None, top_k = None, tie_break = "rank",
    duplicates = "first", explain = false, phi = 0.8, sigma = 0.01, gamma = 1.0, threads = None,
))]
#[allow(clippy::too_many_arguments)] // mirrors the Python signature: data plus keyword options
fn fuse_batch(
    py: Python<'_>,
    queries: &Bound<'_, PyAny>,
    method: &str,
    norm: Option<&str>,
    k: f64,
    weights: Option<&Bound<'_, PyAny>>,
    top_k: Option<&Bound<'_, PyAny>>,
    tie_break: &str,
    duplicates: &str,
    explain: bool,
    phi: f64,
    sigma: f64,
    gamma: f64,
    threads: Option<usize>,
) -> PyResult<Vec<Fused>> {
    let params = fuse_params(method, norm, k, weights, top_k, tie_break, duplicates, explain, phi, sigma, gamma)?;
    if threads == Some(0) {
        return Err(FusionError::new_err("threads must be None (all cores) or an int >= 1 (got 0)"));
    }
    let mut owned = OwnedRuns::new();
    // query_lists[q]..=query_lists[q + 1] is the window of the bounds that holds query q's runs.
    let mut query_lists = vec![0_usize];
    for (q, query) in outer_items(queries, "queries", "queries (each a sequence of runs)")?.iter().enumerate() {
        let runs = outer_items(query, format!("queries[{q}]"), "runs")?;
        if let Some(w) = params.weights.as_ref().filter(|w| w.len() != runs.len()) {
            return Err(FusionError::new_err(format!(
                "queries[{q}] has {} runs but weights has {} entries; every query needs one weight per run",
                runs.len(),
                w.len()
            )));
        }
        for (i, run) in runs.iter().enumerate() {
            owned.push_run(run, ListPath { root: "queries", query: Some(q), list: i })?;
        }
        query_lists.push(owned.ids.bounds.len() - 1);
    }
    let view = owned.ids.view();
    let scores = owned.scores();
    let windows: Vec<(usize, &[usize])> =
        query_lists.windows(2).enumerate().map(|(q, w)| (q, &owned.ids.bounds[w[0]..=w[1]])).collect();
    let results = detached(py, || {
        let one = |&(q, bounds): &(usize, &[usize])| {
            let fused = match &view {
                IdsView::Str(strs) => {
                    fusion::fuse(&fusion::ScoredLists { ids: RankedLists::new(strs, bounds), scores }, &params)
                }
                IdsView::Int(ints) => {
                    fusion::fuse(&fusion::ScoredLists { ids: RankedLists::new(ints, bounds), scores }, &params)
                }
            };
            // Name the query in the message: the core only knows the run's index within it.
            fused.map_err(|e| CoreError::invalid(format!("queries[{q}]: {e}")))
        };
        batch::map_queries(&windows, threads, one).into_iter().collect::<Result<Vec<_>, _>>()
    })?;
    results.iter().map(|fusion| fused_to_py(py, &owned.ids, &view, fusion)).collect()
}

// ---------------------------------------------------------------------------------------------
// Run files (issue 3): reading, fusing, writing and evaluating whole runs.

/// A run held in Rust: queries in order of first appearance, each query's hits in rank order.
#[pyclass(frozen, module = "fanfuse", name = "Run")]
pub struct PyRun {
    inner: Arc<CoreRun>,
}

/// Relevance judgments held in Rust.
#[pyclass(frozen, module = "fanfuse", name = "Qrels")]
pub struct PyQrels {
    inner: Arc<Qrels>,
}

#[pymethods]
impl PyRun {
    /// Builds a run from aligned columns (one row per hit), as a data frame holds it.
    #[staticmethod]
    #[pyo3(signature = (qids, docids, scores, /, *, name = "run", rank_from = "score"))]
    #[allow(clippy::needless_pass_by_value)] // pyo3 extracts arguments as owned values
    fn from_columns(
        qids: Vec<String>,
        docids: Vec<String>,
        scores: Vec<f64>,
        name: &str,
        rank_from: &str,
    ) -> PyResult<Self> {
        let rank_from: RankFrom = rank_from.parse().map_err(to_py_err)?;
        let run = CoreRun::from_columns(name, &qids, &docids, &scores, rank_from).map_err(to_py_err)?;
        Ok(Self { inner: Arc::new(run) })
    }

    #[getter]
    fn name(&self) -> String {
        self.inner.name.clone()
    }

    fn __len__(&self) -> usize {
        self.inner.queries.len()
    }

    /// Query ids in run order.
    fn qids(&self) -> Vec<String> {
        self.inner.queries.iter().map(|q| q.qid.clone()).collect()
    }

    /// `(qid, docid, rank, score)` columns, one row per hit, queries in order, hits in rank order.
    fn columns(&self) -> (Vec<String>, Vec<String>, Vec<i64>, Vec<f64>) {
        let rows: usize = self.inner.queries.iter().map(|q| q.hits.len()).sum();
        let (mut qids, mut docids, mut ranks, mut scores) =
            (Vec::with_capacity(rows), Vec::with_capacity(rows), Vec::with_capacity(rows), Vec::with_capacity(rows));
        for query in &self.inner.queries {
            for (i, hit) in query.hits.iter().enumerate() {
                qids.push(query.qid.clone());
                docids.push(hit.docid.to_string());
                ranks.push(i64::try_from(i).unwrap_or(i64::MAX) + 1);
                scores.push(hit.score);
            }
        }
        (qids, docids, ranks, scores)
    }

    /// Writes the run atomically as TREC or MT-RAG JSONL.
    #[pyo3(signature = (path, /, *, format = "trec", tag = "fanfuse", collection = None))]
    fn write(&self, py: Python<'_>, path: &str, format: &str, tag: &str, collection: Option<&str>) -> PyResult<()> {
        let format: OutFormat = format.parse().map_err(to_py_err)?;
        let run = Arc::clone(&self.inner);
        detached(py, || run.write(path, format, tag, collection))
    }

    fn __repr__(&self) -> String {
        format!("Run(name={:?}, queries={})", self.inner.name, self.inner.queries.len())
    }
}

#[pymethods]
impl PyQrels {
    fn __len__(&self) -> usize {
        self.inner.order.len()
    }

    /// Judged query ids in file order.
    fn qids(&self) -> Vec<String> {
        self.inner.order.clone()
    }
}

/// Reads a TREC or MT-RAG run file (gzip or plain). See `_core.pyi`.
#[pyfunction]
#[pyo3(signature = (path, /, *, rank_from = "score"))]
fn read_run(py: Python<'_>, path: &str, rank_from: &str) -> PyResult<PyRun> {
    let rank_from: RankFrom = rank_from.parse().map_err(to_py_err)?;
    let run = detached(py, || runs::read_run(path, rank_from))?;
    Ok(PyRun { inner: Arc::new(run) })
}

/// Reads TREC or BEIR TSV qrels. See `_core.pyi`.
#[pyfunction]
#[pyo3(signature = (path, /))]
fn read_qrels(py: Python<'_>, path: &str) -> PyResult<PyQrels> {
    let qrels = detached(py, || runs::qrels::read_qrels(path))?;
    Ok(PyQrels { inner: Arc::new(qrels) })
}

/// Options of run-file fusion: any method of `fuse`, with its default method parameters.
fn run_fuse_params(
    method: &str,
    norm: Option<&str>,
    k: f64,
    weights: Option<&Bound<'_, PyAny>>,
    top_k: Option<usize>,
    tie_break: &str,
) -> PyResult<FuseParams> {
    let defaults = fusion::MethodParams::default();
    let mut params = fuse_params(
        method,
        norm,
        k,
        weights,
        None,
        tie_break,
        "first",
        false,
        defaults.phi,
        defaults.sigma,
        defaults.gamma,
    )?;
    params.top_k = top_k;
    Ok(params)
}

/// Fuses whole runs in memory (the union of their queries). See `_core.pyi`.
#[pyfunction]
#[pyo3(signature = (runs, /, *, method = "rrf", norm = None, k = 60.0, weights = None, top_k = Some(1000), tie_break = "rank", threads = None),
    text_signature = "(runs, /, *, method='rrf', norm=None, k=60.0, weights=None, top_k=1000, tie_break='rank', threads=None)")]
#[allow(clippy::too_many_arguments)] // mirrors the Python signature: data plus keyword options
#[allow(clippy::needless_pass_by_value)] // pyo3 extracts arguments as owned values
fn fuse_runs(
    py: Python<'_>,
    runs: Vec<PyRef<'_, PyRun>>,
    method: &str,
    norm: Option<&str>,
    k: f64,
    weights: Option<&Bound<'_, PyAny>>,
    top_k: Option<usize>,
    tie_break: &str,
    threads: Option<usize>,
) -> PyResult<PyRun> {
    let params = run_fuse_params(method, norm, k, weights, top_k, tie_break)?;
    let owned: Vec<Arc<CoreRun>> = runs.iter().map(|r| Arc::clone(&r.inner)).collect();
    let fused = detached(py, || {
        let refs: Vec<&CoreRun> = owned.iter().map(AsRef::as_ref).collect();
        crate::run_fusion::fuse_runs(&refs, &params, threads)
    })?;
    Ok(PyRun { inner: Arc::new(fused) })
}

/// Streams run files through fusion into one output file. See `_core.pyi`.
#[pyfunction]
#[pyo3(signature = (inputs, output, /, *, method = "rrf", norm = None, k = 60.0, weights = None, top_k = Some(1000),
    tie_break = "rank", rank_from = "score", format = "trec", collection = None, tag = "fanfuse",
    threads = None, progress = None),
    text_signature = "(inputs, output, /, *, method='rrf', norm=None, k=60.0, weights=None, top_k=1000, tie_break='rank', \
        rank_from='score', format='trec', collection=None, tag='fanfuse', threads=None, progress=None)")]
#[allow(clippy::too_many_arguments)] // mirrors the Python signature: data plus keyword options
#[allow(clippy::needless_pass_by_value)] // pyo3 extracts arguments as owned values
fn fuse_files<'py>(
    py: Python<'py>,
    inputs: Vec<String>,
    output: &str,
    method: &str,
    norm: Option<&str>,
    k: f64,
    weights: Option<&Bound<'_, PyAny>>,
    top_k: Option<usize>,
    tie_break: &str,
    rank_from: &str,
    format: &str,
    collection: Option<String>,
    tag: &str,
    threads: Option<usize>,
    progress: Option<bool>,
) -> PyResult<Bound<'py, PyDict>> {
    let options = FuseFilesOptions {
        params: run_fuse_params(method, norm, k, weights, top_k, tie_break)?,
        rank_from: rank_from.parse().map_err(to_py_err)?,
        format: format.parse().map_err(to_py_err)?,
        collection,
        tag: tag.to_owned(),
        threads,
        progress,
    };
    let summary = detached(py, || bulk::fuse_files(&inputs, output, &options))?;
    let out = PyDict::new(py);
    out.set_item("queries", summary.queries)?;
    out.set_item("input_lines", summary.input_lines)?;
    out.set_item("buffered", summary.buffered)?;
    Ok(out)
}

/// Per-query metric values of a run against qrels. See `_core.pyi`.
#[pyfunction]
#[pyo3(signature = (run, qrels, /, *, metrics))]
#[allow(clippy::needless_pass_by_value)] // pyo3 extracts arguments as owned values
fn evaluate<'py>(
    py: Python<'py>,
    run: PyRef<'_, PyRun>,
    qrels: PyRef<'_, PyQrels>,
    metrics: Vec<String>,
) -> PyResult<(Vec<String>, Bound<'py, PyDict>)> {
    let parsed = metrics.iter().map(|m| m.parse::<Metric>()).collect::<Result<Vec<_>, _>>().map_err(to_py_err)?;
    let (run, qrels) = (Arc::clone(&run.inner), Arc::clone(&qrels.inner));
    let evaluation = py.detach(|| eval::evaluate(&run, &qrels, &parsed));
    let values = PyDict::new(py);
    for (name, column) in metrics.iter().zip(evaluation.values) {
        values.set_item(name, column)?;
    }
    Ok((evaluation.qids, values))
}

/// Two-sided paired randomization test. See `_core.pyi`.
#[pyfunction]
#[pyo3(signature = (a, b, /, *, iterations = 10_000, seed = 0))]
#[allow(clippy::needless_pass_by_value)] // pyo3 extracts arguments as owned values
fn randomization_test(py: Python<'_>, a: Vec<f64>, b: Vec<f64>, iterations: u32, seed: u64) -> PyResult<f64> {
    if a.len() != b.len() {
        return Err(FusionError::new_err(format!(
            "paired samples need equal lengths (got {} and {})",
            a.len(),
            b.len()
        )));
    }
    Ok(py.detach(|| eval::significance::randomization_test(&a, &b, iterations, seed)))
}

/// Two-sided paired Student t-test. See `_core.pyi`.
#[pyfunction]
#[pyo3(signature = (a, b, /))]
#[allow(clippy::needless_pass_by_value)] // pyo3 extracts arguments as owned values
fn paired_t_test(a: Vec<f64>, b: Vec<f64>) -> PyResult<f64> {
    if a.len() != b.len() {
        return Err(FusionError::new_err(format!(
            "paired samples need equal lengths (got {} and {})",
            a.len(),
            b.len()
        )));
    }
    Ok(eval::significance::paired_t_test(&a, &b))
}

#[pymodule(gil_used = false)]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("FusionError", m.py().get_type::<FusionError>())?;
    m.add_class::<Fused>()?;
    m.add_function(wrap_pyfunction!(rrf, m)?)?;
    m.add_function(wrap_pyfunction!(rrf_batch, m)?)?;
    m.add_function(wrap_pyfunction!(default_threads, m)?)?;
    m.add_class::<PyContribution>()?;
    m.add_function(wrap_pyfunction!(fuse, m)?)?;
    m.add_function(wrap_pyfunction!(fuse_batch, m)?)?;
    m.add_function(wrap_pyfunction!(_kernel_seconds, m)?)?;
    // Run files (issue 3).
    m.add_class::<PyRun>()?;
    m.add_class::<PyQrels>()?;
    m.add_function(wrap_pyfunction!(read_run, m)?)?;
    m.add_function(wrap_pyfunction!(read_qrels, m)?)?;
    m.add_function(wrap_pyfunction!(fuse_runs, m)?)?;
    m.add_function(wrap_pyfunction!(fuse_files, m)?)?;
    m.add_function(wrap_pyfunction!(evaluate, m)?)?;
    m.add("METRICS", PyTuple::new(m.py(), eval::metric_names())?)?;
    m.add("TREC_EVAL_METRICS", PyTuple::new(m.py(), eval::trec_eval_metric_names())?)?;
    m.add_function(wrap_pyfunction!(randomization_test, m)?)?;
    m.add_function(wrap_pyfunction!(paired_t_test, m)?)?;
    Ok(())
}
