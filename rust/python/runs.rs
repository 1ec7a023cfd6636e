//! Run files and qrels: reading, fusing whole runs in memory, streaming files through fusion, training a fusion model on them.

use std::sync::Arc;

use pyo3::prelude::*;
use pyo3::types::{PyDict, PyString, PyTuple};

use super::args::{instance, int_arg, name_arg, numbers, outer_items, path, path_arg, rank_from_arg, strings};
use super::args::{type_name, typed_arg};
use super::options::{check_thread_variable, run_params, threads_arg};
use super::trained::PyFusionModel;
use super::{interruptible, interruptible_reporting, to_py_err};
use crate::fusion::MAX_SIZE;
use crate::runs::fuse::progress::{self, FuseProgress};
use crate::runs::fuse::stream::{self, Destination, FuseFilesOptions};
use crate::runs::read::input::{self, RunInput};
use crate::runs::read::qrels::Qrels;
use crate::runs::write::OutFormat;
use crate::runs::{self, RankFrom, Run as CoreRun};
use crate::train::{self, TrainSizes};

#[doc = stub_doc!("Run")]
#[pyclass(frozen, module = "fanfuse", name = "Run")]
pub struct PyRun {
    pub(super) inner: Arc<CoreRun>,
}

#[doc = stub_doc!("Qrels")]
#[pyclass(frozen, module = "fanfuse", name = "Qrels")]
pub struct PyQrels {
    pub(super) inner: Arc<Qrels>,
}

impl From<CoreRun> for PyRun {
    fn from(run: CoreRun) -> Self {
        Self { inner: Arc::new(run) }
    }
}

impl From<Qrels> for PyQrels {
    fn from(qrels: Qrels) -> Self {
        Self { inner: Arc::new(qrels) }
    }
}

#[pymethods]
impl PyRun {
    #[doc = stub_doc!("Run.from_columns")]
    #[staticmethod]
    #[pyo3(signature = (qids, docids, scores, /, *, name = "run", rank_from = "score"))]
    fn from_columns(
        qids: &Bound<'_, PyAny>,
        docids: &Bound<'_, PyAny>,
        scores: &Bound<'_, PyAny>,
        #[pyo3(from_py_with = name_arg)] name: &str,
        #[pyo3(from_py_with = rank_from_arg)] rank_from: &str,
    ) -> PyResult<Self> {
        let (qids, docids) = (strings(qids, "qids")?, strings(docids, "docids")?);
        let scores = numbers(scores, "scores", "numbers")?;
        let rank_from: RankFrom = rank_from.parse().map_err(to_py_err)?;
        CoreRun::from_columns(name, &qids, &docids, &scores, rank_from).map(Self::from).map_err(to_py_err)
    }

    #[doc = stub_doc!("Run.name")]
    #[getter]
    fn name(&self) -> String {
        self.inner.name.clone()
    }

    fn __len__(&self) -> usize {
        self.inner.queries.len()
    }

    #[doc = stub_doc!("Run.qids")]
    fn qids(&self) -> Vec<String> {
        self.inner.queries.iter().map(|q| q.qid.clone()).collect()
    }

    #[doc = stub_doc!("Run.subset")]
    #[pyo3(signature = (qids, /))]
    fn subset(&self, qids: &Bound<'_, PyAny>) -> PyResult<Self> {
        Ok(self.inner.subset(&strings(qids, "qids")?).into())
    }

    #[doc = stub_doc!("Run.columns")]
    fn columns(&self) -> (Vec<String>, Vec<String>, Vec<i64>, Vec<f64>) {
        self.inner.columns()
    }

    #[doc = stub_doc!("Run.__arrow_c_array__")]
    #[pyo3(signature = (requested_schema = None))]
    fn __arrow_c_array__<'py>(
        &self,
        py: Python<'py>,
        requested_schema: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyTuple>> {
        let _ = requested_schema; // one schema; the consumer casts if it wants another
        let run = Arc::clone(&self.inner);
        super::arrow::export(py, &Arc::new(py.detach(move || run.batch())))
    }

    #[doc = stub_doc!("Run.write")]
    #[pyo3(signature = (path, /, *, format = "trec", tag = "fanfuse", collection = None))]
    fn write(
        &self,
        py: Python<'_>,
        #[pyo3(from_py_with = path_arg)] path: String,
        #[pyo3(from_py_with = format_arg)] format: &str,
        #[pyo3(from_py_with = tag_arg)] tag: &str,
        #[pyo3(from_py_with = collection_arg)] collection: Option<&str>,
    ) -> PyResult<()> {
        let format: OutFormat = format.parse().map_err(to_py_err)?;
        let run = Arc::clone(&self.inner);
        interruptible(py, || run.write(&path, format, tag, collection))
    }

