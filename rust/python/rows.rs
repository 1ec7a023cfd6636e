//! Runs as Arrow rows for the distributed engines: reading a block of a run file or a table into row
//! batches split by query, fusing the rows that meet by query, and writing the fused text in order
//! through the core's output file. Batches go out through the Arrow PyCapsule protocol.

use std::io::Write;
use std::sync::Arc;

use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyTuple};

use super::args::{int_in, outer_items, strings};
use super::arrow_batch::PyArrowBatch;
use super::options::{check_thread_variable, run_params, threads_arg, PyFusionOptions};
use super::runs::PyRun;
use super::tables::table_source;
use super::{interruptible, to_py_err};
use crate::arrow::column::{Column, Values};
use crate::arrow::export::ExportBatch;
use crate::arrow::TableSource;
use crate::error::FusionError as CoreError;
use crate::output::OutputFile;
use crate::runs::fuse_rows::{self as core_rows, RowFusion, RowOutput};
use crate::runs::row_order::Layout;
use crate::runs::rows::{self, BlockSummary};
use crate::runs::table::TableSpec;
use crate::runs::write::{first_trec_line_problem, nothing_written, OutFormat};
use crate::runs::RankFrom;

fn batches(read: Vec<ExportBatch>) -> Vec<PyArrowBatch> {
    read.into_iter().map(PyArrowBatch::new).collect()
}

/// A block's batches, one per partition: every partition that received no rows shares one empty
/// batch object, so that many partitions cost a slot each, not a batch each.
fn partition_batches(py: Python<'_>, read: Vec<Option<ExportBatch>>) -> PyResult<Vec<Py<PyArrowBatch>>> {
    let mut empty: Option<Py<PyArrowBatch>> = None;
    read.into_iter()
        .map(|batch| {
            if let Some(batch) = batch {
                return Py::new(py, PyArrowBatch::new(batch));
            }
            if empty.is_none() {
                empty = Some(Py::new(py, PyArrowBatch::new(rows::empty_rows()))?);
            }
            Ok(empty.as_ref().map(|shared| shared.clone_ref(py)).expect("made above"))
        })
        .collect()
}

/// A block's summary as Python holds it: (run, lines, groups, first qid, last qid).
type SummaryTuple = (usize, u64, u64, Option<String>, Option<String>);

fn summary_tuple(summary: BlockSummary) -> SummaryTuple {
    (summary.run, summary.lines, summary.groups, summary.first, summary.last)
}

fn layout(blocks: &Bound<'_, PyAny>, names: &Bound<'_, PyAny>) -> PyResult<Layout> {
    let summaries = outer_items(blocks, "blocks", "block summaries (run, lines, groups, first, last)")?
        .iter()
        .enumerate()
        .map(|(i, item)| {
            let (run, lines, groups, first, last): SummaryTuple = item.extract().map_err(|_| {
                PyTypeError::new_err(format!(
                    "blocks[{i}] must be a block summary (run, lines, groups, first, last) as the readers return it"
                ))
            })?;
            Ok(BlockSummary { run, lines, groups, first, last })
        })
        .collect::<PyResult<Vec<_>>>()?;
    Layout::new(&summaries, &strings(names, "names")?).map_err(to_py_err)
}

fn row_sources(rows: &Bound<'_, PyAny>) -> PyResult<Vec<TableSource>> {
    let items = outer_items(rows, "rows", "Arrow batches (one per block)")?;
    items.iter().enumerate().map(|(i, item)| table_source(item, &format!("rows[{i}]"))).collect()
}

// The counts and offsets of these functions, each read with fanfuse's message naming it.
fn count(value: &Bound<'_, PyAny>, name: &str) -> PyResult<usize> {
    int_in(value, name, "an int >= 1", 1..=i128::from(u32::MAX))
}

fn offset(value: &Bound<'_, PyAny>, name: &str) -> PyResult<u64> {
    int_in(value, name, "an int >= 0", 0..=i128::from(u64::MAX))
}

