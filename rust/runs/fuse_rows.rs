//! Fusion of run rows ([`super::rows`]) brought together by query id: each query is fused as
//! `fanfuse fuse` fuses it, and keyed by its place in the file `fanfuse fuse` writes
//! ([`super::row_order`]).

use std::collections::HashMap;

use super::row_order::{Layout, QueryGroups};
use super::rows::ROW_COLUMNS;
use super::table::TableSpec;
use super::write::{check_tag, value_error_at, write_query, OutFormat, OutHit, WriteError};
use super::{fuse_query, ranked, Hit, Query, RankFrom, Run};
use crate::arrow::column::{Column, Values};
use crate::arrow::export::{ExportBatch, ExportColumn, TextColumn};
use crate::arrow::{Batch, Batches, TableSource};
use crate::error::FusionError;
use crate::fusion::FuseParams;

/// Rows `start..end` of batch `batch` of piece `piece`: consecutive rows of one group.
#[derive(Clone, Copy)]
struct Span {
    piece: u32,
    batch: u32,
    start: u32,
    end: u32,
}

/// One query of the rows: where its rows are in each run, and its groups.
struct Gathered {
    qid: String,
    spans: Vec<Vec<Span>>,
    groups: QueryGroups,
}

/// The columns of a row batch, checked.
struct RowColumns<'a> {
    qid: Column<'a>,
    docid: Column<'a>,
    score: Column<'a>,
    rank: Column<'a>,
    line: Column<'a>,
    group: Column<'a>,
}

impl<'a> RowColumns<'a> {
    fn of(batch: &Batch<'a>, name: &str) -> Result<Self, FusionError> {
        let column = |n: usize, values: Values| {
            let (schema, array) = batch.column(ROW_COLUMNS[n]).ok_or_else(|| {
                FusionError::invalid(format!(
                    "{name} has no column '{}': row batches hold {} (the batches the core's readers make)",
                    ROW_COLUMNS[n],
                    ROW_COLUMNS.join(", ")
                ))
            })?;
            Column::new(schema, array)
                .ok()
                .filter(|c| c.values() == values)
                .ok_or_else(|| FusionError::invalid(format!("{name}: column '{}' has another type", ROW_COLUMNS[n])))
        };
        Ok(Self {
            qid: column(0, Values::Text)?,
            docid: column(1, Values::Text)?,
            score: column(2, Values::Float)?,
            rank: column(3, Values::Integer)?,
            line: column(4, Values::Integer)?,
            group: column(5, Values::Integer)?,
        })
    }
}

/// The row batches of every piece (piece i holds rows of block i of the layout), taken over.
fn collect(pieces: Vec<TableSource>, layout: &Layout) -> Result<Vec<Batches>, FusionError> {
    if pieces.len() != layout.runs.len() {
        return Err(FusionError::invalid(format!(
            "{} row batches for {} blocks: give one batch per block, in the order of the blocks",
            pieces.len(),
            layout.runs.len()
        )));
    }
    pieces.into_iter().enumerate().map(|(i, piece)| piece.collect(&format!("rows[{i}]"))).collect()
}

/// The checked columns of every batch of every piece.
fn columns<'a>(pieces: &'a [Batches]) -> Result<Vec<Vec<RowColumns<'a>>>, FusionError> {
    let of_piece = |(i, piece): (usize, &'a Batches)| {
        piece.iter().map(|batch| RowColumns::of(&batch, &format!("rows[{i}]"))).collect::<Result<Vec<_>, _>>()
    };
    pieces.iter().enumerate().map(of_piece).collect()
}

fn bad_row(piece: usize, row: usize, message: &str) -> FusionError {
    FusionError::invalid(format!("rows[{piece}] row {}: {message}", row + 1))
}

