//! The inputs of streaming fusion: run files, read as they stream, and runs already in memory (read
//! from Arrow tables, e.g. Parquet files), replayed in their row order. Both give the fusion loop the
//! same groups (consecutive rows of one query), so a table fuses exactly as the same rows in a file.

use std::sync::atomic::AtomicU64;
use std::sync::Arc;

use super::RunReader;
use crate::error::FusionError;
use crate::runs::{Hit, Run};

/// One input of [`crate::runs::fuse::stream::fuse_inputs`].
#[derive(Debug, Clone)]
pub enum RunInput {
    File(String),
    /// A run read from a table; its hits' `line` is their row, which gives the replay order.
    Table(Arc<Run>),
}

impl RunInput {
    /// The input in errors: the file's path, or the table's source (`runs.parquet`).
    #[must_use]
    pub fn name(&self) -> &str {
        match self {
            Self::File(path) => path,
            Self::Table(run) => run.source.as_deref().unwrap_or(&run.name),
        }
    }
}

/// What the inputs of a streaming fusion are, as messages name them.
pub const INPUTS: &str = "paths (str) or Runs";

impl RunInput {
    /// `inputs[at]` is neither a path nor a run in memory (`got`: its type).
    #[must_use]
    pub fn refused(at: usize, got: &str) -> FusionError {
        FusionError::wrong_type(format!("inputs[{at}] must be a path (str or os.PathLike) or a Run (got {got})"))
    }
}

/// Reads the groups of one input.
pub enum GroupReader {
    File(RunReader),
    Table(TableGroups),
}

/// The rows of an in-memory run in row order: (query index, hit index) pairs.
pub struct TableGroups {
    run: Arc<Run>,
    order: Vec<(u32, u32)>,
    next: usize,
    counted: Arc<AtomicU64>,
}

impl GroupReader {
    pub fn open(input: &RunInput) -> Result<Self, FusionError> {
        match input {
            RunInput::File(path) => RunReader::open(path).map(Self::File),
            RunInput::Table(run) => {
                let too_many = || FusionError::invalid(format!("{}: more than 2^32 queries or hits", input.name()));
                let mut rows: Vec<(u64, i64, u32, u32)> = Vec::new();
                for (q, query) in run.queries.iter().enumerate() {
                    let q = u32::try_from(q).map_err(|_| too_many())?;
                    for (h, hit) in query.hits.iter().enumerate() {
                        rows.push((hit.line, hit.rank, q, u32::try_from(h).map_err(|_| too_many())?));
                    }
                }
                // By line, then rank: the contexts of one MT-RAG record share its line, and their
                // rank is their position in it.
                rows.sort_unstable();
                let order = rows.into_iter().map(|(_, _, q, h)| (q, h)).collect();
                Ok(Self::Table(TableGroups { run: Arc::clone(run), order, next: 0, counted: Arc::default() }))
            }
        }
    }

    /// The next group of consecutive rows (lines) of one query, or `None` at the end.
    pub fn next_group(&mut self) -> Result<Option<(String, Vec<Hit>)>, FusionError> {
        match self {
            Self::File(reader) => reader.next_group(),
            Self::Table(table) => {
                let Some(&(query, _)) = table.order.get(table.next) else { return Ok(None) };
                let run = &table.run;
                let end = table.order[table.next..]
                    .iter()
                    .position(|&(q, _)| q != query)
                    .map_or(table.order.len(), |n| table.next + n);
                let hits = &run.queries[query as usize].hits;
                let group = table.order[table.next..end].iter().map(|&(_, h)| hits[h as usize].clone()).collect();
                table.next = end;
                Ok(Some((run.queries[query as usize].qid.clone(), group)))
            }
        }
    }

    /// Takes back an emptied hit list (files reuse them; see [`RunReader::recycle`]).
    pub fn recycle(&mut self, hits: Vec<Hit>) {
        if let Self::File(reader) = self {
            reader.recycle(hits);
        }
    }

    /// Lines (rows) read so far.
    #[must_use]
    pub fn lines(&self) -> u64 {
        match self {
            Self::File(reader) => reader.source.line,
            Self::Table(table) => table.next as u64,
        }
    }

    /// The counter of bytes read, for progress (a table in memory counts none).
    #[must_use]
    pub fn consumed(&self) -> Arc<AtomicU64> {
        match self {
            Self::File(reader) => Arc::clone(&reader.source.consumed),
            Self::Table(table) => Arc::clone(&table.counted),
        }
    }

    /// The MT-RAG `Collection` of the input, if it has one.
    #[must_use]
    pub fn collection(&self) -> Option<String> {
        match self {
            Self::File(reader) => reader.collection.clone(),
            Self::Table(table) => table.run.collection.clone(),
        }
    }
}
