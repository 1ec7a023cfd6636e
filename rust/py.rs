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
use crate::lists::RankedLists;
use crate::rrf::{rrf as rrf_core, FusedEntry, RrfParams, TieBreak};

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
}

impl Fused {
    /// `entries` index the ids of `ids` (as [`OwnedIds::fuse`] returns them).
    fn build(py: Python<'_>, ids: &OwnedIds, entries: &[FusedEntry]) -> Self {
        let fused_ids = if ids.kind_is(IdKind::Str) {
            FusedIds::Str(entries.iter().map(|e| PyString::new(py, ids.str_at(e.item)).unbind()).collect())
        } else {
            FusedIds::Int(entries.iter().map(|e| ids.ints[e.item]).collect())
        };
        Self { ids: fused_ids, scores: entries.iter().map(|e| e.score).collect() }
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

#[pymodule(gil_used = false)]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("FusionError", m.py().get_type::<FusionError>())?;
    m.add_class::<Fused>()?;
    m.add_function(wrap_pyfunction!(rrf, m)?)?;
    m.add_function(wrap_pyfunction!(rrf_batch, m)?)?;
    m.add_function(wrap_pyfunction!(default_threads, m)?)?;
    m.add_function(wrap_pyfunction!(_kernel_seconds, m)?)?;
    Ok(())
}
