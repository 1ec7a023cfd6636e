//! In `fanfuse._core._internal`: the entry points of the distributed engine (`fanfuse.dask`), runs
//! as Arrow rows: reading a block of a run file or a table into row batches split by query, fusing
//! the rows that meet by query, writing the fused text in order. Conversion and error mapping only.

use pyo3::prelude::*;
use pyo3::types::PyDict;

use super::args::{int_arg, outer_items, strings};
use super::arrow::{table_source, PyArrowBatch};
use super::options::{check_thread_variable, run_params, threads_arg};
use super::runs::PyRun;
use super::{interruptible, to_py_err};
use crate::arrow::TableSource;
use crate::runs::fuse::gather::{run_of_rows, ROW_BATCHES};
use crate::runs::fuse::order::Layout;
use crate::runs::fuse::rows::{self as core_rows, RowFusion, RowOutput};
use crate::runs::fuse::text::FusedText;
use crate::runs::read::rows::{self, BlockRows, BlockSummary};
use crate::runs::read::table::TableSpec;
use crate::runs::write::OutFormat;
use crate::runs::RankFrom;

/// A block's summary as the readers return it and `fuse_rows` takes it, a tuple: (run, lines,
/// groups, first qid, last qid).
#[derive(FromPyObject, IntoPyObject)]
pub(super) struct Summary(usize, u64, u64, Option<String>, Option<String>);

/// A block read: its summary and its batches, one per partition, where every partition that
/// received no rows shares one empty batch object, so that many partitions cost a slot each, not a
/// batch each.
fn block_read(py: Python<'_>, (s, read): BlockRows) -> PyResult<(Summary, Vec<Py<PyArrowBatch>>)> {
    let empty = Py::new(py, PyArrowBatch::new(rows::empty_rows()))?;
    let batches = read
        .into_iter()
        .map(|batch| batch.map_or_else(|| Ok(empty.clone_ref(py)), |b| Py::new(py, PyArrowBatch::new(b))));
    Ok((Summary(s.run, s.lines, s.groups, s.first, s.last), batches.collect::<PyResult<_>>()?))
}

/// The layout of the blocks of runs named by `names` (read after the blocks).
fn layout(blocks: &Bound<'_, PyAny>, names: impl FnOnce() -> PyResult<Vec<String>>) -> PyResult<Layout> {
    let items = outer_items(blocks, "blocks", rows::SUMMARIES)?;
    let summaries = items.iter().enumerate().map(|(i, item)| {
        let Summary(run, lines, groups, first, last) =
            item.extract().map_err(|_| to_py_err(BlockSummary::refused(i)))?;
        Ok(BlockSummary { run, lines, groups, first, last })
    });
    Layout::new(&summaries.collect::<PyResult<Vec<_>>>()?, &names()?).map_err(to_py_err)
}

fn row_sources(rows: &Bound<'_, PyAny>) -> PyResult<Vec<TableSource>> {
    let items = outer_items(rows, "rows", ROW_BATCHES)?;
    items.iter().enumerate().map(|(i, item)| table_source(item, &format!("rows[{i}]"))).collect()
}

// The ints of these functions, each read with fanfuse's message naming it.
int_arg!(block_bytes_arg("block_bytes") -> u64: 1..);
int_arg!(ranges_arg("ranges") -> usize: 1..=rows::MAX_PARTITIONS);
int_arg!(partitions_arg("partitions") -> usize: 1..=rows::MAX_PARTITIONS);
int_arg!(run_arg("run") -> usize: 0..=u32::MAX);
int_arg!(start_arg("start") -> u64: 0..);
int_arg!(end_arg("end") -> u64: 0..);
int_arg!(first_row_arg("first_row") -> u64: 0..);

#[doc = stub_doc!("file_blocks")]
#[pyfunction]
#[pyo3(signature = (path, /, *, block_bytes))]
pub(super) fn file_blocks(
    py: Python<'_>,
    path: &str,
    #[pyo3(from_py_with = block_bytes_arg)] block_bytes: u64,
) -> PyResult<Vec<(u64, u64)>> {
    py.detach(|| rows::file_blocks(path, block_bytes)).map_err(to_py_err)
}

#[doc = stub_doc!("read_run_block")]
#[pyfunction]
#[pyo3(signature = (path, /, *, run = 0, start = 0, end = u64::MAX, partitions = 1),
    text_signature = "(path, /, *, run=0, start=0, end=..., partitions=1)")]
