//! Fusion of run rows ([`crate::runs::read::rows`]) brought together by query id ([`super::gather`]):
//! each query is fused as `fanfuse fuse` fuses it, and keyed by its place in the file `fanfuse fuse`
//! writes ([`super::order`]).

use super::gather::{collect, columns, gather, hits_into, Gathered};
use super::order::Layout;
use super::query::{fuse_query, validate_run_params};
use crate::arrow::export::{ExportBatch, ExportColumn, TextColumn};
use crate::arrow::TableSource;
use crate::error::FusionError;
use crate::fusion::FuseParams;
use crate::runs::read::rows::{empty_rows, read_table_block};
use crate::runs::read::table::TableSpec;
use crate::runs::write::{check_tag, fused_query_text, OutFormat};
use crate::runs::{ranked, Hit, RankFrom};

/// What a fusion of rows gives per query.
#[derive(Debug, Clone, Copy)]
pub enum RowOutput<'a> {
    /// One row per fused hit: qid, docid, rank (from 1), score.
    Hits,
    /// One row per query: qid and `text`, its TREC lines as `fanfuse fuse` writes them.
    Trec { tag: &'a str },
}

impl<'a> RowOutput<'a> {
    /// The output of `format` (None: hits); MT-RAG is refused, as rows do not hold its fields.
    pub fn new(format: Option<OutFormat>, tag: &'a str) -> Result<Self, FusionError> {
        match format {
            None => Ok(Self::Hits),
            Some(OutFormat::Trec) => Ok(Self::Trec { tag }),
            Some(OutFormat::Mtrag) => Err(FusionError::setting(
                "format='mtrag' needs the passthrough fields of every context, which rows do not hold; \
                 rows are fused to hits (format=None) or TREC text (format='trec')",
            )),
        }
    }
}

/// How to fuse rows.
pub struct RowFusion<'a> {
    pub params: &'a FuseParams,
    pub rank_from: RankFrom,
    pub output: RowOutput<'a>,
    /// Batches to split the result into, by ranges of the order key.
    pub ranges: usize,
    pub threads: Option<usize>,
}

/// Queries whose hits are read from the rows at a time, then fused in parallel (as many as the
/// streaming fusion of files holds ready).
const CHUNK_QUERIES: usize = super::stream::CHUNK_QUERIES;

/// Fuses every query of `pieces`. Each result batch has an int64 `order` column: one process writes
/// query A before query B exactly when A's key is smaller. Batch k holds the keys of the k-th of
/// `ranges` equal ranges of the key space, in key order, so batch k of every fusion of the same runs
/// comes before batch k + 1 of any.
pub fn fuse_rows(
    pieces: Vec<TableSource>,
    layout: &Layout,
    fusion: &RowFusion<'_>,
) -> Result<Vec<ExportBatch>, FusionError> {
    validate_run_params(fusion.params, layout.names.len())?;
    if let RowOutput::Trec { tag } = fusion.output {
        check_tag(OutFormat::Trec, tag)?;
    }
    if fusion.ranges == 0 {
        return Err(FusionError::out_of_range("ranges must be at least 1"));
    }
    let steps = layout.steps();
    let space = steps.checked_mul(steps).filter(|&s| i64::try_from(s).is_ok()).ok_or_else(|| {
        FusionError::invalid(format!("{steps} reading steps are more than one order key can tell apart"))
    })?;
    let pieces = collect(pieces, layout)?;
    let columns = columns(&pieces)?;
    // In key order from the start, so that each fused query goes straight to the end of its range's
    // output (holding every query's output to sort it cost a second copy of the fused text).
    let mut queries: Vec<(u64, Gathered)> =
        gather(&columns, layout)?.into_iter().map(|query| (query.groups.place(layout).key(steps), query)).collect();
    queries.sort_unstable_by_key(|(key, _)| *key);
    let mut outputs: Vec<Output> = (0..fusion.ranges).map(|_| Output::default()).collect();
    // The hit lists of a chunk, reused by the next: fresh lists for every chunk had the allocator
    // take fresh pages, which the kernel clears.
    let mut work: Vec<(u64, &Gathered, Vec<Vec<Hit>>)> = Vec::with_capacity(CHUNK_QUERIES);
    for chunk in queries.chunks(CHUNK_QUERIES) {
        crate::interrupt::checkpoint()?;
        let mut emptied = work.drain(..).map(|(_, _, lists)| lists).collect::<Vec<_>>();
        for (key, query) in chunk {
            let mut lists = emptied.pop().unwrap_or_else(|| vec![Vec::new(); layout.names.len()]);
            for (r, hits) in lists.iter_mut().enumerate() {
                hits_into(hits, query, r, &columns, layout)?;
            }
            work.push((*key, query, lists));
        }
        let fused = crate::batch::map_queries(&work, fusion.threads, |(_, query, lists)| {
            let ranked_lists = lists
                .iter()
                .zip(&layout.names)
                .map(|(hits, name)| ranked(name, &query.qid, hits, fusion.rank_from))
                .collect::<Result<Vec<_>, _>>()?;
            let entries = fuse_query(&query.qid, &ranked_lists, &layout.names, fusion.params)?;
            Ok::<_, FusionError>(match fusion.output {
                RowOutput::Hits => {
                    Fused::Hits(entries.iter().map(|&(hit, score)| (hit.docid.clone(), score)).collect())
                }
                RowOutput::Trec { tag } => Fused::Text(fused_query_text(
                    OutFormat::Trec,
                    &query.qid,
                    &entries,
                    tag,
                    None,
                    &layout.names,
                    lists,
                )?),
            })
        })?;
        for ((key, query, _), fused) in work.iter().zip(fused) {
            let range = (u128::from(*key) * fusion.ranges as u128 / u128::from(space)) as usize;
            outputs[range.min(fusion.ranges - 1)].push(*key, &query.qid, &fused?);
        }
    }
    Ok(outputs.into_iter().map(|output| output.finish(fusion.output)).collect())
}