    fn __repr__(&self) -> String {
        self.inner.describe()
    }
}

#[pymethods]
impl PyQrels {
    fn __len__(&self) -> usize {
        self.inner.order.len()
    }

    #[doc = stub_doc!("Qrels.qids")]
    fn qids(&self) -> Vec<String> {
        self.inner.order.clone()
    }

    #[doc = stub_doc!("Qrels.subset")]
    #[pyo3(signature = (qids, /))]
    fn subset(&self, qids: &Bound<'_, PyAny>) -> PyResult<Self> {
        Ok(self.inner.subset(&strings(qids, "qids")?).into())
    }
}

// The arguments of the functions here, each read with fanfuse's message naming it.
typed_arg!(format_arg("format") -> str);
typed_arg!(tag_arg("tag") -> str);
typed_arg!(collection_arg("collection") -> Option<str>);
typed_arg!(method_arg("method") -> str);
typed_arg!(pub(super) run_arg("run") -> PyRun);
typed_arg!(pub(super) qrels_arg("qrels") -> PyQrels);

fn model_arg<'py>(value: &Bound<'py, PyAny>) -> PyResult<Option<PyRef<'py, PyFusionModel>>> {
    if value.is_none() {
        Ok(None)
    } else {
        instance(value, "model").map(Some)
    }
}

/// `runs`: a sequence of `fanfuse.Run`, each refused naming its place.
fn runs_arg<'py>(value: &Bound<'py, PyAny>) -> PyResult<Vec<PyRef<'py, PyRun>>> {
    let items = outer_items(value, "runs", "fanfuse.Run")?;
    items.iter().enumerate().map(|(i, item)| instance(item, &format!("runs[{i}]"))).collect()
}

#[doc = stub_doc!("read_run")]
#[pyfunction]
#[pyo3(signature = (path, /, *, rank_from = "score"))]
pub(super) fn read_run(
    py: Python<'_>,
    #[pyo3(from_py_with = path_arg)] path: String,
    #[pyo3(from_py_with = rank_from_arg)] rank_from: &str,
) -> PyResult<PyRun> {
    let rank_from: RankFrom = rank_from.parse().map_err(to_py_err)?;
    interruptible(py, || runs::read_run(&path, rank_from)).map(PyRun::from)
}

#[doc = stub_doc!("read_qrels")]
#[pyfunction]
#[pyo3(signature = (path, /))]
pub(super) fn read_qrels(py: Python<'_>, #[pyo3(from_py_with = path_arg)] path: String) -> PyResult<PyQrels> {
    interruptible(py, || runs::read::qrels::read_qrels(&path)).map(PyQrels::from)
}

#[doc = stub_doc!("fuse_runs")]
#[pyfunction]
#[pyo3(signature = (runs, /, *, options = None, threads = None, model = None, **kwargs))]
pub(super) fn fuse_runs(
    py: Python<'_>,
    #[pyo3(from_py_with = runs_arg)] runs: Vec<PyRef<'_, PyRun>>,
    options: Option<&Bound<'_, PyAny>>,
    #[pyo3(from_py_with = threads_arg)] threads: Option<usize>,
    #[pyo3(from_py_with = model_arg)] model: Option<PyRef<'_, PyFusionModel>>,
    kwargs: Option<&Bound<'_, PyDict>>,
) -> PyResult<PyRun> {
    let params = run_params("fuse_runs", options, kwargs, model.as_deref())?;
    check_thread_variable(py, threads)?;
    let owned: Vec<Arc<CoreRun>> = runs.iter().map(|r| Arc::clone(&r.inner)).collect();
    interruptible(py, || crate::runs::fuse::query::fuse_runs(&owned, &params, threads)).map(PyRun::from)
}

/// The inputs of `fuse_files`: paths, or runs in memory (replayed in the order of their rows).
fn run_inputs(inputs: &Bound<'_, PyAny>) -> PyResult<Vec<RunInput>> {
    let items = outer_items(inputs, "inputs", input::INPUTS)?;
    let input = |(i, item): (usize, &Bound<'_, PyAny>)| match item.cast::<PyRun>() {
        Ok(run) => Ok(RunInput::Table(Arc::clone(&run.get().inner))),
        Err(_) if item.is_instance_of::<PyString>() || item.hasattr(pyo3::intern!(item.py(), "__fspath__"))? => {
            path(item, &format!("inputs[{i}]")).map(RunInput::File)
        }
        Err(_) => Err(to_py_err(RunInput::refused(i, &type_name(item)))),
    };
    items.iter().enumerate().map(input).collect()
}