pub(super) fn read_run_block(
    py: Python<'_>,
    path: &str,
    #[pyo3(from_py_with = run_arg)] run: usize,
    #[pyo3(from_py_with = start_arg)] start: u64,
    #[pyo3(from_py_with = end_arg)] end: u64,
    #[pyo3(from_py_with = partitions_arg)] partitions: usize,
) -> PyResult<(Summary, Vec<Py<PyArrowBatch>>)> {
    block_read(py, interruptible(py, || rows::read_file_block(path, start, end, run, partitions))?)
}

#[doc = stub_doc!("read_table_block")]
#[pyfunction]
#[pyo3(signature = (table, /, *, run = 0, name = "table", first_row = 0, rank_from = "score", partitions = 1))]
pub(super) fn read_table_block(
    py: Python<'_>,
    table: &Bound<'_, PyAny>,
    #[pyo3(from_py_with = run_arg)] run: usize,
    name: &str,
    #[pyo3(from_py_with = first_row_arg)] first_row: u64,
    rank_from: &str,
    #[pyo3(from_py_with = partitions_arg)] partitions: usize,
) -> PyResult<(Summary, Vec<Py<PyArrowBatch>>)> {
    let rank_from: RankFrom = rank_from.parse().map_err(to_py_err)?;
    let source = table_source(table, name)?;
    let spec = TableSpec { name, run_column: None, runs: &[], rank_from, first_row };
    block_read(py, interruptible(py, move || rows::read_run_table_block(source, &spec, run, partitions))?)
}

#[doc = stub_doc!("fuse_rows")]
#[pyfunction]
#[pyo3(signature = (rows, /, *, blocks, names, ranges = 1, format = None, tag = "fanfuse",
    rank_from = "score", threads = None, options = None, **kwargs))]
pub(super) fn fuse_rows(
    py: Python<'_>,
    rows: &Bound<'_, PyAny>,
    blocks: &Bound<'_, PyAny>,
    names: &Bound<'_, PyAny>,
    #[pyo3(from_py_with = ranges_arg)] ranges: usize,
    format: Option<&str>,
    tag: &str,
    rank_from: &str,
    #[pyo3(from_py_with = threads_arg)] threads: Option<usize>,
    options: Option<&Bound<'_, PyAny>>,
    kwargs: Option<&Bound<'_, PyDict>>,
) -> PyResult<Vec<PyArrowBatch>> {
    let params = run_params("fuse_rows", options, kwargs, None)?;
    let format = format.map(str::parse::<OutFormat>).transpose().map_err(to_py_err)?;
    let output = RowOutput::new(format, tag).map_err(to_py_err)?;
    let rank_from: RankFrom = rank_from.parse().map_err(to_py_err)?;
    check_thread_variable(py, threads)?;
    let (sources, layout) = (row_sources(rows)?, layout(blocks, || strings(names, "names"))?);
    let fusion = RowFusion { params: &params, rank_from, output, ranges, threads };
    let fused = interruptible(py, move || core_rows::fuse_rows(sources, &layout, &fusion))?;
    Ok(fused.into_iter().map(PyArrowBatch::new).collect())
}

#[doc = stub_doc!("run_from_rows")]
#[pyfunction]
#[pyo3(signature = (rows, /, *, blocks, name, rank_from = "score"))]
pub(super) fn run_from_rows(
    py: Python<'_>,
    rows: &Bound<'_, PyAny>,
    blocks: &Bound<'_, PyAny>,
    name: String,
    rank_from: &str,
) -> PyResult<(PyRun, Vec<u64>)> {
    let rank_from: RankFrom = rank_from.parse().map_err(to_py_err)?;
    let (sources, layout) = (row_sources(rows)?, layout(blocks, || Ok(vec![name]))?);
    let (run, firsts) = interruptible(py, move || run_of_rows(sources, &layout, rank_from))?;
    Ok((run.into(), firsts))
}

#[doc = stub_doc!("write_run_text")]
#[pyfunction]
#[pyo3(signature = (output, chunks, /, *, inputs = None))]
pub(super) fn write_run_text(
    py: Python<'_>,
    output: &str,
    chunks: &Bound<'_, PyAny>,
    inputs: Option<&Bound<'_, PyAny>>,
) -> PyResult<u64> {
    let inputs = inputs.map(|i| strings(i, "inputs")).transpose()?.unwrap_or_default();
    let mut out = py.detach(|| FusedText::create(output, &inputs)).map_err(to_py_err)?;
    for (i, chunk) in chunks.try_iter()?.enumerate() {
        let name = format!("chunks[{i}]");
        let source = table_source(&chunk?, &name)?;
        py.detach(|| out.write(source, &name)).map_err(to_py_err)?;
    }
    interruptible(py, move || out.commit())
}
