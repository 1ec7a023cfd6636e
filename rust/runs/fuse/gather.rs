//! Rows of runs ([`crate::runs::read::rows`]) brought together by query id, in one pass: where each
//! query's rows are in each run and its groups there, and its hits taken from the rows on demand.

use std::collections::HashMap;

use super::order::{Layout, QueryGroups};
use crate::arrow::column::{Column, Values};
use crate::arrow::{Batch, Batches, TableSource};
use crate::error::FusionError;
use crate::runs::read::rows::ROW_COLUMNS;
use crate::runs::{order_hits, Hit, Query, RankFrom, Run};

/// Rows `start..end` of batch `batch` of piece `piece`: consecutive rows of one group.
#[derive(Clone, Copy)]
pub(super) struct Span {
    piece: u32,
    batch: u32,
    start: u32,
    end: u32,
}

/// One query of the rows: where its rows are in each run, and its groups.
pub(super) struct Gathered {
    pub(super) qid: String,
    spans: Vec<Vec<Span>>,
    pub(super) groups: QueryGroups,
}

/// The columns of a row batch, checked.
pub(super) struct RowColumns<'a> {
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

/// What the rows of a fusion of rows are, as messages name them.
pub const ROW_BATCHES: &str = "Arrow batches (one per block)";

/// The row batches of every piece (piece i holds rows of block i of the layout), taken over.
pub(super) fn collect(pieces: Vec<TableSource>, layout: &Layout) -> Result<Vec<Batches>, FusionError> {
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
pub(super) fn columns<'a>(pieces: &'a [Batches]) -> Result<Vec<Vec<RowColumns<'a>>>, FusionError> {
    let of_piece = |(i, piece): (usize, &'a Batches)| {
        piece.iter().map(|batch| RowColumns::of(&batch, &format!("rows[{i}]"))).collect::<Result<Vec<_>, _>>()
    };
    pieces.iter().enumerate().map(of_piece).collect()
}

pub(super) fn bad_row(piece: usize, row: usize, message: &str) -> FusionError {
    FusionError::invalid(format!("rows[{piece}] row {}: {message}", row + 1))
}

/// The queries of the rows in order of first appearance, with where their rows are: one pass over
/// the query ids and groups (a hit list per query and run would take as much memory as the rows
/// again, and growing it had the kernel clear fresh pages for most of the time).
pub(super) fn gather(columns: &[Vec<RowColumns<'_>>], layout: &Layout) -> Result<Vec<Gathered>, FusionError> {
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
pub(super) fn hits_into(
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
        order_hits(name, &query.qid, &mut hits, rank_from)?;
        firsts.push(query.groups.first[0].unwrap_or(0));
        queries.push(Query { qid: query.qid.clone(), hits });
    }
    let short =
        std::path::Path::new(name).file_name().map_or_else(|| name.clone(), |n| n.to_string_lossy().into_owned());
    Ok((Run { name: short, collection: None, queries, source: Some(name.clone()) }, firsts))
}
