//! Run files (TREC 6-column and MT-RAG retrieval JSONL, optionally gzipped) and qrels, by step of the
//! flow: [`read`] (files, tables and rows in), [`fuse`] (the stream, one query's fusion, the row
//! route), [`write`] (the line formats out); training on runs is `crate::train`, above both runs and
//! `crate::eval`. This module holds the types they share.

pub mod fuse;
pub mod read;
pub mod write;

use std::collections::HashMap;

use serde_json::value::RawValue;

use crate::arrow::export::{ExportBatch, ExportColumn, TextColumn};
use crate::error::FusionError;
pub use read::{order_hits, ranked, read_run, trec_eval_order, RankFrom, RunReader};

/// Fields of an MT-RAG context other than `document_id` and `score`, as raw JSON in file order,
/// so that `text`, `title`, `source` and anything else pass through fusion byte for byte.
pub type Extra = Vec<(Box<str>, Box<RawValue>)>;

/// One retrieved document of one query.
#[derive(Debug, Clone)]
pub struct Hit {
    /// Inline up to 24 bytes: most docids cost no allocation (measured: malloc/free were ~10% of `fuse`).
    pub docid: compact_str::CompactString,
    pub score: f64,
    /// The TREC rank column; for MT-RAG, the 1-based position of the context.
    pub rank: i64,
    /// Line of the input file the hit came from (for error messages).
    pub line: u64,
    pub extra: Option<Box<Extra>>,
}

/// One query of a run: its hits in rank order once [`order_hits`] has run.
#[derive(Debug, Clone)]
pub struct Query {
    pub qid: String,
    pub hits: Vec<Hit>,
}

/// A whole run in memory (the Python API and `eval`/`tune`; `fuse` streams instead).
#[derive(Debug, Clone, Default)]
pub struct Run {
    pub name: String,
    pub collection: Option<String>,
    pub queries: Vec<Query>,
    /// What the `line` of every hit counts in, for errors: the file read, `<columns>` (rows), or
    /// `None` when hits come from several files (a fused run).
    pub source: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Trec,
    Mtrag,
}

impl Run {
    /// An error about a value of `hit` (or of its query), at the hit's line where the run has one source.
    fn value_error(&self, hit: Option<&Hit>, message: String) -> FusionError {
        match (&self.source, hit) {
            (Some(source), Some(hit)) => FusionError::input(source, hit.line, message),
            _ => FusionError::invalid(message),
        }
    }
}

/// The source of a run built from columns: its lines are rows.
const COLUMNS: &str = "<columns>";

impl Run {
    /// The run as Python shows it: its name and how many queries it holds.
    #[must_use]
    pub fn describe(&self) -> String {
        format!("Run(name={:?}, queries={})", self.name, self.queries.len())
    }

    /// The queries of `qids` only, in this run's order: a fold of a cross-validation.
    #[must_use]
    pub fn subset(&self, qids: &[String]) -> Self {
        let keep: std::collections::HashSet<&str> = qids.iter().map(String::as_str).collect();
        let queries = self.queries.iter().filter(|q| keep.contains(q.qid.as_str())).cloned().collect();
        Self { name: self.name.clone(), collection: self.collection.clone(), queries, source: self.source.clone() }
    }
}

impl Run {
    /// `(qid, docid, rank, score)` columns, one row per hit, queries in order, hits in rank order
    /// (the rank counts from 1 whatever the file said).
    #[must_use]
    pub fn columns(&self) -> (Vec<String>, Vec<String>, Vec<i64>, Vec<f64>) {
        let rows: usize = self.queries.iter().map(|q| q.hits.len()).sum();
        let (mut qids, mut docids, mut ranks, mut scores) =
            (Vec::with_capacity(rows), Vec::with_capacity(rows), Vec::with_capacity(rows), Vec::with_capacity(rows));
        for query in &self.queries {
            for (i, hit) in query.hits.iter().enumerate() {
                qids.push(query.qid.clone());
                docids.push(hit.docid.to_string());
                ranks.push(i64::try_from(i).unwrap_or(i64::MAX) + 1);
                scores.push(hit.score);
            }
        }
        (qids, docids, ranks, scores)
    }

    /// The columns of [`Run::columns`] as an Arrow record batch: qid and docid (utf8; large_utf8
    /// for a column past 2 GiB of text), rank (int64) and score (float64).
    #[must_use]
    pub fn batch(&self) -> ExportBatch {
        let rows = self.queries.iter().map(|q| q.hits.len()).sum();
        let (mut qids, mut docids) = (TextColumn::default(), TextColumn::default());
        qids.reserve(rows, self.queries.iter().map(|q| q.qid.len() * q.hits.len()).sum());
        docids.reserve(rows, self.queries.iter().flat_map(|q| &q.hits).map(|h| h.docid.len()).sum());
        let (mut ranks, mut scores) = (Vec::with_capacity(rows), Vec::with_capacity(rows));
        for query in &self.queries {
            for (rank, hit) in (1..).zip(&query.hits) {
                qids.push(&query.qid);
                docids.push(&hit.docid);
                ranks.push(rank);
                scores.push(hit.score);
            }
        }
        ExportBatch::new(vec![
            ("qid", ExportColumn::Text(qids)),
            ("docid", ExportColumn::Text(docids)),
            ("rank", ExportColumn::Int64(ranks)),
            ("score", ExportColumn::Float64(scores)),
        ])
    }
}