/// The queries of the rows in order of first appearance, with where their rows are: one pass over
/// the query ids and groups (a hit list per query and run would take as much memory as the rows
/// again, and growing it had the kernel clear fresh pages for most of the time).
fn gather(columns: &[Vec<RowColumns<'_>>], layout: &Layout) -> Result<Vec<Gathered>, FusionError> {
    let runs = layout.names.len();
    let mut queries: Vec<Gathered> = Vec::new();
    let mut index: HashMap<String, usize> = HashMap::new();
    for (i, piece) in columns.iter().enumerate() {
        let (run, groups_before) = (layout.runs[i], layout.groups_before[i]);
        for (b, batch) in piece.iter().enumerate() {
            let rows = batch.group.len();
            let mut digits = itoa::Buffer::new();
            let mut start = 0;
            while start < rows {
                let group = batch.group.integer(start).map_err(|m| bad_row(i, start, &m))?;
                let mut end = start + 1;
                while end < rows && batch.group.integer(end).map_err(|m| bad_row(i, end, &m))? == group {
                    end += 1;
                }
                let qid = batch.qid.text(start, &mut digits).map_err(|m| bad_row(i, start, &m))?;
                let at = if let Some(&at) = index.get(qid) {
                    at
                } else {
                    index.insert(qid.to_owned(), queries.len());
                    let (spans, groups) = (vec![Vec::new(); runs], QueryGroups::new(runs));
                    queries.push(Gathered { qid: qid.to_owned(), spans, groups });
                    queries.len() - 1
                };
                let global = u64::try_from(group).map_err(|_| bad_row(i, start, "a negative group"))?;
                queries[at].groups.add(run, groups_before + global);
                let count = |n: usize| u32::try_from(n).map_err(|_| bad_row(i, n, "more than 2^32 rows"));
                let span = Span { piece: count(i)?, batch: count(b)?, start: count(start)?, end: count(end)? };
                queries[at].spans[run].push(span);
                start = end;
            }
        }
    }
    Ok(queries)
}

/// The query's hits from run `run` into `hits` (emptied first), in file order, their line counted in
/// the whole run.
fn hits_into(
    hits: &mut Vec<Hit>,
    query: &Gathered,
    run: usize,
    columns: &[Vec<RowColumns<'_>>],
    layout: &Layout,
) -> Result<(), FusionError> {
    hits.clear();
    hits.reserve(query.spans[run].iter().map(|s| (s.end - s.start) as usize).sum());
    let mut digits = itoa::Buffer::new();
    for span in &query.spans[run] {
        let (i, batch) = (span.piece as usize, &columns[span.piece as usize][span.batch as usize]);
        for row in span.start as usize..span.end as usize {
            let bad = |m: String| bad_row(i, row, &m);
            let docid = batch.docid.text(row, &mut digits).map_err(bad)?;
            if docid.is_empty() {
                continue; // a group without hits: it took its turn all the same
            }
            let line = u64::try_from(batch.line.integer(row).map_err(bad)?).unwrap_or(0);
            hits.push(Hit {
                docid: docid.into(),
                score: batch.score.float(row).map_err(bad)?,
                rank: batch.rank.integer(row).map_err(bad)?,
                line: layout.lines_before[i] + line,
                extra: None,
            });
        }
    }
    Ok(())
}

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
            Some(OutFormat::Mtrag) => Err(FusionError::invalid(
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
    super::fuse_query::validate_run_params(fusion.params, layout.names.len())?;
    if let RowOutput::Trec { tag } = fusion.output {
        check_tag(OutFormat::Trec, tag)?;
    }
    if fusion.ranges == 0 {
        return Err(FusionError::invalid("ranges must be at least 1"));
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
        gather(&columns, layout)?.into_iter().map(|query| (query.groups.key(layout, steps), query)).collect();
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
            let entries = fuse_query::fuse_query(&query.qid, &ranked_lists, fusion.params)?;
            Ok::<_, FusionError>(match fusion.output {
                RowOutput::Hits => {
                    Fused::Hits(entries.iter().map(|&(hit, score)| (hit.docid.clone(), score)).collect())
                }
                RowOutput::Trec { tag } => Fused::Text(trec_text(&query.qid, lists, &entries, tag, &layout.names)?),
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
/// files, through the rows of [`super::rows::read_table_block`]: each table one run, or one table
/// of several runs (its spec's `run_column`), in the order given; errors name a table and its row.
/// One row per fused hit, queries in the order `fanfuse fuse` writes them. Every spec's `rank_from`
/// is `rank_from`.
///
/// # Panics
/// Never: a table gives one batch per run, and the fusion one per range.
pub fn fuse_tables(
    tables: Vec<(TableSource, TableSpec<'_>)>,
    rank_from: RankFrom,
    params: &FuseParams,
    threads: Option<usize>,
) -> Result<ExportBatch, FusionError> {
    let (mut blocks, mut names, mut pieces) = (Vec::new(), Vec::new(), Vec::new());
    for (source, spec) in tables {
        for (summary, mut batches) in super::rows::read_table_block(source, &spec, blocks.len(), 1)? {
            blocks.push(summary);
            names.push(spec.name.to_owned());
            pieces.push(std::sync::Arc::new(
                batches.pop().expect("one partition").unwrap_or_else(super::rows::empty_rows),
            ));
        }
    }
    let layout = Layout::new(&blocks, &names)?;
    let sources = pieces.iter().map(ExportBatch::source).collect::<Vec<_>>();
    let fusion = RowFusion { params, rank_from, output: RowOutput::Hits, ranges: 1, threads };
    Ok(fuse_rows(sources, &layout, &fusion)?.pop().expect("one range"))
}

/// The query's TREC lines, with `fanfuse fuse`'s checks and messages (naming the input line).
fn trec_text(
    qid: &str,
    lists: &[Vec<Hit>],
    fused: &[(&Hit, f64)],
    tag: &str,
    names: &[String],
) -> Result<Vec<u8>, FusionError> {
    let out: Vec<OutHit<'_>> =
        fused.iter().map(|&(hit, score)| OutHit { docid: &hit.docid, score, extra: None }).collect();
    let mut text = Vec::with_capacity(out.len() * 64);
    write_query(&mut text, OutFormat::Trec, qid, &out, tag, None).map_err(|e| match e {
        WriteError::Io(e) => FusionError::io("<memory>", &e),
        WriteError::Value { hit, message } => value_error_at(names, lists, hit.map(|i| fused[i].0), message),
    })?;
    Ok(text)
}

/// The rows of one run (`pieces` of a layout of one run) as a [`Run`] to evaluate: queries in order
/// of first appearance, hits in rank order (`rank_from`). Also each query's first group in the run,
/// which orders the queries of several such runs as one process reads the whole run.
pub fn run_of_rows(
    pieces: Vec<TableSource>,
    layout: &Layout,
    rank_from: RankFrom,
) -> Result<(Run, Vec<u64>), FusionError> {
    if layout.names.len() != 1 {
        return Err(FusionError::invalid(format!("rows of {} runs; evaluate one run at a time", layout.names.len())));
    }
    let pieces = collect(pieces, layout)?;
    let columns = columns(&pieces)?;
    let mut gathered = gather(&columns, layout)?;
    gathered.sort_by_key(|q| q.groups.first[0]);
    let name = &layout.names[0];
    let mut firsts = Vec::with_capacity(gathered.len());
    let mut queries = Vec::with_capacity(gathered.len());
    for query in &gathered {
        let mut hits = Vec::new();
        hits_into(&mut hits, query, 0, &columns, layout)?;
        super::order_hits(name, &query.qid, &mut hits, rank_from)?;
        firsts.push(query.groups.first[0].unwrap_or(0));
        queries.push(Query { qid: query.qid.clone(), hits });
    }
    let short =
        std::path::Path::new(name).file_name().map_or_else(|| name.clone(), |n| n.to_string_lossy().into_owned());
    Ok((Run { name: short, collection: None, queries, source: Some(name.clone()) }, firsts))
}

#[cfg(test)]
#[path = "fuse_rows_tests.rs"]
mod tests;
