//! The Python binding, and the only file that imports pyo3.
//!
//! Every entry point follows one pattern: copy the Python inputs into owned Rust buffers while
//! holding the GIL ([`OwnedIds`]), release the GIL and run the core ([`detached`]), then build the
//! Python result. Errors from the core map to Python in one place ([`to_py_err`]).

use std::fmt;

use pyo3::buffer::PyBuffer;
use pyo3::exceptions::{PyIndexError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{
    PyBool, PyByteArray, PyBytes, PyDict, PyFloat, PyFrozenSet, PyInt, PyList, PySet, PyString, PyTuple,
};

use crate::batch;
use crate::error::FusionError as CoreError;
use crate::fusion;
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
            for (pos, item) in list.iter().enumerate() {
                self.push_id(&item, path, pos)?;
            }
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

    fn push_id(&mut self, item: &Bound<'_, PyAny>, path: ListPath, pos: usize) -> PyResult<()> {
        if let Ok(text) = item.cast::<PyString>() {
            self.set_kind(IdKind::Str, || format!("{path}[{pos}]"))?;
            let text = text.to_str().map_err(|_| {
                FusionError::new_err(format!(
                    "{path}[{pos}] is not valid Unicode (a lone surrogate); ids must encode as UTF-8"
                ))
            })?;
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
        self.bounds.push(self.len());
        Ok(true)
    }

    /// Borrowed views of the ids for the kernel.
    fn view(&self) -> IdsView<'_> {
        match self.kind {
            Some((IdKind::Str, _)) => {
                let mut start = 0;
                let ids = self
                    .text_ends
                    .iter()
                    .map(|&end| {
                        // SAFETY: the arena holds whole `&str`s back to back and `text_ends` marks their
                        // boundaries, so every slice is valid UTF-8 (re-validating cost 15% of a call).
                        let s = unsafe { std::str::from_utf8_unchecked(&self.text[start..end]) };
                        start = end;
                        s
                    })
                    .collect();
                IdsView::Str(ids)
            }
            Some((IdKind::Int, _)) | None => IdsView::Int(&self.ints),
        }
    }
}