/// An order key as a column value (`fuse_rows` checked that every key fits).
fn key_value(key: u64) -> i64 {
    i64::try_from(key).unwrap_or(i64::MAX)
}

/// A fused query as the output wants it.
enum Fused {
    Hits(Vec<(compact_str::CompactString, f64)>),
    Text(Vec<u8>),
}

/// The columns of one range of the output, filled in key order.
#[derive(Default)]
struct Output {
    qids: TextColumn,
    docids: TextColumn,
    ranks: Vec<i64>,
    scores: Vec<f64>,
    texts: TextColumn,
    orders: Vec<i64>,
}

impl Output {
    fn push(&mut self, key: u64, qid: &str, fused: &Fused) {
        match fused {
            Fused::Hits(hits) => {
                for (i, (docid, score)) in hits.iter().enumerate() {
                    self.qids.push(qid);
                    self.docids.push(docid);
                    self.ranks.push(i64::try_from(i).unwrap_or(i64::MAX) + 1);
                    self.scores.push(*score);
                    self.orders.push(key_value(key));
                }
            }
            Fused::Text(text) => {
                self.qids.push(qid);
                self.texts.push(std::str::from_utf8(text).expect("written from str"));
                self.orders.push(key_value(key));
            }
        }
    }

    fn finish(self, output: RowOutput<'_>) -> ExportBatch {
        match output {
            RowOutput::Hits => ExportBatch::new(vec![
                ("qid", ExportColumn::Text(self.qids)),
                ("docid", ExportColumn::Text(self.docids)),
                ("rank", ExportColumn::Int64(self.ranks)),
                ("score", ExportColumn::Float64(self.scores)),
                ("order", ExportColumn::Int64(self.orders)),
            ]),
            RowOutput::Trec { .. } => ExportBatch::new(vec![
                ("qid", ExportColumn::Text(self.qids)),
                ("order", ExportColumn::Int64(self.orders)),
                ("text", ExportColumn::Text(self.texts)),
            ]),
        }
    }
}

/// Fuses run tables (`fanfuse.fuse_table`) as `fanfuse fuse` fuses the same rows written as run
/// files, through the rows of [`read_table_block`]: each table one run, or one table
/// of several runs (its spec's `run_column`), in the order given; errors name a table and its row.
/// One row per fused hit, queries in the order `fanfuse fuse` writes them. Each table is read as
/// `shape` says, under its own name.
///
/// # Panics
/// Never: a table gives one batch per run, and the fusion one per range.
pub fn fuse_tables(
    tables: Vec<(TableSource, &str)>,
    shape: &TableSpec<'_>,
    params: &FuseParams,
    threads: Option<usize>,
) -> Result<ExportBatch, FusionError> {
    let (mut blocks, mut names, mut pieces) = (Vec::new(), Vec::new(), Vec::new());
    for (source, name) in tables {
        let spec = TableSpec { name, ..shape.clone() };
        for (summary, mut batches) in read_table_block(source, &spec, blocks.len(), 1)? {
            blocks.push(summary);
            names.push(spec.name.to_owned());
            pieces.push(std::sync::Arc::new(batches.pop().expect("one partition").unwrap_or_else(empty_rows)));
        }
    }
    let layout = Layout::new(&blocks, &names)?;
    let sources = pieces.iter().map(ExportBatch::source).collect::<Vec<_>>();
    let fusion = RowFusion { params, rank_from: shape.rank_from, output: RowOutput::Hits, ranges: 1, threads };
    Ok(fuse_rows(sources, &layout, &fusion)?.pop().expect("one range"))
}

#[cfg(test)]
#[path = "rows_tests.rs"]
mod tests;
