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
use crate::lists::RankedLists;
use crate::rrf::{rrf as rrf_core, FusedEntry, RrfParams, TieBreak};
// Run files (issue 3).
use std::sync::Arc;

use crate::bulk::{self, FuseFilesOptions};
use crate::eval::{self, Metric};
use crate::fusion::{self, FuseParams};
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
}

impl Fused {
    fn build(py: Python<'_>, ids: &IdsView<'_>, entries: &[FusedEntry]) -> PyResult<Self> {
        let id_list = match ids {
            IdsView::Str(strs) => PyList::new(py, entries.iter().map(|e| PyString::new(py, strs[e.item])))?,
            IdsView::Int(ints) => PyList::new(py, entries.iter().map(|e| ints[e.item]))?,
        };
        let scores = PyList::new(py, entries.iter().map(|e| e.score))?;
        Ok(Self { ids: id_list.unbind(), scores: scores.unbind() })
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

fn fuse_params(
    method: &str,
    k: f64,
    weights: Option<&Bound<'_, PyAny>>,
    top_k: Option<usize>,
    tie_break: &str,
) -> PyResult<FuseParams> {
    let mut rrf = parse_params(k, weights, None, tie_break)?;
    rrf.top_k = top_k;
    Ok(FuseParams { method: method.parse().map_err(to_py_err)?, rrf })
}

/// Fuses whole runs in memory (the union of their queries). See `_core.pyi`.
#[pyfunction]
#[pyo3(signature = (runs, /, *, method = "rrf", k = 60.0, weights = None, top_k = Some(1000), tie_break = "rank", threads = None),
    text_signature = "(runs, /, *, method='rrf', k=60.0, weights=None, top_k=1000, tie_break='rank', threads=None)")]
#[allow(clippy::too_many_arguments)] // mirrors the Python signature: data plus keyword options
#[allow(clippy::needless_pass_by_value)] // pyo3 extracts arguments as owned values
fn fuse_runs(
    py: Python<'_>,
    runs: Vec<PyRef<'_, PyRun>>,
    method: &str,
    k: f64,
    weights: Option<&Bound<'_, PyAny>>,
    top_k: Option<usize>,
    tie_break: &str,
    threads: Option<usize>,
) -> PyResult<PyRun> {
    let params = fuse_params(method, k, weights, top_k, tie_break)?;
    let owned: Vec<Arc<CoreRun>> = runs.iter().map(|r| Arc::clone(&r.inner)).collect();
    let fused = detached(py, || {
        let refs: Vec<&CoreRun> = owned.iter().map(AsRef::as_ref).collect();
        fusion::fuse_runs(&refs, &params, threads)
    })?;
    Ok(PyRun { inner: Arc::new(fused) })
}

/// Streams run files through fusion into one output file. See `_core.pyi`.
#[pyfunction]
#[pyo3(signature = (inputs, output, /, *, method = "rrf", k = 60.0, weights = None, top_k = Some(1000),
    tie_break = "rank", rank_from = "score", format = "trec", collection = None, tag = "fanfuse",
    threads = None, progress = None),
    text_signature = "(inputs, output, /, *, method='rrf', k=60.0, weights=None, top_k=1000, tie_break='rank', \
        rank_from='score', format='trec', collection=None, tag='fanfuse', threads=None, progress=None)")]
#[allow(clippy::too_many_arguments)] // mirrors the Python signature: data plus keyword options
#[allow(clippy::needless_pass_by_value)] // pyo3 extracts arguments as owned values
fn fuse_files<'py>(
    py: Python<'py>,
    inputs: Vec<String>,
    output: &str,
    method: &str,
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
        params: fuse_params(method, k, weights, top_k, tie_break)?,
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
    // Run files (issue 3).
    m.add_class::<PyRun>()?;
    m.add_class::<PyQrels>()?;
    m.add_function(wrap_pyfunction!(read_run, m)?)?;
    m.add_function(wrap_pyfunction!(read_qrels, m)?)?;
    m.add_function(wrap_pyfunction!(fuse_runs, m)?)?;
    m.add_function(wrap_pyfunction!(fuse_files, m)?)?;
    m.add_function(wrap_pyfunction!(evaluate, m)?)?;
    m.add_function(wrap_pyfunction!(randomization_test, m)?)?;
    m.add_function(wrap_pyfunction!(paired_t_test, m)?)?;
    Ok(())
}