enum IdsView<'a> {
    Str(Vec<&'a str>),
    Int(&'a [i64]),
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

fn not_an_id(item: &Bound<'_, PyAny>, path: ListPath, pos: usize) -> PyErr {
    PyTypeError::new_err(format!(
        "{path}[{pos}] is a {}; ids must be str, or int (Python or NumPy integers)",
        type_name(item)
    ))
}

fn outer_items<'py>(obj: &Bound<'py, PyAny>, name: &str, what: &str) -> PyResult<Vec<Bound<'py, PyAny>>> {
    if obj.is_instance_of::<PyString>() || obj.is_instance_of::<PyBytes>() {
        return Err(PyTypeError::new_err(format!("{name} must be a sequence of {what}, not a {}", type_name(obj))));
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

/// The result of one fusion: fused ids and their scores, aligned, best first.
#[pyclass(frozen, module = "fanfuse", name = "Fused", sequence)]
pub struct Fused {
    ids: Py<PyList>,
    scores: Py<PyList>,
    /// Per-hit contributions (`fuse(..., explain=True)`), else None.
    explain: Option<Py<PyList>>,
}

impl Fused {
    fn build(py: Python<'_>, ids: &IdsView<'_>, entries: &[FusedEntry]) -> PyResult<Self> {
        let id_list = match ids {
            IdsView::Str(strs) => PyList::new(py, entries.iter().map(|e| PyString::new(py, strs[e.item])))?,
            IdsView::Int(ints) => PyList::new(py, entries.iter().map(|e| ints[e.item]))?,
        };
        let scores = PyList::new(py, entries.iter().map(|e| e.score))?;
        Ok(Self { ids: id_list.unbind(), scores: scores.unbind(), explain: None })
    }
}

#[pymethods]
impl Fused {
    /// Fused ids, best first (str or int, like the input).
    #[getter]
    fn ids(&self, py: Python<'_>) -> Py<PyList> {
        self.ids.clone_ref(py)
    }

    /// Fused scores, aligned with `ids`.
    #[getter]
    fn scores(&self, py: Python<'_>) -> Py<PyList> {
        self.scores.clone_ref(py)
    }

    /// With `fuse(..., explain=True)`: one list of `Contribution`s per hit, aligned with `ids`; else None.
    #[getter]
    fn explain(&self, py: Python<'_>) -> Option<Py<PyList>> {
        self.explain.as_ref().map(|e| e.clone_ref(py))
    }

    fn __len__(&self, py: Python<'_>) -> usize {
        self.ids.bind(py).len()
    }

    fn __getitem__<'py>(&self, py: Python<'py>, index: isize) -> PyResult<Bound<'py, PyTuple>> {
        let len = self.__len__(py);
        let at = if index < 0 { len.checked_sub(index.unsigned_abs()) } else { Some(index.unsigned_abs()) };
        let Some(at) = at.filter(|&at| at < len) else {
            return Err(PyIndexError::new_err(format!("Fused index {index} out of range for {len} hits")));
        };
        PyTuple::new(py, [self.ids.bind(py).get_item(at)?, self.scores.bind(py).get_item(at)?])
    }

    fn __iter__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let zip = py.import("builtins")?.getattr("zip")?;
        zip.call1((self.ids.bind(py), self.scores.bind(py)))
    }

    fn __eq__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<bool> {
        let Ok(other) = other.cast::<Fused>() else { return Ok(false) };
        let other = other.get();
        Ok(self.ids.bind(py).eq(other.ids.bind(py))? && self.scores.bind(py).eq(other.scores.bind(py))?)
    }

    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        let shown = self.__len__(py).min(5);
        let mut pairs = Vec::with_capacity(shown);
        for i in 0..shown {
            let id = self.ids.bind(py).get_item(i)?.repr()?.to_string();
            let score: f64 = self.scores.bind(py).get_item(i)?.extract()?;
            pairs.push(format!("({id}, {score:.6})"));
        }
        let more = self.__len__(py) - shown;
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
    let view = ids.view();
    let entries = detached(py, || match &view {
        IdsView::Str(strs) => rrf_core(RankedLists::new(strs, &ids.bounds), &params),
        IdsView::Int(ints) => rrf_core(RankedLists::new(ints, &ids.bounds), &params),
    })?;
    Fused::build(py, &view, &entries)
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
    if threads == Some(0) {
        return Err(FusionError::new_err("threads must be None (all cores) or an int >= 1 (got 0)"));
    }
    let mut ids = OwnedIds::new();
    // query_lists[q]..=query_lists[q + 1] is the window of `ids.bounds` that holds query q's lists.
    let mut query_lists = vec![0_usize];
    for (q, query) in
        outer_items(queries, "queries", "queries (each a sequence of ranked id lists)")?.iter().enumerate()
    {
        let lists = outer_items(query, &format!("queries[{q}]"), "ranked id lists")?;
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
    let view = ids.view();
    let windows: Vec<&[usize]> = query_lists.windows(2).map(|w| &ids.bounds[w[0]..=w[1]]).collect();
    let results = detached(py, || {
        let fused = match &view {
            IdsView::Str(strs) => {
                batch::map_queries(&windows, threads, |b| rrf_core(RankedLists::new(strs, b), &params))
            }
            IdsView::Int(ints) => {
                batch::map_queries(&windows, threads, |b| rrf_core(RankedLists::new(ints, b), &params))
            }
        };
        fused.into_iter().collect::<Result<Vec<_>, _>>()
    })?;
    results.iter().map(|entries| Fused::build(py, &view, entries)).collect()
}

/// Threads `rrf_batch` uses by default (`FANFUSE_NUM_THREADS`, else all cores; 1 in a forked child).
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
            for (pos, pair) in outer_items(run, &path.to_string(), "(id, score) pairs")?.iter().enumerate() {
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
            let items = outer_items(scores, &format!("{path} scores"), "numbers (one per id)")?;
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
fn fused_to_py(py: Python<'_>, view: &IdsView<'_>, fusion: &fusion::Fusion) -> PyResult<Fused> {
    let mut fused = Fused::build(py, view, &fusion.hits)?;
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
    fused_to_py(py, &view, &fusion)
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
        let runs = outer_items(query, &format!("queries[{q}]"), "runs")?;
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
    results.iter().map(|fusion| fused_to_py(py, &view, fusion)).collect()
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
    Ok(())
}