fn partitions_arg(value: &Bound<'_, PyAny>) -> PyResult<usize> {
    let most = rows::MAX_PARTITIONS;
    int_in(value, "partitions", &format!("an int from 1 to {most}"), 1..=i128::try_from(most).unwrap_or(i128::MAX))
}

fn ranges_arg(value: &Bound<'_, PyAny>) -> PyResult<usize> {
    count(value, "ranges")
}

fn block_bytes_arg(value: &Bound<'_, PyAny>) -> PyResult<u64> {
    int_in(value, "block_bytes", "an int >= 1", 1..=i128::from(u64::MAX))
}

fn run_arg(value: &Bound<'_, PyAny>) -> PyResult<usize> {
    int_in(value, "run", "an int >= 0", 0..=i128::from(u32::MAX))
}

fn start_arg(value: &Bound<'_, PyAny>) -> PyResult<u64> {
    offset(value, "start")
}

fn end_arg(value: &Bound<'_, PyAny>) -> PyResult<u64> {
    offset(value, "end")
}

fn first_row_arg(value: &Bound<'_, PyAny>) -> PyResult<u64> {
    offset(value, "first_row")
}

/// The byte ranges to read a run file in. See `_core.pyi`.
#[pyfunction]
#[pyo3(signature = (path, /, *, block_bytes))]
pub(super) fn file_blocks(
    py: Python<'_>,
    path: &str,
    #[pyo3(from_py_with = block_bytes_arg)] block_bytes: u64,
) -> PyResult<Vec<(u64, u64)>> {
    py.detach(|| rows::file_blocks(path, block_bytes)).map_err(to_py_err)
}

/// Reads a block of a run file into row batches. See `_core.pyi`.
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
) -> PyResult<(SummaryTuple, Vec<Py<PyArrowBatch>>)> {
    let (summary, read) = interruptible(py, || rows::read_file_block(path, start, end, run, partitions))?;
    Ok((summary_tuple(summary), partition_batches(py, read)?))
}

/// Reads a run table (or a part of one) into row batches. See `_core.pyi`.
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
) -> PyResult<(SummaryTuple, Vec<Py<PyArrowBatch>>)> {
    let rank_from: RankFrom = rank_from.parse().map_err(to_py_err)?;
    let source = table_source(table, name)?;
    let spec = TableSpec { name, run_column: None, runs: &[], rank_from, first_row };
    let mut read = interruptible(py, move || rows::read_table_block(source, &spec, run, partitions))?;
    let (summary, read) = read.pop().expect("one block for a table without a run column");
    Ok((summary_tuple(summary), partition_batches(py, read)?))
}

/// Whether one process would fuse these runs buffered. See `_core.pyi`.
#[pyfunction]
#[pyo3(signature = (rows, /, *, blocks, names))]
pub(super) fn rows_regrouped(
    py: Python<'_>,
    rows: &Bound<'_, PyAny>,
    blocks: &Bound<'_, PyAny>,
    names: &Bound<'_, PyAny>,
) -> PyResult<bool> {
    let (sources, layout) = (row_sources(rows)?, layout(blocks, names)?);
    interruptible(py, move || core_rows::regrouped(sources, &layout))
}

/// Fuses the rows that met by query. See `_core.pyi`.
#[pyfunction]
#[pyo3(signature = (rows, /, *, blocks, names, buffered = false, ranges = 1, format = None, tag = "fanfuse",
    rank_from = "score", threads = None, options = None, **kwargs))]