/// The reader of `fuse_files`'s `output`: a path, or None for a run in memory.
fn output_arg(value: &Bound<'_, PyAny>) -> PyResult<Option<String>> {
    if value.is_none() {
        Ok(None)
    } else {
        path(value, "output").map(Some)
    }
}

/// What `fuse_files` returns: the summary of the file written, as a dict, or the run in memory.
#[derive(IntoPyObject)]
pub(super) enum FilesFused {
    Written { queries: u64, input_lines: u64, buffered: bool },
    Run(PyRun),
}

#[doc = stub_doc!("fuse_files")]
#[pyfunction]
#[pyo3(signature = (inputs, output, /, *, options = None, rank_from = "score", format = "trec", collection = None,
    tag = "fanfuse", threads = None, progress = None, model = None, **kwargs))]
pub(super) fn fuse_files(
    py: Python<'_>,
    inputs: &Bound<'_, PyAny>,
    #[pyo3(from_py_with = output_arg)] output: Option<String>,
    options: Option<&Bound<'_, PyAny>>,
    #[pyo3(from_py_with = rank_from_arg)] rank_from: &str,
    #[pyo3(from_py_with = format_arg)] format: &str,
    #[pyo3(from_py_with = collection_arg)] collection: Option<&str>,
    #[pyo3(from_py_with = tag_arg)] tag: &str,
    #[pyo3(from_py_with = threads_arg)] threads: Option<usize>,
    progress: Option<Bound<'_, PyAny>>,
    #[pyo3(from_py_with = model_arg)] model: Option<PyRef<'_, PyFusionModel>>,
    kwargs: Option<&Bound<'_, PyDict>>,
) -> PyResult<FilesFused> {
    let inputs = run_inputs(inputs)?;
    if let Some(callback) = progress.as_ref().filter(|c| !c.is_callable()) {
        return Err(to_py_err(progress::not_a_callback(&type_name(callback))));
    }
    // The callback, and the counters the work keeps for it.
    let progress = progress.map(|callback| (callback.unbind(), Arc::new(FuseProgress::default())));
    let options = FuseFilesOptions {
        params: run_params("fuse_files", options, kwargs, model.as_deref())?,
        rank_from: rank_from.parse().map_err(to_py_err)?,
        format: format.parse().map_err(to_py_err)?,
        collection: collection.map(str::to_owned),
        tag: tag.to_owned(),
        threads,
        progress: progress.as_ref().map(|(_, counters)| Arc::clone(counters)),
    };
    check_thread_variable(py, threads)?;
    let report = move |py: Python<'_>| match &progress {
        Some((callback, counters)) => callback.call1(py, counters.snapshot()).map(drop),
        None => Ok(()),
    };
    let destination = output.as_deref().map_or(Destination::Memory, Destination::File);
    let (s, run) = interruptible_reporting(py, report, || stream::fuse_inputs(&inputs, destination, &options))?;
    Ok(match run {
        Some(run) => FilesFused::Run(run.into()),
        None => FilesFused::Written { queries: s.queries, input_lines: s.input_lines, buffered: s.buffered },
    })
}

// The sizes of a trained method, each read with fanfuse's message naming it.
int_arg!(segments_arg("segments") -> Option<usize>: 1..=MAX_SIZE);
int_arg!(window_arg("window") -> Option<usize>: 0..=MAX_SIZE);

#[doc = stub_doc!("train_fusion")]
#[pyfunction]
#[pyo3(signature = (runs, qrels, /, *, method, segments = None, window = None))]
pub(super) fn train_fusion(
    py: Python<'_>,
    #[pyo3(from_py_with = runs_arg)] runs: Vec<PyRef<'_, PyRun>>,
    #[pyo3(from_py_with = qrels_arg)] qrels: PyRef<'_, PyQrels>,
    #[pyo3(from_py_with = method_arg)] method: &str,
    #[pyo3(from_py_with = segments_arg)] segments: Option<usize>,
    #[pyo3(from_py_with = window_arg)] window: Option<usize>,
) -> PyResult<PyFusionModel> {
    let method = train::method_named(method).map_err(to_py_err)?;
    let sizes = TrainSizes { segments, window };
    let owned: Vec<Arc<crate::runs::Run>> = runs.iter().map(|r| Arc::clone(&r.inner)).collect();
    let qrels = Arc::clone(&qrels.inner);
    let model = interruptible(py, || train::train(method, &owned, &qrels, sizes))?;
    Ok(PyFusionModel { inner: Arc::new(model) })
}