impl Run {
    /// Builds a run from aligned columns (a data frame): rows of one query need not be adjacent.
    /// Rows are numbered from 1 in error messages, as `<columns>:row`.
    pub fn from_columns(
        name: &str,
        qids: &[String],
        docids: &[String],
        scores: &[f64],
        rank_from: RankFrom,
    ) -> Result<Self, FusionError> {
        if qids.len() != docids.len() || qids.len() != scores.len() {
            return Err(FusionError::invalid(format!(
                "qid, docid and score columns must have equal lengths (got {}, {}, {})",
                qids.len(),
                docids.len(),
                scores.len()
            )));
        }
        let mut index: HashMap<&str, usize> = HashMap::new();
        let mut queries: Vec<Query> = Vec::new();
        for (row, ((qid, docid), &score)) in qids.iter().zip(docids).zip(scores).enumerate() {
            let at_row = |message: String| FusionError::input(COLUMNS, row as u64 + 1, message);
            if !score.is_finite() {
                return Err(at_row(format!("score {score} is not finite")));
            }
            for (what, id) in [("query id", qid), ("document id", docid)] {
                if id.is_empty() {
                    return Err(at_row(format!("{what} is empty; ids are non-empty strings")));
                }
            }
            let at = *index.entry(qid).or_insert_with(|| {
                queries.push(Query { qid: qid.clone(), hits: Vec::new() });
                queries.len() - 1
            });
            let rank = i64::try_from(queries[at].hits.len()).unwrap_or(i64::MAX) + 1;
            queries[at].hits.push(Hit { docid: docid.as_str().into(), score, rank, line: row as u64 + 1, extra: None });
        }
        for query in &mut queries {
            order_hits(COLUMNS, &query.qid, &mut query.hits, rank_from)?;
        }
        Ok(Self { name: name.to_owned(), collection: None, queries, source: Some(COLUMNS.into()) })
    }

    /// Writes the run (as `crate::output` describes), hits in their current order with their own scores.
    pub fn write(
        &self,
        path: &str,
        format: write::OutFormat,
        tag: &str,
        collection: Option<&str>,
    ) -> Result<(), FusionError> {
        write::check_tag(format, tag)?;
        let lines = match format {
            write::OutFormat::Trec => self.queries.iter().map(|q| q.hits.len()).sum(),
            write::OutFormat::Mtrag => self.queries.len(),
        };
        if lines == 0 {
            return Err(write::nothing_written(format, self.queries.len() as u64));
        }
        let first = self.queries.iter().find(|q| !q.hits.is_empty());
        if let Some(message) = first.and_then(|q| write::first_trec_line_problem(format, &q.qid)) {
            return Err(self.value_error(first.and_then(|q| q.hits.first()), message));
        }
        let mut out = crate::output::OutputFile::create(path, &[])?;
        let collection = collection.or(self.collection.as_deref());
        for query in &self.queries {
            crate::interrupt::checkpoint()?;
            let hits: Vec<write::OutHit<'_>> = query
                .hits
                .iter()
                .map(|h| write::OutHit { docid: &h.docid, score: h.score, extra: h.extra.as_deref() })
                .collect();
            write::write_query(out.writer(), format, &query.qid, &hits, tag, collection).map_err(|e| match e {
                write::WriteError::Io(e) => out.io_error(&e),
                write::WriteError::Value { hit, message } => {
                    self.value_error(query.hits.get(hit.unwrap_or(0)), message)
                }
            })?;
        }
        out.commit()
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::read::table::{runs_from_table, TableSpec};
    use super::{RankFrom, Run};

    #[test]
    fn a_runs_batch_reads_back_as_its_columns() {
        let (qids, docids) = (["q2", "q1", "q2", "q1"].map(String::from), ["d1", "d2", "d3", "d1"].map(String::from));
        let run = Run::from_columns("run", &qids, &docids, &[0.5, 2.0, 1.5, 2.0], RankFrom::Score).unwrap();
        let batch = Arc::new(run.batch());
        assert_eq!(batch.rows(), 4);
        let spec = TableSpec { name: "batch", run_column: None, runs: &[], rank_from: RankFrom::Rank, first_row: 0 };
        let read = runs_from_table(batch.source(), &spec).unwrap();
        assert_eq!(read.len(), 1);
        assert_eq!(read[0].columns(), run.columns());
    }
}