#[allow(clippy::too_many_arguments)] // mirrors the Python signature: data plus keyword arguments
pub(super) fn fuse_rows(
    py: Python<'_>,
    rows: &Bound<'_, PyAny>,
    blocks: &Bound<'_, PyAny>,
    names: &Bound<'_, PyAny>,
    buffered: bool,
    #[pyo3(from_py_with = ranges_arg)] ranges: usize,
    format: Option<&str>,
    tag: &str,
    rank_from: &str,
    #[pyo3(from_py_with = threads_arg)] threads: Option<usize>,
    options: Option<&Bound<'_, PyFusionOptions>>,
    kwargs: Option<&Bound<'_, PyDict>>,
) -> PyResult<Vec<PyArrowBatch>> {
    let params = run_params("fuse_rows", options, kwargs, None)?;
    let output = match format.map(str::parse::<OutFormat>).transpose().map_err(to_py_err)? {
        None => RowOutput::Hits,
        Some(OutFormat::Trec) => RowOutput::Trec { tag },
        Some(OutFormat::Mtrag) => {
            return Err(super::FusionError::new_err(
                "format='mtrag' needs the passthrough fields of every context, which rows do not hold; \
                 rows are fused to hits (format=None) or TREC text (format='trec')",
            ))
        }
    };
    let rank_from: RankFrom = rank_from.parse().map_err(to_py_err)?;
    check_thread_variable(py, threads)?;
    let (sources, layout) = (row_sources(rows)?, layout(blocks, names)?);
    let fusion = RowFusion { params: &params, rank_from, output, buffered, ranges, threads };
    let fused = interruptible(py, move || core_rows::fuse_rows(sources, &layout, &fusion))?;
    Ok(batches(fused))
}

/// The rows of one run as a Run to evaluate. See `_core.pyi`.
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
    let names = PyTuple::new(py, [name])?;
    let (sources, layout) = (row_sources(rows)?, layout(blocks, names.as_any())?);
    let (run, firsts) = interruptible(py, move || core_rows::run_of_rows(sources, &layout, rank_from))?;
    Ok((PyRun { inner: Arc::new(run) }, firsts))
}

/// Writes fused TREC text, chunk by chunk, into one output file. See `_core.pyi`.
#[pyfunction]
#[pyo3(signature = (output, chunks, /, *, inputs = None))]
pub(super) fn write_run_text(
    py: Python<'_>,
    output: &str,
    chunks: &Bound<'_, PyAny>,
    inputs: Option<&Bound<'_, PyAny>>,
) -> PyResult<u64> {
    let inputs = inputs.map(|i| strings(i, "inputs")).transpose()?.unwrap_or_default();
    let mut out = py.detach(|| OutputFile::create(output, &inputs)).map_err(to_py_err)?;
    let (mut queries, mut empty) = (0_u64, true);
    for (i, chunk) in chunks.try_iter()?.enumerate() {
        let source = table_source(&chunk?, &format!("chunks[{i}]"))?;
        let name = format!("chunks[{i}]");
        let written = py.detach(|| {
            source.for_each_batch(&name, |batch| {
                let column = |n: &str| {
                    let (schema, array) = batch.column(n).ok_or_else(|| {
                        CoreError::invalid(format!("{name} has no column '{n}': chunks hold qid and text"))
                    })?;
                    Column::new(schema, array)
                        .ok()
                        .filter(|c| c.values() == Values::Text)
                        .ok_or_else(|| CoreError::invalid(format!("{name}: column '{n}' is not text")))
                };
                let (qids, texts) = (column("qid")?, column("text")?);
                let (mut a, mut b) = (itoa::Buffer::new(), itoa::Buffer::new());
                for row in batch.rows() {
                    let at_row = |m: String| CoreError::invalid(format!("{name} row {row}: {m}"));
                    let text = texts.text(row, &mut b).map_err(at_row)?;
                    queries += 1;
                    if empty && !text.is_empty() {
                        let qid = qids.text(row, &mut a).map_err(at_row)?;
                        if let Some(message) = first_trec_line_problem(OutFormat::Trec, qid) {
                            return Err(CoreError::invalid(message));
                        }
                        empty = false;
                    }
                    out.writer().write_all(text.as_bytes()).map_err(|e| out.io_error(&e))?;
                }
                Ok(())
            })
        });
        written.map_err(to_py_err)?;
    }
    if empty {
        return Err(to_py_err(nothing_written(OutFormat::Trec, queries)));
    }
    interruptible(py, move || out.commit())?;
    Ok(queries)
}
